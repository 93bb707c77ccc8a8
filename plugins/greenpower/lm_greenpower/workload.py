"""The annotator ``green-tasks``: Kassab et al.'s task generators (section 5.1), drawn from the
run's seed.

Lengths, in intervals of ``[planning] interval`` seconds (their time unit, 6 minutes):

- ``hyper-gamma`` (Lublin and Feitelson's model, as the authors' simulator draws it): x from
  Gamma(4.2, 0.94) with probability 0.685, else Gamma(312, 0.03); the length is
  ``int(e^x / 60)``, drawn again until it is above 1 and below ``max-length`` (500);
- ``exponential``: ``int`` of an exponential draw of mean ``max-length / 2``, at least 1 and
  at most ``max-length`` (the authors' simulator maps draws above 100 to 100 plus 1 to 10; the
  paper says lengths lie between a minimum and ``max-length``: we cut there);
- ``trace``: the workload's own durations.

Powers (W per VM, the lease's ``watts``): ``uniform`` integers in ``[min-watts, max-watts]``
(the paper: from 1; the authors' simulator: from 4), or ``trace`` (the workload's own).
Each lease gets its requested and actual duration set to its length.
"""

from __future__ import annotations

import math

import numpy as np

from lease_manager import Annotator, Lease

#: hyper-gamma components: (probability of the first, (shape, scale) of each)
HYPER_GAMMA = (0.685, (4.2, 0.94), (312.0, 0.03))
MAX_DRAWS = 100_000


def hyper_gamma_length(rng: np.random.Generator, most: int) -> int:
    """A length drawn as the authors' simulator does (above 1, below ``most``)."""
    share, (k1, s1), (k2, s2) = HYPER_GAMMA
    for _ in range(MAX_DRAWS):
        x = rng.gamma(k1, s1) if rng.random() < share else rng.gamma(k2, s2)
        length = int(math.exp(x) / 60)
        if 1 < length < most:
            return length
    raise ValueError(f"no hyper-gamma length in (1, {most}) after {MAX_DRAWS} draws")


def exponential_length(rng: np.random.Generator, most: int) -> int:
    """``int`` of an exponential draw of mean ``most / 2``, within ``[1, most]``."""
    return min(max(1, int(rng.exponential(most / 2))), most)


class GreenTasks(Annotator):
    """Kassab et al.'s tasks: lengths (hyper-gamma or exponential) and powers (uniform), drawn
    from the run's seed ([greenpower] lengths, max-length, watts, min-watts, max-watts)."""

    name = "green-tasks"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        config = ctx.config
        self.lengths = config.get("greenpower", "lengths")
        self.most = config.get("greenpower", "max-length")
        self.watts = config.get("greenpower", "watts")
        self.low = config.get("greenpower", "min-watts")
        self.high = config.get("greenpower", "max-watts")
        if self.watts == "uniform" and self.low > self.high:
            raise config.error("greenpower", "min-watts", f"{self.low:g} is above max-watts "
                               f"{self.high:g}")
        if self.lengths == "hyper-gamma" and self.most <= 2:
            raise config.error("greenpower", "max-length", "hyper-gamma lengths lie strictly "
                               "between 1 and max-length: give at least 3")
        self.interval = float(config.get("planning", "interval"))
        self.rng = ctx.rng("green-tasks")

    def annotate(self, lease: Lease) -> None:
        rng = self.rng
        if self.lengths != "trace":
            length = (hyper_gamma_length(rng, self.most) if self.lengths == "hyper-gamma"
                      else exponential_length(rng, self.most))
            lease.requested_duration = lease.actual_duration = length * self.interval
        if self.watts == "uniform":
            lease.extra["watts"] = str(int(rng.integers(self.low, self.high + 1)))
