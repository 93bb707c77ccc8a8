"""A site's power over a run as steps, and the steps a set of intervals adds up to."""

from __future__ import annotations

import attrs
import numpy as np


@attrs.define
class PowerProfile:
    """The site's IT power as steps: ``watts[k]`` holds over ``[times[k], times[k+1])``; the
    last time is the end of the run."""

    times: np.ndarray
    watts: np.ndarray

    @property
    def energy(self) -> float:
        return float(np.dot(self.watts[:-1], np.diff(self.times))) if len(self.times) else 0.0

    def at(self, t: np.ndarray) -> np.ndarray:
        """The power at each of ``t`` (inside the run)."""
        return self.watts[np.maximum(np.searchsorted(self.times, t, side="right") - 1, 0)]


def step_profile(starts: np.ndarray, ends: np.ndarray, watts: np.ndarray, start: float,
                 end: float) -> PowerProfile:
    """The sum of intervals ``[starts[i], ends[i])`` drawing ``watts[i]``, as steps over
    ``[start, end]`` (the intervals lie inside it)."""
    times = np.concatenate([starts, ends])
    deltas = np.concatenate([watts, -watts])
    inside = times < end
    times, deltas = times[inside], deltas[inside]
    if len(times) == 0:    # a run of no length: no power to speak of
        return PowerProfile(np.array([start, end]), np.zeros(2))
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(deltas[order])
    last = np.flatnonzero(np.append(times[1:] != times[:-1], True))
    times, level = times[last], level[last]
    if len(times) == 0 or times[0] > start:
        times, level = np.concatenate([[start], times]), np.concatenate([[0.0], level])
    final = level[-1] if len(level) else 0.0
    return PowerProfile(np.append(times, end), np.append(level, final))
