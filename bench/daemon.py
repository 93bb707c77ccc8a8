"""How fast the daemon answers: submission latency and throughput through the HTTP API.

Starts a daemon (``simulated`` backend, 64 nodes) in this process, submits N best-effort leases
one request at a time, then lists them, and prints the figures for both SQLite sync settings.
Then, at ``--concurrency`` clients (8), for both sync settings, the submissions' p50 and p99
with kept-alive connections and with a new connection a request, sent from a process of their
own: an answer written in two pieces waited for the client's delayed acknowledgement on a kept-
alive connection (p99 97 ms against 50; the target is p99 under 20 ms both ways). Beside them,
the daemon's CPU time per request, how many times a request made the daemon's threads wait
(voluntary context switches: hand-offs between threads and blocking calls) and the load
average: on a machine busy with other work the latency is mostly waiting for a core, which the
CPU time and the waits tell apart. ``--profile`` shows where the daemon's threads spend their
CPU; ``--stages`` how long each stage of the engine thread's steps takes (wall time: waits
included).
Usage: ``python bench/daemon.py [-n 500] [--concurrency 8] [--profile | --stages]``.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import http.client
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lease_manager.daemon.client import Client  # noqa: E402
from lease_manager.daemon.service import Daemon  # noqa: E402

from daemon_support import write_config  # noqa: E402


def measure(n: int, sync: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), resources="64 CPU:4 Memory:8192")
        daemon = Daemon(config, (f"daemon.sync={sync}",))
        ready = threading.Event()
        thread = threading.Thread(target=daemon.serve_forever,
                                  kwargs={"ready": lambda d: ready.set(),
                                          "install_signals": False})
        thread.start()
        ready.wait(20)
        client = Client(daemon.url, daemon.token)
        latencies = []
        t0 = time.perf_counter()
        for i in range(n):
            t = time.perf_counter()
            client.submit({"duration": 3600 + i, "nodes": 1 + i % 8})
            latencies.append(time.perf_counter() - t)
        total = time.perf_counter() - t0
        t = time.perf_counter()
        listed = client.leases()
        list_time = time.perf_counter() - t
        daemon.stop()
        thread.join()
        assert len(listed) == n
        latencies.sort()
        return {"median_ms": 1000 * statistics.median(latencies),
                "p95_ms": 1000 * latencies[int(0.95 * (n - 1))],
                "per_second": n / total, "list_ms": 1000 * list_time}


def _start(config: Path, *overrides: str) -> tuple[Daemon, threading.Thread]:
    daemon = Daemon(config, overrides)
    ready = threading.Event()
    thread = threading.Thread(target=daemon.serve_forever,
                              kwargs={"ready": lambda d: ready.set(), "install_signals": False})
    thread.start()
    ready.wait(20)
    return daemon, thread


def load(host: str, port: int, token: str, n: int, clients: int,
         keep_alive: bool) -> dict[str, float]:
    """``clients`` threads submitting ``n`` leases in all; their latencies' p50 and p99."""
    body = json.dumps({"duration": 3600, "nodes": 1}).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    latencies: list[float] = []
    lock = threading.Lock()

    def client(count: int) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=30)
        mine = []
        for _ in range(count):
            if not keep_alive:
                conn = http.client.HTTPConnection(host, port, timeout=30)
            t = time.perf_counter()
            conn.request("POST", "/v1/leases", body, headers)
            answer = conn.getresponse()
            answer.read()
            mine.append(time.perf_counter() - t)
            assert answer.status == 201, answer.status
            if not keep_alive:
                conn.close()
        conn.close()
        with lock:
            latencies.extend(mine)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n // clients,)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = time.perf_counter() - t0
    latencies.sort()
    return {"p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
            "per_second": len(latencies) / total, "requests": len(latencies)}


def concurrent(n: int, clients: int, keep_alive: bool, sync: str = "normal"
               ) -> dict[str, float]:
    """:func:`load` against a daemon of this process, from a process of its own (clients in
    this one would take the daemon's interpreter lock, and be measured with it); adds the
    daemon's CPU time per request and the load average."""
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), resources="64 CPU:4 Memory:8192")
        daemon, thread = _start(config, f"daemon.sync={sync}")
        host, port = daemon.server.server_address[:2]
        before = resource.getrusage(resource.RUSAGE_SELF)
        done = subprocess.run(
            # (the token in a word of its own: one that begins with "-" read as an option)
        [sys.executable, __file__, "--load", host, str(port), f"token:{daemon.token}", str(n),
             str(clients), "keep" if keep_alive else "new"],
            capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_SELF)
        loadavg = os.getloadavg()[0]
        daemon.stop()
        thread.join()
    result = json.loads(done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    switches = (after.ru_nvcsw - before.ru_nvcsw) / result["requests"]
    return {**result, "cpu_ms": 1000 * cpu / result["requests"], "switches": switches,
            "loadavg": loadavg}


def profile_threads() -> list[cProfile.Profile]:
    """From now on, every thread started runs under a profile of its own that counts the
    thread's CPU time (not its waits); the profiles are returned to be merged."""
    profiles: list[cProfile.Profile] = []
    plain_run = threading.Thread.run

    def run(thread: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)
        profiles.append(profile)
        profile.enable()
        try:
            plain_run(thread)
        finally:
            profile.disable()

    threading.Thread.run = run  # type: ignore[method-assign]
    return profiles


def stage_timers() -> dict[str, list[float]]:
    """From now on, the wall time of each stage of the daemon's engine thread is kept, by
    stage: a whole step, an API call's wait for the engine and its run there, a scheduling
    cycle, a commit, the backend's start of a lease's work."""
    from lease_manager.daemon.store import Store
    from lease_manager.enactment.simulated import SimulatedBackend
    from lease_manager.kernel.clock import RealClock
    from lease_manager.kernel.engine import Engine
    from lease_manager.kernel.scheduler.queue import Backfiller

    times: dict[str, list[float]] = collections.defaultdict(list)

    def timed(name: str, fn: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[name].append(time.perf_counter() - t)
        return run

    plain_post = Engine.post

    def post(engine: Engine, fn: Any) -> None:
        name = "API call" if "Daemon.call" in fn.__qualname__ else "other posted call"
        posted = time.perf_counter()

        def run(now: float) -> None:
            times[f"{name}: wait for the engine"].append(time.perf_counter() - posted)
            timed(f"{name}: run", fn)(now)
        plain_post(engine, run)

    plain_wait = RealClock.wait_until
    step_start: list[float] = []

    def wait_until(clock: RealClock, t: float) -> float:
        if step_start:
            times["engine step"].append(time.perf_counter() - step_start.pop())
        woke = plain_wait(clock, t)
        step_start.append(time.perf_counter())
        return woke

    Engine.post = post  # type: ignore[method-assign]
    RealClock.wait_until = wait_until  # type: ignore[method-assign]
    # (the scheduler's cycle is its backfiller's, bound when the scheduler is built)
    Backfiller.cycle = timed("scheduling cycle", Backfiller.cycle)  # type: ignore
    Store.commit = timed("commit", Store.commit)  # type: ignore[method-assign]
    SimulatedBackend.start = timed("backend start", SimulatedBackend.start)  # type: ignore
    return times


def print_stages(times: dict[str, list[float]]) -> None:
    print(f"{'stage':36} {'count':>6} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'total s':>7}")
    for name, values in sorted(times.items()):
        values.sort()
        print(f"{name:36} {len(values):6} {1000 * statistics.median(values):7.2f} "
              f"{1000 * values[int(0.99 * (len(values) - 1))]:7.2f} {1000 * values[-1]:7.2f} "
              f"{sum(values):7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=500, help="leases to submit (default 500)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="clients at once for the latency figures (default 8)")
    parser.add_argument("--load", nargs=6, metavar=("HOST", "PORT", "TOKEN", "N", "CLIENTS",
                                                    "keep|new"),
                        help=argparse.SUPPRESS)    # the client process of the latency figures
    parser.add_argument("--profile", action="store_true",
                        help="only the concurrent figures, and where the daemon's threads "
                             "spend their CPU under them (cProfile, thread CPU time)")
    parser.add_argument("--stages", action="store_true",
                        help="only the concurrent figures, and the wall time of each stage "
                             "of the engine thread's steps under each of them")
    args = parser.parse_args()
    if args.load:
        host, port, token, n, clients, way = args.load
        token = token.removeprefix("token:")
        print(json.dumps(load(host, int(port), token, int(n), int(clients), way == "keep")))
        return
    profiles = profile_threads() if args.profile else []
    for sync in () if args.profile or args.stages else ("full", "normal"):
        r = measure(args.n, sync)
        print(f"sync={sync:6}  submit: median {r['median_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms,"
              f" {r['per_second']:.0f} leases/s; list {args.n} leases: {r['list_ms']:.0f} ms")
    times = stage_timers() if args.stages else None
    for sync in ("full", "normal"):
        for keep_alive in (True, False):
            if times is not None:
                times.clear()
            r = concurrent(args.n, args.concurrency, keep_alive, sync)
            way = "kept-alive connections" if keep_alive else "a connection a request"
            verdict = "met" if r["p99_ms"] < 20 else "missed"
            print(f"sync={sync:6}  {args.concurrency} clients, {way}: p50 {r['p50_ms']:.1f} "
                  f"ms, p99 {r['p99_ms']:.1f} ms ({verdict}: p99 under 20 ms), "
                  f"{r['per_second']:.0f} leases/s; the daemon's CPU {r['cpu_ms']:.2f} ms and "
                  f"{r['switches']:.1f} waits (voluntary context switches) a request; "
                  f"load average {r['loadavg']:.1f} on {os.cpu_count()} cores")
            if times is not None:
                print_stages(times)
    if profiles:
        stats = pstats.Stats(profiles[0])
        for profile in profiles[1:]:
            stats.add(profile)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
