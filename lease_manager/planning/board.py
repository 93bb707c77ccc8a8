"""The planning board: Kassab et al.'s platform (section 3) on an integer time grid, and
``PlaceTask`` (their Algorithm 1) as its earliest fit under the envelope with machine states.

Time is cut into intervals of ``[planning] interval`` seconds. The envelope gives the power
``cap[x]`` available in interval ``x`` (the least the cap series holds in it). There are
``machines`` identical machines of ``cores`` cores, all off at time 0. A machine's states:

- **off**: it draws nothing above the site's off power (``off-watts``, the baseline);
- **switching on** for ``t_on`` intervals at ``p_on``, just before it is needed;
- **on**: ``p_stat`` plus the power of the tasks it runs (cores are usable only here);
- **switching off** for ``t_off`` intervals at ``p_off``, as soon as it has no task left.

A machine's on-time is a set of *periods* (from its first task's start to its last task's end).
Two periods are merged, the machine staying on between them, when it could not shut down and
boot again in time (the gap ``g`` is under ``t_off + t_on``), and also, with **look-ahead**, when
``g <= t_off + t_on`` (a boot would begin as its shutdown ends: stay on instead), and with
**look-back**, when ``g <= 2 t_on`` (a boot would begin within ``t_on`` of a shutdown: cancel
the shutdown). These are the rules of the core's ``switch-off-idle`` with ``idle-timeout = 0``
and ``[power] look-ahead`` / ``look-back`` (:mod:`lease_manager.policies.node_power`), so a
plan replayed by the core draws exactly the power planned here.

:meth:`PowerBoard.earliest` is PlaceTask: for a task of ``length`` intervals, ``cores`` cores
and ``watts`` W, the earliest start ``x >= x0`` where some machine that is on or switching off at
``x`` (its shutdown then cancelled) has the cores free over ``[x, x + length)`` and the envelope
has room for the task and for whatever the machine's states become (its period grows, a later
period may merge); otherwise where a machine that is off could boot for it (``p_on`` over
``[x - t_on, x)``, ``p_stat + watts`` over the task, ``p_off`` after). An on machine is preferred
to a boot one interval earlier (the authors' simulator waits one interval for an on machine
rather than boot another). Everything is checked against the whole plan, interval by
interval: a placement never puts the total power above the envelope.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs
import numpy as np

#: slack allowed in power comparisons (W), for sums of floating-point watts
EPS = 1e-6
OFF, BOOT, ON, DOWN = 0, 1, 2, 3


@attrs.frozen
class Platform:
    """The machines and their power states, on the grid (powers above ``off-watts``)."""

    machines: int
    cores: int
    p_stat: float
    p_on: float
    t_on: int
    p_off: float
    t_off: int
    look_ahead: bool = False
    look_back: bool = False

    def keeps_on(self, gap: int) -> bool:
        """Does a machine stay on over a gap of ``gap`` intervals between two periods?"""
        return (gap < self.t_off + self.t_on
                or (self.look_ahead and gap <= self.t_off + self.t_on)
                or (self.look_back and gap <= 2 * self.t_on))


@attrs.frozen
class PlanTask:
    """One lease to plan: ``length`` intervals on ``cores`` cores of one machine, drawing
    ``watts`` (its own dynamic power, all VMs). ``index`` is its place in the list given to
    the planner."""

    index: int
    lease_id: int
    length: int
    cores: int
    watts: float

    @property
    def area(self) -> float:
        """``length x watts``: the task's energy in interval-watts (Kassab's p x phi)."""
        return self.length * self.watts


@attrs.frozen
class Spot:
    """Where a task goes: start interval ``x`` on ``machine`` (-1: a machine not used yet)."""

    x: int
    machine: int


class PowerBoard:
    """A plan in the making (see the module docstring). :meth:`copy` is cheap; planners that
    try several plans (binary search, the genetic algorithm) start each from a fresh board."""

    def __init__(self, platform: Platform, cap: np.ndarray, horizon: int | None = None) -> None:
        self.platform = platform
        cap = np.asarray(cap, dtype=float)
        #: how many intervals a plan may use: nothing runs, boots or shuts down after it
        self.horizon = int(len(cap) if horizon is None else horizon)
        pad = self.horizon + 2 * (platform.t_on + platform.t_off) + 2
        self.cap = np.full(pad, -math.inf)
        n = min(len(cap), self.horizon)
        self.cap[:n] = cap[:n]
        if n < self.horizon:
            self.cap[n:self.horizon] = cap[-1] if len(cap) else -math.inf
        #: the power planned in each interval (above the baseline)
        self.used = np.zeros(pad)
        self._cores: dict[int, np.ndarray] = {}
        self._mode: dict[int, np.ndarray] = {}
        self._state: dict[int, np.ndarray] = {}
        self._periods: dict[int, list[tuple[int, int]]] = {}
        #: (task, spot) for every task placed, in the order placed
        self.placements: list[tuple[PlanTask, Spot]] = []

    # ----------------------------------------------------------------------- reading
    @property
    def length(self) -> int:
        return len(self.used)

    @property
    def makespan(self) -> int:
        """The end of the last task placed (intervals; 0 with none)."""
        return max((s.x + t.length for t, s in self.placements), default=0)

    @property
    def machines_used(self) -> list[int]:
        return sorted(self._periods)

    def periods(self, machine: int) -> list[tuple[int, int]]:
        """The machine's on periods ``[start, end)`` (boots before, shutdowns after them)."""
        return list(self._periods.get(machine, ()))

    def switch_ons(self) -> int:
        """How many boots the plan has."""
        return sum(len(p) for p in self._periods.values())

    def room(self) -> np.ndarray:
        """The envelope's room left in each interval."""
        return self.cap - self.used

    def copy(self) -> PowerBoard:
        other = PowerBoard.__new__(PowerBoard)
        other.platform, other.horizon, other.cap = self.platform, self.horizon, self.cap
        other.used = self.used.copy()
        other._cores = {k: v.copy() for k, v in self._cores.items()}
        other._mode = {k: v.copy() for k, v in self._mode.items()}
        other._state = {k: v.copy() for k, v in self._state.items()}
        other._periods = {k: list(v) for k, v in self._periods.items()}
        other.placements = list(self.placements)
        return other

    def fresh(self) -> PowerBoard:
        """An empty board on the same platform and envelope."""
        return PowerBoard(self.platform, self.cap[:self.horizon], self.horizon)

    # ---------------------------------------------------------------------- PlaceTask
    def earliest(self, task: PlanTask, x0: int = 0, before: int | None = None) -> Spot | None:
        """PlaceTask: the earliest spot for ``task`` starting at ``x0`` or later (and ending
        by ``before``), preferring machines that are on (see the module docstring); None if
        there is none within the horizon."""
        boot = self._first_off(task, x0, before)
        limit = None if boot is None else boot.x + 1
        running = self._first_on(task, self.machines_used, x0, before, limit)
        if running is not None and (boot is None or running.x <= boot.x + 1):
            return running
        return boot

    def place_earliest(self, task: PlanTask, x0: int = 0,
                       before: int | None = None) -> Spot | None:
        """Place ``task`` at :meth:`earliest`; the spot, or None (nothing placed)."""
        spot = self.earliest(task, x0, before)
        if spot is not None:
            self.place(task, spot)
        return spot

    def candidates(self, task: PlanTask, machine: int, x0: int = 0,
                   before: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Starts ``x >= x0`` (ending by ``before``) where ``task`` may fit on ``machine``
        (-1: a machine not used yet), with the least room it would leave over its run (for
        best fit), in start order. For a machine not used yet they are exact; on a used one
        they are the starts where its cores and the room over the task's run allow it, and
        :meth:`fits` tells whether the machine's state changes fit too."""
        stop = self._stop(task, before)
        if stop < x0:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        if machine < 0 or machine not in self._periods:
            return self._fresh_starts(task, x0, stop)
        return self._prefilter(task, machine, x0, stop, on_only=False)

    def fits(self, task: PlanTask, spot: Spot) -> bool:
        """Could ``task`` be placed at ``spot``?"""
        if spot.machine < 0 or spot.machine not in self._periods:
            xs, _ = self._fresh_starts(task, spot.x, spot.x)
            return len(xs) == 1 and self._fresh_machine() is not None
        if not 0 <= spot.x <= self._stop(task, None):
            return False
        return self._change(task, spot.machine, spot.x) is not None

    def place(self, task: PlanTask, spot: Spot) -> Spot:
        """Put ``task`` at ``spot`` (checked); returns the spot with its machine's index."""
        machine = spot.machine
        if machine < 0 or machine not in self._periods:
            fresh = self._fresh_machine() if machine < 0 else machine
            if fresh is None or not self.fits(task, Spot(spot.x, fresh)):
                raise ValueError(f"task {task.lease_id} does not fit at {spot}")
            machine = fresh
            self._new_machine(machine)
        change = self._change(task, machine, spot.x)
        if change is None:
            raise ValueError(f"task {task.lease_id} does not fit at {spot}")
        lo, periods, mode, state = change
        hi = lo + len(mode)
        self.used[lo:hi] += state - self._state[machine][lo:hi]
        self.used[spot.x:spot.x + task.length] += task.watts
        self._state[machine][lo:hi] = state
        self._mode[machine][lo:hi] = mode
        self._periods[machine] = periods
        self._cores[machine][spot.x:spot.x + task.length] += task.cores
        placed = Spot(spot.x, machine)
        self.placements.append((task, placed))
        return placed

    # ----------------------------------------------------------------------- internals
    def _stop(self, task: PlanTask, before: int | None) -> int:
        """The latest start: the task and the shutdown after it end within the horizon (and
        the task by ``before``)."""
        stop = self.horizon - task.length - self.platform.t_off
        if before is not None:
            stop = min(stop, before - task.length)
        return stop

    def _fresh_machine(self) -> int | None:
        used = self._periods
        if len(used) >= self.platform.machines:
            return None
        return next(k for k in range(self.platform.machines) if k not in used)

    def _new_machine(self, machine: int) -> None:
        n = self.length
        self._cores[machine] = np.zeros(n, dtype=np.int32)
        self._mode[machine] = np.zeros(n, dtype=np.int8)
        self._state[machine] = np.zeros(n)
        self._periods[machine] = []

    def _fresh_starts(self, task: PlanTask, x0: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Starts in ``[x0, stop]`` where a machine that is off all along could boot for
        ``task`` (boot, run, shutdown all within the room), with the least room left."""
        pf = self.platform
        if task.cores > pf.cores:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        x0 = max(x0, pf.t_on)
        if stop < x0:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        p = task.length
        lo, hi = x0 - pf.t_on, stop + p + pf.t_off
        room = self.cap[lo:hi] - self.used[lo:hi]
        n = stop - x0 + 1
        slack = np.full(n, math.inf)
        for offset, width, need in ((0, pf.t_on, pf.p_on), (pf.t_on, p, pf.p_stat + task.watts),
                                    (pf.t_on + p, pf.t_off, pf.p_off)):
            if width > 0:
                slack = np.minimum(slack, _sliding_min(room[offset:offset + n + width - 1],
                                                       width) - need)
        ok = slack >= -EPS
        return np.flatnonzero(ok) + x0, slack[ok]

    def _first_fresh(self, task: PlanTask, x0: int, stop: int) -> int | None:
        """The first of :meth:`_fresh_starts`, looked for in chunks growing from ``x0`` (the
        first start is usually near)."""
        a, size = x0, 256
        while a <= stop:
            b = min(stop, a + size - 1)
            xs, _ = self._fresh_starts(task, a, b)
            if len(xs):
                return int(xs[0])
            a, size = b + 1, size * 4
        return None

    def _prefilter(self, task: PlanTask, machine: int, x0: int, stop: int, *,
                   on_only: bool) -> tuple[np.ndarray, np.ndarray]:
        """Starts in ``[x0, stop]`` where ``machine`` has the cores and the envelope has room
        for the task as if the machine were on all through it (necessary, not sufficient),
        with the least room left; ``on_only``: only where the machine is on or switching off."""
        pf = self.platform
        p = task.length
        n = stop - x0 + 1
        if n <= 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        seg = slice(x0, stop + p)
        need = task.watts + pf.p_stat - self._state[machine][seg]
        left = self.cap[seg] - self.used[seg] - need
        left[self._cores[machine][seg] + task.cores > pf.cores] = -math.inf
        slack = _sliding_min(left, p)
        ok = slack >= -EPS
        if on_only:
            mode = self._mode[machine][x0:stop + 1]
            ok &= (mode == ON) | (mode == DOWN)
        return np.flatnonzero(ok) + x0, slack[ok]

    def _first_on(self, task: PlanTask, machines: Iterable[int], x0: int, before: int | None,
                  limit: int | None) -> Spot | None:
        """The earliest spot on a machine that is on or switching off at its start (up to
        ``limit``), machines that are on first, then by index."""
        stop = self._stop(task, before)
        if limit is not None:
            stop = min(stop, limit)
        best: Spot | None = None
        best_key: tuple[int, int, int] | None = None
        for machine in machines:
            end = stop if best is None else min(stop, best.x)
            if end < x0 or not self._on_within(machine, x0, end):
                continue
            xs, _ = self._prefilter(task, machine, x0, end, on_only=True)
            for x in xs.tolist():
                if best is not None and x > best.x:
                    break
                if self._change(task, machine, x) is None:
                    continue
                key = (x, 0 if self._mode[machine][x] == ON else 1, machine)
                if best_key is None or key < best_key:
                    best, best_key = Spot(x, machine), key
                break
        return best

    def _first_off(self, task: PlanTask, x0: int, before: int | None) -> Spot | None:
        """The earliest spot on a machine that is off at its start, booted for it (Kassab's
        newMachine): the lowest-index such machine, one not used yet or one off between its
        periods (the periods then merge if the rules say so: a shutdown just before is
        cancelled, look-back; one just after is skipped, look-ahead)."""
        stop = self._stop(task, before)
        best: tuple[int, int] | None = None            # (start, machine)
        fresh = self._fresh_machine()
        if fresh is not None:
            x = self._first_fresh(task, x0, stop)
            if x is not None:
                best = (x, fresh)
        for machine in self.machines_used:
            end = stop if best is None else min(stop, best[0])
            if end < x0 or not self._off_within(machine, x0, end):
                continue
            for x in self._off_starts(task, machine, x0, end).tolist():
                if self._change(task, machine, x) is not None:
                    if best is None or (x, machine) < best:
                        best = (x, machine)
                    break
        return None if best is None else Spot(*best)

    def _on_within(self, machine: int, lo: int, hi: int) -> bool:
        """Is ``machine`` on or switching off somewhere in ``[lo, hi]``?"""
        t_off = self.platform.t_off
        return any(a <= hi and b + t_off > lo for a, b in self._periods[machine])

    def _off_within(self, machine: int, lo: int, hi: int) -> bool:
        """Is ``machine`` off somewhere in ``[lo, hi]``?"""
        pf = self.platform
        t = lo
        for a, b in self._periods[machine]:     # in time order, boots and shutdowns apart
            if a - pf.t_on > t:
                return True
            t = max(t, b + pf.t_off)
            if t > hi:
                return False
        return t <= hi

    def _off_starts(self, task: PlanTask, machine: int, x0: int, stop: int) -> np.ndarray:
        """Starts in ``[x0, stop]`` where ``machine`` is off and may take ``task``: the cores
        and room over its run, and room for its boot unless it would rather merge with the
        period before."""
        xs, _ = self._prefilter(task, machine, x0, stop, on_only=False)
        if not len(xs):
            return xs
        pf = self.platform
        mode = self._mode[machine]
        xs = xs[mode[xs] == OFF]
        if pf.t_on == 0 or not len(xs):
            return xs
        lo = max(x0 - pf.t_on, 0)
        room = self.cap[lo:stop] - self.used[lo:stop] - (pf.p_on - self._state[machine][lo:stop])
        boot_ok = np.zeros(stop + 1, dtype=bool)
        if len(room) >= pf.t_on:
            ok = _sliding_min(room, pf.t_on) >= -EPS       # boot over [y, y + t_on)
            boot_ok[lo + pf.t_on:lo + pf.t_on + len(ok)] = ok
        near = np.zeros(stop + 1, dtype=bool)              # merging with the period before
        for _, b in self._periods[machine]:
            if b <= stop:
                reach = b + max(pf.t_off + pf.t_on, 2 * pf.t_on) + 1
                near[b:min(reach, stop + 1)] = True
        return xs[boot_ok[xs] | near[xs]]

    def _change(self, task: PlanTask, machine: int, x: int
                ) -> tuple[int, list[tuple[int, int]], np.ndarray, np.ndarray] | None:
        """What placing ``task`` at ``x`` on ``machine`` does to the machine: the start of
        the span that changes, the new periods, and the span's new modes and state powers;
        None if the cores or the envelope cannot take it (or a boot would begin before 0)."""
        pf = self.platform
        p = task.length
        cores = self._cores[machine]
        if x < 0 or (cores[x:x + p] + task.cores > pf.cores).any():
            return None
        old = self._periods[machine]
        new = merge_periods([*old, (x, x + p)], pf)
        changed = [q for q in new if q not in old]
        if not changed:   # inside a period: only the task's own power
            lo, hi = x, x + p
            mode, state = self._mode[machine][lo:hi].copy(), self._state[machine][lo:hi].copy()
        else:
            lo = min(a for a, _ in changed) - pf.t_on
            hi = max(b for _, b in changed) + pf.t_off
            if lo < 0 or hi > self.horizon:
                return None
            mode, state = render(new, lo, hi, pf)
        if (mode[x - lo:x - lo + p] != ON).any():   # cannot happen: the task's period is on
            return None
        delta = state - self._state[machine][lo:hi]
        delta[x - lo:x - lo + p] += task.watts
        up = delta > EPS
        if (self.used[lo:hi][up] + delta[up] > self.cap[lo:hi][up] + EPS).any():
            return None
        return lo, new, mode, state


def merge_periods(periods: Iterable[tuple[int, int]], platform: Platform
                  ) -> list[tuple[int, int]]:
    """Periods sorted and joined where they overlap or touch, or where the machine stays on
    over the gap between them (:meth:`Platform.keeps_on`)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(periods):
        if out and platform.keeps_on(a - out[-1][1]):   # overlapping, touching or close
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def render(periods: Sequence[tuple[int, int]], lo: int, hi: int, platform: Platform
           ) -> tuple[np.ndarray, np.ndarray]:
    """The modes and state powers of a machine with ``periods``, over ``[lo, hi)``."""
    mode = np.zeros(hi - lo, dtype=np.int8)
    state = np.zeros(hi - lo)
    pf = platform
    for a, b in periods:
        for start, end, m, watts in ((a - pf.t_on, a, BOOT, pf.p_on), (a, b, ON, pf.p_stat),
                                     (b, b + pf.t_off, DOWN, pf.p_off)):
            s, e = max(start, lo), min(end, hi)
            if e > s:
                mode[s - lo:e - lo] = m
                state[s - lo:e - lo] = watts
    return mode, state


def _sliding_min(values: np.ndarray, width: int) -> np.ndarray:
    """``out[i] = min(values[i:i + width])`` for every full window (log-doubling)."""
    n = len(values) - width + 1
    if n <= 0:
        return np.zeros(0)
    m = values
    step = 1
    while step * 2 <= width:
        m = np.minimum(m[:-step], m[step:])
        step *= 2
    return np.minimum(m[:n], m[width - step:width - step + n])


def envelope_intervals(times: np.ndarray, values: np.ndarray, interval: float, origin: float,
                       count: int) -> np.ndarray:
    """The least value of a step series (``values[i]`` from ``times[i]`` until the next; the
    first also before, the last for ever) in each of ``count`` intervals of ``interval``
    seconds from ``origin``."""
    starts = origin + interval * np.arange(count)
    idx = np.maximum(np.searchsorted(times, starts, side="right") - 1, 0)
    out = values[idx].astype(float)
    inside = (times > origin) & (times < origin + interval * count)
    k = ((times[inside] - origin) // interval).astype(np.intp)
    np.minimum.at(out, k, values[inside])
    return out
