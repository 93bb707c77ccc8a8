"""The annotator ``thesis-workload``: synthetic workload characteristics for SWF leases, as in
the thesis' section 7.4.1 and Table 7.1.

For every lease, one uniform draw picks its HPC class; then, for that class, one draw picks the
CPU/Memory group, one decides IO, and one picks the network group; IO, Net-in and Net-out
amounts are drawn uniformly within ``[consolidation] io-range``, ``net-in-range`` and
``net-out-range``. CPU and Memory amounts are not drawn: they are what the lease's VMs hold
(see :mod:`.characteristics`).

Table 7.1 as used here (probabilities; a row's groups are drawn independently)::

    class (prob.)            CPU+Memory  CPU   Memory | IO  | Net-in+Net-out  Net-in  Net-out
    compute-intensive (1/2)  6/10        4/10  0      | 1/2 | 4/6             1/6     1/6
    data-intensive    (1/6)  3/10        0     7/10   | 1/2 | 4/6             1/6     1/6
    memory-intensive  (1/6)  0           1/2   1/2    | 1/2 | 4/6             1/6     1/6
    comm-intensive    (1/6)  0           0     0      | 1/2 | 1               0       0

When a group's probabilities sum to less than 1 the rest is "none of the group" (the
comm-intensive class stresses no CPU or Memory). The thesis' table has one more network column
(1/6 for the first three classes, 0 for comm-intensive) that names no outcome: the text lists
three network outcomes, whose probabilities already sum to 1, so it is not used (taken as a
typesetting artefact).

Every lease consumes exactly seven numbers of the stream ``thesis-workload`` (class, three
groups, three amounts), whatever it ends up using, so one lease's draws never depend on another
lease's attributes. Attributes already present are respected (from an LWF ``<extra>``):
``stress-on`` is kept as given (parsed), ``hpc-class`` replaces the class draw, and ``req-*`` /
``requirements`` amounts replace the drawn ones.

It writes ``lease.extra["stress-on"]`` (a frozenset), ``lease.extra["hpc-class"]`` and, for the
stressed ones among IO, Net-in and Net-out, ``lease.extra["req-IO"]`` etc. (amounts per VM).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lease_manager import Annotator
from lease_manager.characteristics import (
    HPC_CLASS,
    REQ_PREFIX,
    STRESS_ON,
    explicit_requirements,
    parse_stress_on,
)

if TYPE_CHECKING:
    from lease_manager import Lease, RunContext

STREAM = "thesis-workload"

#: HPC classes and their probabilities (Table 7.1, first column)
CLASSES: tuple[tuple[str, float], ...] = (
    ("compute-intensive", 1 / 2),
    ("data-intensive", 1 / 6),
    ("memory-intensive", 1 / 6),
    ("comm-intensive", 1 / 6),
)
#: per class: the CPU/Memory group's outcomes, P(IO), the network group's outcomes
TABLE_7_1: dict[str, tuple[tuple[tuple[frozenset[str], float], ...], float,
                           tuple[tuple[frozenset[str], float], ...]]] = {}
_CPU_MEM = (frozenset({"CPU", "Memory"}), frozenset({"CPU"}), frozenset({"Memory"}))
_NET = (frozenset({"Net-in", "Net-out"}), frozenset({"Net-in"}), frozenset({"Net-out"}))
for _cls, _cm, _io, _net in (
        ("compute-intensive", (6 / 10, 4 / 10, 0.0), 1 / 2, (4 / 6, 1 / 6, 1 / 6)),
        ("data-intensive", (3 / 10, 0.0, 7 / 10), 1 / 2, (4 / 6, 1 / 6, 1 / 6)),
        ("memory-intensive", (0.0, 1 / 2, 1 / 2), 1 / 2, (4 / 6, 1 / 6, 1 / 6)),
        ("comm-intensive", (0.0, 0.0, 0.0), 1 / 2, (1.0, 0.0, 0.0))):
    TABLE_7_1[_cls] = (tuple(zip(_CPU_MEM, _cm)), _io, tuple(zip(_NET, _net)))

_CLASS_ALIASES = {"compute": "compute-intensive", "data": "data-intensive",
                  "memory": "memory-intensive", "comm": "comm-intensive",
                  "communication": "comm-intensive", "communication-intensive": "comm-intensive"}
#: draws per lease: class, CPU/Memory group, IO, network group, IO, Net-in, Net-out amounts
DRAWS_PER_LEASE = 7


def hpc_class(text: str) -> str:
    """The canonical HPC class name (``"compute"`` -> ``"compute-intensive"``)."""
    low = str(text).strip().lower()
    low = _CLASS_ALIASES.get(low, low)
    if low not in TABLE_7_1:
        raise ValueError(f"unknown hpc-class {text!r} (known: {', '.join(TABLE_7_1)})")
    return low


def _pick(outcomes, u: float):
    """The outcome whose cumulative probability interval holds ``u`` (None past the last)."""
    acc = 0.0
    for outcome, p in outcomes:
        acc += p
        if u < acc:
            return outcome
    return None


def draw_characteristics(u: np.ndarray, cls: str | None = None) -> tuple[str, frozenset[str]]:
    """The class and stress-on set that Table 7.1 gives for uniform numbers ``u[0:4]``."""
    if cls is None:
        cls = _pick(CLASSES, float(u[0])) or CLASSES[-1][0]
    cpu_mem, p_io, net = TABLE_7_1[cls]
    stress: set[str] = set()
    stress |= _pick(cpu_mem, float(u[1])) or frozenset()
    if float(u[2]) < p_io:
        stress.add("IO")
    stress |= _pick(net, float(u[3])) or frozenset()
    return cls, frozenset(stress)


class ThesisWorkload(Annotator):
    """Synthetic HPC workload characteristics (thesis Table 7.1): stress-on sets and IO/Net
    requirements, reproducible from the run's seed; attributes already present are kept."""

    name = "thesis-workload"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        cfg = ctx.config
        self._ranges = [cfg.get("consolidation", opt)
                        for opt in ("io-range", "net-in-range", "net-out-range")]
        self._rng = ctx.rng(STREAM)

    def annotate(self, lease: Lease) -> None:
        u = self._rng.random(DRAWS_PER_LEASE)
        extra = lease.extra
        where = f"lease {lease.id} ({lease.origin or 'no origin'})"
        try:
            explicit = explicit_requirements(extra)
            if STRESS_ON in extra:
                stress = parse_stress_on(extra[STRESS_ON])
                cls = hpc_class(extra[HPC_CLASS]) if extra.get(HPC_CLASS) else None
            else:
                given = hpc_class(extra[HPC_CLASS]) if extra.get(HPC_CLASS) else None
                cls, stress = draw_characteristics(u, given)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        extra[STRESS_ON] = stress
        for k, name in enumerate(("IO", "Net-in", "Net-out")):
            if name in stress and name not in explicit:
                lo, hi = self._ranges[k]
                extra[REQ_PREFIX + name] = lo + (hi - lo) * float(u[4 + k])
        if cls is not None:
            extra[HPC_CLASS] = cls
