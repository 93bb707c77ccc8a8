"""What a plugin sees of a run: :class:`RunContext`, read-only.

Hooks receive it as ``ctx`` and policies are built with it (``cls(ctx)``, kept as
``self.ctx``). It gives the configuration, the site, the slot table's queries, the scheduler's
leases (waiting, held, planned, running) as iterators and counts, the metrics recorder, the
clock, reproducible random streams and timers. Nothing in it changes the schedule: plugins act
through what their hooks and policy methods return.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.kernel.scheduler.seams import WhatIfScheduler

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.energy.series import StepSeries
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.resources import NodeSet
    from lease_manager.kernel.scheduler.seams import ScheduledLeases
    from lease_manager.kernel.table_protocol import Table
    from lease_manager.observers.metrics import Metrics


class _NoLeases:
    """The leases of a scheduler not built yet: none."""

    queue: Sequence[Lease] = ()
    held: Mapping[int, Lease] = MappingProxyType({})
    future: Mapping[int, Lease] = held
    running: Mapping[int, Lease] = held

    def active_leases(self) -> list[Lease]:
        return []


class SchedulerView:
    """The scheduler's leases by where they are, as iterators and counts."""

    def __init__(self, scheduler: ScheduledLeases | None = None) -> None:
        self._s: ScheduledLeases = _NoLeases()   # bound once the run has built its scheduler
        #: the scheduler's ``what_if`` (one site's; None: several sites, or none yet)
        self._what_if: WhatIfScheduler | None = None
        if scheduler is not None:
            self.bind(scheduler)

    def bind(self, scheduler: ScheduledLeases) -> None:
        """Show ``scheduler``, once, as it is built (``SiteSchedulers(view=...)`` calls this;
        the run calls it for a site's ``LeaseScheduler``): the policies a scheduler is built
        with are built with the context first."""
        self._s = scheduler
        self._what_if = scheduler if isinstance(scheduler, WhatIfScheduler) else None

    def what_if(self, lease: Lease, now: float, level: int | None = None
                ) -> tuple[int | None, float, float] | None:
        """Where ``lease`` would be planned if it arrived now, changing nothing: ``(level,
        start, end)`` of its first reservation, at DVFS ``level`` if given, else at the
        operating-point policy's; None if no slot ends by its deadline or it is too large
        (see :meth:`LeaseScheduler.what_if`). One site's: in a run with several, ask
        ``ctx.sites[name].scheduler``."""
        if self._what_if is None:
            raise TypeError("what_if asks one site's scheduler; in a run with several sites, "
                            "ask ctx.sites[name].scheduler")
        return self._what_if.what_if(lease, now, level)

    def waiting(self) -> Iterator[Lease]:
        """Queued leases, in queue order."""
        return iter(self._s.queue)

    def held(self) -> Iterator[Lease]:
        """Leases the queue policy holds back."""
        return iter(self._s.held.values())

    def planned(self) -> Iterator[Lease]:
        """Leases whose plan has not started yet, in scheduling order."""
        return iter(self._s.future.values())

    def running(self) -> Iterator[Lease]:
        """Leases running, suspending, resuming or migrating."""
        return iter(self._s.running.values())

    def is_held(self, lease_id: int) -> bool:
        return lease_id in self._s.held

    @property
    def n_waiting(self) -> int:
        return len(self._s.queue)

    @property
    def n_held(self) -> int:
        return len(self._s.held)

    @property
    def n_planned(self) -> int:
        return len(self._s.future)

    @property
    def n_running(self) -> int:
        return len(self._s.running)


class RunContext:
    """A run as plugins see it (see the module docstring)."""

    def __init__(self, config: Config, site: NodeSet, table: Table, metrics: Metrics,
                 clock_now: Callable[[], float],
                 call_at: Callable[[float, Callable[[float], None]], None], *,
                 sites: dict[str, RunContext] | None = None,
                 peek: Callable[[], list[Lease]] | None = None,
                 power: PowerModel | None = None, power_cap: StepSeries | None = None) -> None:
        #: the run's configuration (``ctx.config.get(section, option)``)
        self.config = config
        #: the site's nodes: ``site.types.names``, ``site.capacity`` (nodes x types), ``site.total``
        self.site = site
        #: the slot table's queries
        self.table = table.view()
        #: the scheduler's leases
        self.scheduler = SchedulerView()
        #: named time series written to ``series/`` (``ctx.metrics.record(name, now, value)``)
        self.metrics = metrics
        self._now = clock_now
        self._call_at = call_at
        self._rngs: dict[str, np.random.Generator] = {}
        #: the site's power model (``[power]``; None without one): levels ``ghz``, ``full``
        #: and ``idle`` watts per node, ``top_level``, switching times and watts
        self.power = power
        #: the site's power envelope (``[power] power-cap``: watts over time, as
        #: ``power_cap.times`` and ``power_cap.values``, each value holding until the next
        #: time; None without a cap)
        self.power_cap = power_cap
        #: in a run with several sites, each site's own context by name (its configuration,
        #: nodes, slot table, power model and leases); empty in a run with one site
        self.sites: dict[str, RunContext] = sites if sites is not None else {}
        #: reads the workload's future arrivals ahead (a replay's)
        self._peek = peek

    @property
    def now(self) -> float:
        """The run's clock now (seconds)."""
        return self._now()

    def peek_arrivals(self) -> list[Lease]:
        """Every lease still to arrive in a replay (the workload is read ahead; annotators
        have run on them), for policies that assume knowledge of the future (an offline
        bound). Empty in a run that takes its leases as they come (a daemon)."""
        return self._peek() if self._peek is not None else []

    def call_at(self, time: float, fn: Callable[[float], None]) -> None:
        """Call ``fn(now)`` at ``time``, a decision point of its own (a policy's timer: a
        maximum hold time, a periodic epoch). ``time`` must not be in the past."""
        if time < self._now():
            raise ValueError(f"call_at({time}) is in the past (now is {self._now()})")
        self._call_at(time, fn)

    def rng(self, name: str) -> np.random.Generator:
        """The random stream called ``name`` (one per policy, say), derived from the run's
        ``[simulation] seed``: independent of the other streams and of the order of use."""
        gen = self._rngs.get(name)
        if gen is None:
            seed = self.config.get("simulation", "seed")
            gen = self._rngs[name] = np.random.default_rng([seed, zlib.crc32(name.encode())])
        return gen
