"""How fast the daemon answers: submission latency and throughput through the HTTP API.

Starts a daemon (``simulated`` backend, 64 nodes) in this process, submits N best-effort
leases one request at a time, then lists them, and prints the figures for both SQLite sync
settings. Then, at ``--concurrency`` clients (8), the submissions' p50 and p99 with kept-alive
connections and with a new connection a request: an answer written in two pieces waited for the
client's delayed acknowledgement on a kept-alive connection (p99 97 ms against 50; the target
is p99 under 20 ms both ways). Usage: ``python bench/daemon.py [-n 500] [--concurrency 8]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def concurrent(n: int, clients: int, keep_alive: bool) -> dict[str, float]:
    """``clients`` threads submitting ``n`` leases in all; their latencies' p50 and p99."""
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), resources="64 CPU:4 Memory:8192")
        daemon, thread = _start(config, "daemon.sync=normal")
        host, port = daemon.server.server_address[:2]
        body = json.dumps({"duration": 3600, "nodes": 1}).encode()
        headers = {"Authorization": f"Bearer {daemon.token}",
                   "Content-Type": "application/json"}
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
        daemon.stop()
        thread.join()
        latencies.sort()
        return {"p50_ms": 1000 * statistics.median(latencies),
                "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
                "per_second": len(latencies) / total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=500, help="leases to submit (default 500)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="clients at once for the latency figures (default 8)")
    args = parser.parse_args()
    for sync in ("full", "normal"):
        r = measure(args.n, sync)
        print(f"sync={sync:6}  submit: median {r['median_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms,"
              f" {r['per_second']:.0f} leases/s; list {args.n} leases: {r['list_ms']:.0f} ms")
    for keep_alive in (True, False):
        r = concurrent(args.n, args.concurrency, keep_alive)
        way = "kept-alive connections" if keep_alive else "a connection a request"
        verdict = "met" if r["p99_ms"] < 20 else "missed"
        print(f"{args.concurrency} clients, {way}: p50 {r['p50_ms']:.1f} ms, p99 "
              f"{r['p99_ms']:.1f} ms ({verdict}: p99 under 20 ms), {r['per_second']:.0f} "
              "leases/s")


if __name__ == "__main__":
    main()
