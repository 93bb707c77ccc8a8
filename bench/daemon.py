"""How fast the daemon answers: submission latency and throughput through the HTTP API.

Starts a daemon (``simulated`` backend, 64 nodes) in this process, submits N best-effort
leases one request at a time, then lists them, and prints the figures for both SQLite sync
settings. Usage: ``python bench/daemon.py [-n 500]``.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=500, help="leases to submit (default 500)")
    args = parser.parse_args()
    for sync in ("full", "normal"):
        r = measure(args.n, sync)
        print(f"sync={sync:6}  submit: median {r['median_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms,"
              f" {r['per_second']:.0f} leases/s; list {args.n} leases: {r['list_ms']:.0f} ms")


if __name__ == "__main__":
    main()
