"""The event loop: at every instant, ends, then planned starts, then arrivals, then a cycle.

The engine is driven by a clock (:mod:`lease_manager.kernel.clock`) and does not know whether it is
simulated or real. Leases arrive from an iterator in submit order (a trace) and, from other
threads, through :meth:`Engine.submit` (a daemon's API).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind, Timeline
from lease_manager.kernel.lease import LeaseType
from lease_manager.kernel.scheduler import Enactment

if TYPE_CHECKING:
    from lease_manager.kernel.clock import Clock
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.scheduler.seams import SteppedScheduler
    from lease_manager.kernel.slottable import Reservation
    from lease_manager.kernel.table_protocol import EngineTables

EK = members(EventKind)


class ReplayEnactment(Enactment):
    """Carries out leases in a simulation: once a lease's VMs run, its remaining work ends
    after its actual duration, which the engine learns through an END event (if that is not
    after the running reservation ends: then a planned suspension or the reservation's end
    comes first). Suspending and stopping cost nothing."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline

    def start(self, lease: Lease, res: Reservation, end: float) -> None:
        """``lease``'s VMs run in ``res``; its work (and shutdown) ends at ``end``."""
        if end <= res.end and not math.isinf(end):
            self.timeline.push(end, EK.END, res)

    def resize(self, lease: Lease, res: Reservation, end: float) -> None:
        """A malleable lease's work goes on in ``res``, ending at ``end`` (its END event in the
        old reservation is stale from now on)."""
        self.start(lease, res, end)


def timeline_calls(timeline: Timeline) -> Callable[[float, Callable[[float], None]], None]:
    """``call_at(time, fn)`` on ``timeline``: what :meth:`Engine.call_at` does, for the parts
    of a run built before its engine (the node power states)."""
    push = timeline.push

    def call_at(time: float, fn: Callable[[float], None]) -> None:
        push(time, EventKind.CALL, fn)

    return call_at


class Engine:
    """Steps one site's scheduler through time until the stop condition holds."""

    def __init__(self, scheduler: SteppedScheduler, table: EngineTables, timeline: Timeline,
                 clock: Clock, arrivals: Iterable[Lease] = (), *,
                 stop_when: str = "all-leases-done", runtime: float = math.inf,
                 serve: bool = False) -> None:
        self.scheduler = scheduler
        self.table = table
        self.timeline = timeline
        self.clock = clock
        self._arrivals: Iterator[Lease] = iter(arrivals)
        self.stop_when = stop_when
        self.runtime = runtime
        #: keep running with nothing to do, waiting for :meth:`submit` (a daemon)
        self.serve = serve
        self._posted: collections.deque[Callable[[float], None]] = collections.deque()
        #: set by :meth:`stop` from any thread (a plain flag: read at every step)
        self._stop_requested = False
        self.steps = 0
        #: the run ended because nothing more was to happen (no event, arrival or request)
        self.exhausted = False
        #: leases released by the core because the run would have ended with them held
        self.force_released = 0
        #: called with ``now`` at the start of every step, before any event is handled
        self.before_step: list[Callable[[float], None]] = []
        #: called with ``now`` at the end of every step, after the scheduling cycle
        self.after_step: list[Callable[[float], None]] = []
        #: times at which something wants a step, without keeping the run alive: they count
        #: only while some other event, arrival or request is still to come
        self.soft_wake: list[Callable[[], float]] = []
        #: step at soft wakes also while leases wait in the queue with nothing else to come
        #: (a power cap: a queued lease may fit once the cap grows)
        self.wake_while_queued = False
        #: the loop, paused before its next step (None: not started)
        self._stepper: Iterator[float] | None = None
        #: the time of that step (nan: the run is over)
        self._next_step = math.nan
        self._progress: Callable[[float], None] | None = None

    @property
    def now(self) -> float:
        return self.clock.now()

    def submit(self, lease: Lease) -> None:
        """Hand a lease to the running engine from any thread; it is submitted at once."""
        self.post(lambda now: self.scheduler.submit(lease, now))

    def post(self, fn: Callable[[float], None]) -> None:
        """Have the engine call ``fn(now)`` at once, on its own thread (from any thread): how
        a daemon's API and backends act on the scheduler without locks."""
        self._posted.append(fn)
        self.clock.wake()

    def peek_arrivals(self) -> list[Lease]:
        """Every lease still to arrive from the workload, read ahead (an oracle policy's view
        of the future; they are submitted at their times as before)."""
        rest = list(self._arrivals)
        self._arrivals = iter(rest)
        return rest

    def call_at(self, time: float, fn: Callable[[float], None]) -> None:
        """Call ``fn(now)`` at ``time`` (a decision point of its own; not thread-safe)."""
        self.timeline.push(time, EventKind.CALL, fn)

    def stop(self) -> None:
        """Ask a running engine to stop after the current step (any thread)."""
        self._stop_requested = True
        self.clock.wake()

    def peek(self) -> float:
        """The time of the next step (as SimPy's ``peek``): the next event's, arrival's or
        wake's; inf when the run is over (nothing more is to happen, or the stop condition
        holds). Changes nothing the next :meth:`step` would not."""
        if self._stepper is None:
            self._start_stepping()
        return math.inf if math.isnan(self._next_step) else self._next_step

    def step(self) -> bool:
        """Process one step (as SimPy's ``step``, one instant here: its ends, then planned
        starts, then arrivals, then a scheduling cycle), waiting for its time as the clock
        does; False, doing nothing, when the run is over (SimPy raises ``EmptySchedule``).
        A notebook or a test drives the loop with it; :meth:`run` shares its code."""
        stepper = self._stepper or self._start_stepping()
        if math.isnan(self._next_step):   # (over)
            return False
        self._next_step = next(stepper, math.nan)
        return True

    def run(self, progress: Callable[[float], None] | None = None) -> None:
        """Step until the run is over (after any steps already taken with :meth:`step`);
        ``progress(now)`` is called every 512 steps."""
        self._progress = progress
        stepper = self._stepper or self._start_stepping()
        if math.isnan(self._next_step):
            return
        for _ in stepper:
            pass
        self._next_step = math.nan

    def _start_stepping(self) -> Iterator[float]:
        self._stepper = stepper = self._steps()
        self._next_step = next(stepper, math.nan)
        return stepper

    def _steps(self) -> Iterator[float]:
        """The loop, for :meth:`step` and :meth:`run`: yields each step's time before taking
        it; ends with the run. (Hot: lookups made once; a resume costs less than a call.)"""
        sched, timeline = self.scheduler, self.timeline
        heap = timeline._heap   # (peeked at every step: next_time() without the call)
        wait_until, pop_due = self.clock.wait_until, timeline.pop_due
        before_step, after_step = self.before_step, self.after_step
        advance = self.table.advance
        untie_ended = sched.untie_ended
        end, segment_end, start = EventKind.END, EventKind.SEGMENT_END, EventKind.START
        nxt = next(self._arrivals, None)
        now = self.clock.now()
        while not self._stop_requested:
            t = heap[0][0] if heap else math.inf
            if nxt is not None and nxt.submit < t:
                t = nxt.submit
            if self.soft_wake and (not math.isinf(t) or self.serve
                                   or (self.wake_while_queued and sched.queue)):
                t = min(t, *(wake() for wake in self.soft_wake))
            if self.stop_when == "time" and t > self.runtime:
                break
            if math.isinf(t) and not self._posted:
                if sched.held:
                    yield now
                    self._release_held(now)
                    continue
                if not self.serve:
                    self.exhausted = True
                    break
            yield t
            now = wait_until(t)
            for before in before_step:
                before(now)
            posted = self._posted
            while posted:
                posted.popleft()(now)
            if now >= t:
                for kind, payload in pop_due(now):
                    if kind is end:
                        sched.work_finished(payload, now)
                    elif kind is segment_end:
                        sched.segment_ended(payload, now)
                    elif kind is start:
                        sched.segment_started(payload, now)
                    else:
                        payload(now)
                payload = None   # (the last one is not kept: see untie_ended)
                while nxt is not None and nxt.submit <= now:
                    sched.submit(nxt, now)
                    nxt = next(self._arrivals, None)
            sched.cycle(now)
            for after in after_step:
                after(now)
            advance(now)
            untie_ended()
            self.steps += 1
            if not self.steps % 512 and self._progress is not None:
                self._progress(now)
            if self.stop_when == "besteffort-done" and self._besteffort_done(nxt):
                break

    def _release_held(self, now: float) -> None:
        """Nothing more is to happen but leases are held: queue them and schedule (the
        core's guarantee that no held lease is left behind)."""
        self.force_released += self.scheduler.release_all_held(now)
        self.scheduler.cycle(now)
        for after in self.after_step:
            after(now)

    def _besteffort_done(self, nxt: Lease | None) -> bool:
        """Whether a run that stops when its best-effort leases are done may stop."""
        return (not self.serve and nxt is None and not self._posted
                and not any(l.type is LeaseType.BEST_EFFORT
                            for l in self.scheduler.active_leases()))
