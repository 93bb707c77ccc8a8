"""Kassab et al.'s task orders (section 4.2), for the planners and the queue policies.

Each order is stable: tasks that compare equal keep the order they were given in (the
workload's). ``p`` is a task's length, ``phi`` its power.

- ``lpt``: largest processing time first (p descending); ``spt``: p ascending;
- ``lpn``: largest power need first (phi descending); ``lptpn``: p x phi descending;
- ``twoqs``: the LPTPN queue and the LPT queue in turn, each time the next task the other has
  not taken;
- ``lpp``: least possible places first: the number of start intervals x at which the empty
  platform could run the task, the envelope holding at least ``p_stat + phi`` over
  ``[x, x + p)`` (a task runs on a machine that is on; the paper's helper that counts them is
  missing from the authors' release, so this is our reading);
- ``random``: the order given (the workload's, drawn at random by the task generator).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    from lease_manager import PlanTask

T = TypeVar("T")

ORDERS = ("lpt", "spt", "lpn", "lptpn", "twoqs", "lpp", "random")


def by_key(items: Sequence[T], key: Callable[[T], float]) -> list[T]:
    """``items`` sorted by ``key`` ascending, ties in the given order."""
    return [items[i] for i in sorted(range(len(items)), key=lambda i: (key(items[i]), i))]


def two_queues(first: Sequence[T], second: Sequence[T]) -> list[T]:
    """TwoQs: the next item of ``first`` not taken yet, then the next of ``second``, in turn
    (items are compared by identity)."""
    taken: set[int] = set()
    out: list[T] = []
    queues = [list(first), list(second)]
    heads = [0, 0]
    turn = 0
    while len(out) < len(first):
        queue = queues[turn]
        while heads[turn] < len(queue) and id(queue[heads[turn]]) in taken:
            heads[turn] += 1
        if heads[turn] < len(queue):
            item = queue[heads[turn]]
            taken.add(id(item))
            out.append(item)
        turn = 1 - turn
    return out


def possible_places(lengths: np.ndarray, needs: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """For each task, the number of starts ``x`` with ``cap[k] >= need`` for every ``k`` in
    ``[x, x + length)`` (``cap``: the envelope per interval)."""
    out = np.zeros(len(lengths), dtype=np.int64)
    for i, (length, need) in enumerate(zip(lengths.tolist(), needs.tolist())):
        if length > len(cap):
            continue
        bad = np.concatenate([[0], np.cumsum(cap < need)])
        out[i] = int(np.count_nonzero(bad[length:] == bad[:len(bad) - length]))
    return out


def order_tasks(name: str, tasks: Sequence[PlanTask], cap: np.ndarray | None = None,
                p_stat: float = 0.0) -> list[PlanTask]:
    """``tasks`` in order ``name`` (``lpp`` needs the envelope per interval, ``cap``)."""
    if name == "random":
        return list(tasks)
    if name == "lpt":
        return by_key(tasks, lambda t: -t.length)
    if name == "spt":
        return by_key(tasks, lambda t: t.length)
    if name == "lpn":
        return by_key(tasks, lambda t: -t.watts)
    if name == "lptpn":
        return by_key(tasks, lambda t: -t.area)
    if name == "twoqs":
        return two_queues(order_tasks("lptpn", tasks), order_tasks("lpt", tasks))
    if name == "lpp":
        assert cap is not None, "lpp needs the envelope"
        places = possible_places(np.array([t.length for t in tasks], dtype=np.int64),
                                 np.array([p_stat + t.watts for t in tasks]), cap)
        rank = {id(t): float(n) for t, n in zip(tasks, places.tolist())}
        return by_key(tasks, lambda t: rank[id(t)])
    raise ValueError(f"unknown order {name!r} (orders: {', '.join(ORDERS)})")
