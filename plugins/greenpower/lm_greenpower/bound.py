"""A proof, from the tasks and the envelope alone, that no plan places every task.

A task of length ``p`` and power ``phi`` runs on a machine that is on, so it can start only at
an interval ``x`` where the envelope holds at least ``p_stat + phi`` all through ``[x, x + p)``
(its *starts*, counted on the empty platform: LPP's possible places). Whichever of them a plan
picks, the task runs through ``[last start, first start + p)``, its *compulsory part* (empty
when its starts span ``p`` intervals or more). Where compulsory parts meet, a plan that places
all those tasks runs them together, on at least ``ceil(n / cores)`` machines that are on:
it draws at least ``p_stat x ceil(n / cores) + sum(phi)`` there. If that is above the envelope
at some interval, no plan places all those tasks, whatever its order, machines or boots (the
bound leaves boots out, so it only errs towards finding nothing).

This is the timetable bound of cumulative scheduling. :func:`compulsory_overload` finds the
first interval where it holds. :func:`incompatible_pair` looks at pairs instead: two tasks
that run at the same time draw at least ``p_stat + phi_a + phi_b`` (on one machine of two
cores or more); if every pair of their starts overlaps somewhere the envelope has less,
no plan places both, though their compulsory parts may never meet.

Kassab et al.'s NM counts a task left out by one plan and placed by another whole (section
5.2, as ``lease_manager.experiments.relative`` reads it): when the tasks some plan placed
cannot all be placed (either bound), every plan leaves one of them out, and every planner,
the GA too, has NM above 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np


@attrs.frozen
class Overload:
    """At ``interval``, the compulsory parts of ``tasks`` (indices into the lists given) need
    ``need`` W; the envelope has ``cap`` W."""

    interval: int
    tasks: tuple[int, ...]
    need: float
    cap: float


def task_starts(length: int, need: float, cap: np.ndarray) -> np.ndarray:
    """The intervals ``x`` with ``cap[k] >= need`` for every ``k`` in ``[x, x + length)``."""
    if length > len(cap):
        return np.zeros(0, dtype=np.int64)
    bad = np.concatenate([[0], np.cumsum(cap < need)])
    return np.flatnonzero(bad[length:] == bad[:len(bad) - length])


def _range_min(cap: np.ndarray) -> list[np.ndarray]:
    """Sparse table: ``table[k][x]`` is the least of ``cap[x:x + 2**k]``."""
    table = [cap.astype(float)]
    k = 1
    while 2 ** k <= len(cap):
        prev = table[-1]
        half = 2 ** (k - 1)
        table.append(np.minimum(prev[:len(prev) - half], prev[half:]))
        k += 1
    return table


def _least(table: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The least of ``cap[lo:hi]`` for each pair (``hi > lo``)."""
    k = np.floor(np.log2(hi - lo)).astype(np.int64)
    out = np.empty(len(lo))
    for level in np.unique(k).tolist():
        sel = k == level
        row = table[level]
        out[sel] = np.minimum(row[lo[sel]], row[hi[sel] - 2 ** level])
    return out


def incompatible_pair(lengths: Sequence[int], watts: Sequence[float], cap: np.ndarray,
                      p_stat: float, cores: int, max_starts: int = 1000
                      ) -> tuple[int, int] | None:
    """Two tasks (indices) that no plan places both, or None if no pair of the tasks with at
    most ``max_starts`` starts is one: every start of the one and every start of the other
    overlap at an interval where the envelope is below what both draw together (``p_stat``
    once with ``cores`` >= 2, twice with one core, plus their powers). Boots are left out,
    as in :func:`compulsory_overload`."""
    starts = [task_starts(int(length), p_stat + float(phi), cap)
              for length, phi in zip(lengths, watts)]
    hard = [i for i, xs in enumerate(starts) if 0 < len(xs) <= max_starts]
    table = _range_min(cap)
    machines = 1 if cores >= 2 else 2
    for n, a in enumerate(hard):
        for b in hard[n + 1:]:
            xa, xb = starts[a], starts[b]
            pa, pb = int(lengths[a]), int(lengths[b])
            if xa[0] + pa <= xb[-1] or xb[0] + pb <= xa[-1]:
                continue                                  # they can run one after the other
            lo = np.maximum.outer(xa, xb).ravel()
            hi = np.minimum.outer(xa + pa, xb + pb).ravel()
            need = machines * p_stat + float(watts[a]) + float(watts[b])
            if not (_least(table, lo, hi) >= need - 1e-9).any():
                return a, b
    return None


def compulsory_overload(lengths: Sequence[int], watts: Sequence[float], cap: np.ndarray,
                        p_stat: float, cores: int) -> Overload | None:
    """The first interval at which the compulsory parts of the tasks (one core each,
    ``lengths`` in intervals, ``watts`` their own power) need more than ``cap`` (the envelope
    per interval), on machines of ``cores`` cores drawing ``p_stat`` when on; None if there is
    none. A task with no start at all is left out (no plan places it)."""
    n = len(cap)
    load = np.zeros(n)
    count = np.zeros(n, dtype=np.int64)
    parts: list[tuple[int, int, int]] = []
    for i, (length, phi) in enumerate(zip(lengths, watts)):
        xs = task_starts(int(length), p_stat + float(phi), cap)
        if not len(xs):
            continue
        lo, hi = int(xs[-1]), int(xs[0]) + int(length)
        if lo < hi:
            load[lo:hi] += float(phi)
            count[lo:hi] += 1
            parts.append((i, lo, hi))
    need = load + p_stat * np.ceil(count / cores)
    over = np.flatnonzero(need > cap + 1e-9)
    if not len(over):
        return None
    t = int(over[0])
    return Overload(t, tuple(i for i, lo, hi in parts if lo <= t < hi), float(need[t]),
                    float(cap[t]))
