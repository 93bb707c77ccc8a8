"""Speedup profiles SP(n, v): an application's speed on ``n`` servers with ``v`` VMs, relative
to its run on one server (GreenPar's RT(1) / RT(n), with RT(1) the run with 2 VMs on one
dual-core server, so that profiles of different VM counts compare).

The paper only plots its measured NPB profiles (Fig. 4, 16 VMs on 1-16 servers). The shipped
table ``data/speedups.csv`` is **not** a measurement: it is computed by :func:`model` from a
few parameters per application, chosen to have the shapes the paper describes and the order
published NPB scaling on Gigabit Ethernet shows: EP close to linear (SP(8, 16) = 7.8, 16 VMs
on 8 servers), then LU (6.0), SP (5.5; BT is SP), MG (4.5), CG (3.5), FT (3.0) and IS (2.2),
communication-bound, which gains most from one VM per server (50% with 4 VMs; the paper
quotes up to 66%). The communication cost ``c`` of each was solved for that SP(8, 16); the
other parameters were set by hand.
``python -m lm_greenpar.speedups`` writes the table again from :data:`PARAMETERS`.

The model, per application with serial fraction ``s``, communication cost ``c`` (per
doubling of the VM count, as a share of the one-server run, paid for the part of the traffic
that leaves a server), contention ``p`` between VMs sharing a server and time-sharing
overhead ``o`` when VMs outnumber cores (2 per server)::

    T(n, v) = (s + (1 - s) / min(v, 2n)) x (1 + p [v/n >= 2]) x (1 + o [v/n > 2])
              + c x log2(v) x (1 - 1/n)
    SP(n, v) = T(1, 2) / T(n, v)
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Iterable
from pathlib import Path

#: (s, c, p, o) per application (see the module docstring)
PARAMETERS: dict[str, tuple[float, float, float, float]] = {
    "EP": (0.002, 0.0, 0.02, 0.05),
    "LU": (0.01, 0.004, 0.15, 0.10),
    "SP": (0.015, 0.0054, 0.20, 0.12),
    "BT": (0.015, 0.0054, 0.20, 0.12),
    "MG": (0.02, 0.0115, 0.25, 0.15),
    "CG": (0.03, 0.0226, 0.40, 0.20),
    "FT": (0.02, 0.033, 0.30, 0.15),
    "IS": (0.02, 0.0817, 0.90, 0.25),
}
#: VM counts the table covers (a request of N servers runs 2N or 4N VMs)
VM_COUNTS = (2, 4, 8, 16, 32, 64, 128)
#: at most this many VMs share a server
MAX_VMS_PER_SERVER = 4


def servers_for(v: int) -> list[int]:
    """The server counts a job of ``v`` VMs may run on: powers of 2 from v/4 (at least 1) to
    v, so that every server holds the same number of VMs, at most 4."""
    low = max(1, v // MAX_VMS_PER_SERVER)
    return [n for n in (2 ** k for k in range(0, 16)) if low <= n <= v]


def model(app: str, n: int, v: int) -> float:
    """SP(n, v) of application ``app`` from :data:`PARAMETERS`."""
    s, c, p, o = PARAMETERS[app]

    def runtime(n: int, v: int) -> float:
        k = v / n
        compute = (s + (1 - s) / min(v, 2 * n)) * (1 + p * (k >= 2)) * (1 + o * (k > 2))
        return compute + c * math.log2(v) * (1 - 1 / n)

    return runtime(1, 2) / runtime(n, v)


class SpeedupProfiles:
    """SP(n, v) per application, read from a ``app,vms,servers,speedup`` CSV file."""

    def __init__(self, table: dict[tuple[str, int, int], float]) -> None:
        self.table = table
        self.apps = sorted({app for app, _, _ in table})

    def sp(self, app: str, n: int, v: int) -> float:
        try:
            return self.table[app, v, n]
        except KeyError:
            raise KeyError(f"no speedup for {app} with {v} VMs on {n} servers") from None

    def options(self, app: str, v: int) -> list[tuple[int, float]]:
        """``(servers, speedup)`` for every server count a job of ``v`` VMs may have."""
        return [(n, self.table[app, v, n]) for n in servers_for(v) if (app, v, n) in self.table]

    @classmethod
    def read(cls, path: str | Path | None = None) -> SpeedupProfiles:
        """The profiles in ``path`` (default: the shipped table); errors name the line."""
        if path is None:
            from importlib import resources  # (its start-up cost is paid by GreenPar's runs)

            text = resources.files("lm_greenpar").joinpath("data/speedups.csv").read_text()
            where = "lm_greenpar/data/speedups.csv"
        else:
            where = str(path)
            try:
                text = Path(path).read_text()
            except OSError as exc:
                raise ValueError(f"{where}: cannot read: {exc.strerror or exc}") from None
        table: dict[tuple[str, int, int], float] = {}
        rows = csv.reader(text.splitlines())
        header = next(rows, None)
        if header != ["app", "vms", "servers", "speedup"]:
            raise ValueError(f"{where}:1: expected the header app,vms,servers,speedup")
        for number, row in enumerate(rows, start=2):
            if not row:
                continue
            try:
                app, v, n, sp = row[0].strip(), int(row[1]), int(row[2]), float(row[3])
            except (ValueError, IndexError):
                raise ValueError(f"{where}:{number}: expected app,vms,servers,speedup with "
                                 f"whole VM and server counts") from None
            if not (app and v >= 1 and n >= 1 and math.isfinite(sp) and 0 < sp <= 1e6):
                raise ValueError(f"{where}:{number}: speedup must be in (0, 1e6] and counts "
                                 f"at least 1")
            table[app, v, n] = sp
        if not table:
            raise ValueError(f"{where}: no rows")
        return cls(table)


def rows(apps: Iterable[str] = PARAMETERS) -> list[tuple[str, int, int, float]]:
    return [(app, v, n, round(model(app, n, v), 4)) for app in apps for v in VM_COUNTS
            for n in servers_for(v)]


def main(argv: list[str] | None = None) -> int:
    """Write the model's table to the file given (default: the package's data file)."""
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else Path(__file__).parent / "data" / "speedups.csv"
    with path.open("w", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["app", "vms", "servers", "speedup"])
        out.writerows(rows())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
