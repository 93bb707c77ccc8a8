"""How fast a restarted daemon is back: the restore of N unfinished leases.

Starts a daemon (``simulated`` backend, 160 one-core nodes) in this process, fills every node
with one lease of an hour, submits N more one-VM leases of 10 minutes in lists of 1000 (with
aggressive backfilling they queue; with conservative backfilling each gets a reservation),
stops it, and restarts it on the same state folder. Prints the restore time (the issue's
target: 10,000 queued leases in under 10 s) and, as a reference measured in the same run, its
ratio to the time the same daemon took to read the N rows back from SQLite and rebuild the
leases. Usage: ``python bench/restore.py [-n 10000]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lease_manager.daemon.client import Client  # noqa: E402
from lease_manager.daemon.service import Daemon  # noqa: E402

from daemon_support import write_config  # noqa: E402


def serve(config: Path, backfilling: str) -> tuple[Daemon, threading.Thread, float]:
    """A daemon serving in a thread, and how long it took to be ready (the restore)."""
    daemon = Daemon(config, (f"scheduling.backfilling={backfilling}",))
    ready = threading.Event()
    thread = threading.Thread(target=daemon.serve_forever,
                              kwargs={"ready": lambda d: ready.set(), "install_signals": False})
    t0 = time.perf_counter()
    thread.start()
    if not ready.wait(600):
        raise SystemExit("the daemon did not come back in 600 s")
    return daemon, thread, time.perf_counter() - t0


def measure(n: int, backfilling: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), resources="160 CPU:1 Memory:1024")
        daemon, thread, _ = serve(config, backfilling)
        client = Client(daemon.url, daemon.token)
        client.submit({"duration": 3600, "nodes": 160})
        for first in range(0, n, 1000):
            client.submit([{"duration": 600} for _ in range(min(1000, n - first))])
        daemon.stop()
        thread.join()
        daemon, thread, restore = serve(config, backfilling)
        t0 = time.perf_counter()
        rows = list(daemon.store.unfinished())
        for row in rows:
            daemon._lease_of(row)
        rebuild = time.perf_counter() - t0
        states = [v["state"] for v in Client(daemon.url, daemon.token).leases()]
        daemon.stop()
        thread.join()
        assert len(states) == n + 1
        return {"restore_s": restore, "rebuild_s": rebuild,
                "queued": states.count("queued"), "scheduled": states.count("scheduled")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10000, help="leases to restore (default 10000)")
    args = parser.parse_args()
    for backfilling in ("aggressive", "conservative"):
        m = measure(args.n, backfilling)
        print(f"{backfilling:<13} {args.n:,} leases ({m['queued']:,} queued, "
              f"{m['scheduled']:,} with a reservation): restore {m['restore_s']:.2f} s "
              f"(target < 10 s), {m['restore_s'] / m['rebuild_s']:.1f}x reading and "
              f"rebuilding them ({m['rebuild_s']:.2f} s)")


if __name__ == "__main__":
    main()
