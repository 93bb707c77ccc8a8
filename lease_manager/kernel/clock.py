"""Clocks: the simulated clock jumps to the next event; the real clock follows wall time.

Both have the same three methods (the :class:`Clock` protocol), and the engine does not know
which one it has. The real clock differs only in how it waits (as SimPy's real-time
environment does).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """What the engine needs of a clock (:class:`SimulatedClock`, :class:`RealClock`)."""

    def now(self) -> float:
        """The current time (seconds)."""

    def wait_until(self, t: float) -> float:
        """Wait until ``t`` (or until :meth:`wake`); return the time it is then."""

    def wake(self) -> None:
        """Cut a wait short (from any thread)."""


class SimulatedClock:
    """Time moves only when the engine says so, straight to the next event."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def wait_until(self, t: float) -> float:
        """Jump to ``t`` at once; return the new time."""
        if t > self._now:
            self._now = t
        return self._now

    def wake(self) -> None:
        """Nothing to interrupt: a simulated clock never sleeps."""


class RealClock:
    """Wall time, from ``start`` on, optionally sped up ``speedup`` times.

    :meth:`wait_until` sleeps until the wall clock reaches ``t`` and then returns ``t`` exactly,
    so that events happen at the times the schedule says; :meth:`wake` (from any thread) cuts a
    wait short, which then returns the current time.
    """

    def __init__(self, start: float = 0.0, speedup: float = 1.0) -> None:
        if speedup <= 0:
            raise ValueError("speedup must be positive")
        self.speedup = speedup
        self._start = float(start)
        self._t0 = time.monotonic()
        self._wakeup = threading.Event()

    def now(self) -> float:
        return self._start + (time.monotonic() - self._t0) * self.speedup

    def wait_until(self, t: float) -> float:
        while True:
            remaining = (t - self.now()) / self.speedup
            if remaining <= 0:
                return t
            if self._wakeup.wait(timeout=min(remaining, 3600.0)):
                self._wakeup.clear()
                return min(self.now(), t)

    def wake(self) -> None:
        self._wakeup.set()
