"""Every hook lease_manager calls, in the order of a run's life.

Plugins implement them with ``@lease_manager.hookimpl``; an implementation may take any subset
of a hook's arguments. There are two families:

*Registration* hooks are called when a :class:`~lease_manager.plugins.Plugins` object is built
(once per process, whatever the number of runs). They declare ini options and *policies*:
classes with a ``kind`` (``admission``, ``pricing``, ``queue``, ``host-selection``,
``preemption``, ``probe``, ``annotator``, ``enactment``), a ``name`` the ini file selects them
by, and the methods of that kind's protocol (see :mod:`lease_manager.policies`). The policies a
run selects are instantiated as ``cls(ctx)`` and registered as plugins for the life of the run,
so a policy object can also implement the event hooks below (that is how a queue mechanism
watches the schedule).

*Event* hooks are called as a run goes, in a trace replay (``lease-manager simulate``, sweeps)
and in the daemon (``lease-manager serve``) alike. Every implementation is called; return values
are ignored unless the docstring says otherwise. They receive ``ctx``, the run's
:class:`~lease_manager.context.RunContext`: the configuration, the site, the slot table's
queries, the scheduler's leases, metrics, ``now``, ``rng`` and ``call_at``; it cannot change the
schedule.

Order: the core's own observers are plugins too: ``lease_manager.accounting`` (``leases.csv``,
``summary.json``) and ``lease_manager.invariants`` (the invariant checker) are registered for
each run with ``tryfirst``, so their implementations run before any other plugin's. The
remaining implementations run in pluggy's order: ``tryfirst`` ones, then the others, the most
recently registered first (a run's policies before installed plugins; the daemon's observer
``lease_manager.daemon``, which persists every change, is registered before the run, so after
the run's policies). A plugin registered while a run is under way takes part from its next
hook call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from lease_manager.config.schema import Option
    from lease_manager.context import RunContext
    from lease_manager.kernel.extra_attributes import ExtraAttribute
    from lease_manager.kernel.lease import Lease, LeaseState
    from lease_manager.observers.leases_csv import LeaseColumns

hookspec = pluggy.HookspecMarker("lease_manager")
hookimpl = pluggy.HookimplMarker("lease_manager")


# --------------------------------------------------------------------------- registration
@hookspec
def register_options() -> Iterable[Option] | None:
    """Declare ini options this plugin reads (typed, with defaults and docs).

    Called once, when the :class:`~lease_manager.plugins.Plugins` object is built, before any
    configuration is validated; every implementation's options are added to the schema, so they
    are validated, overridable with ``--set`` and listed by ``lease-manager config-doc``. A
    plugin should use a section of its own. Return an iterable of
    :class:`~lease_manager.Option` (or None).
    """


@hookspec
def register_extra_attributes() -> Iterable[ExtraAttribute] | None:
    """Declare the lease ``extra`` attributes this plugin interprets, with their bounds.

    Called once, when the :class:`~lease_manager.plugins.Plugins` object is built. Every value
    of a declared attribute that comes from outside (an LWF document, an API request, a row
    the daemon stored) is checked before anything is stored or planned, and a bad one is
    refused in one line. The value is kept as given (LWF gives text, JSON may give a number):
    a policy reading ``lease.extra[NAME]`` converts it (``float(...)``, ``int(...)``) and the
    conversion cannot fail. Return an iterable of :class:`~lease_manager.ExtraAttribute`.
    """


@hookspec
def register_policies() -> Iterable[type] | None:
    """Return the policy classes this plugin provides.

    Called once, when the :class:`~lease_manager.plugins.Plugins` object is built. Each class
    has class attributes ``kind`` and ``name`` (the name users write in the ini file) and a
    docstring whose first line describes it. The core instantiates only the policies a run
    selects, as ``cls(ctx)``; two plugins may not provide the same kind and name.
    """


# -------------------------------------------------------------------------- run lifecycle
@hookspec
def run_started(ctx: RunContext) -> None:
    """The run is set up and its clock is about to start.

    Replay: before the first lease arrives. Daemon: at ``serve``, before the leases of an
    earlier run of the daemon are restored from its database (their restoration fires lease
    hooks).
    """


@hookspec
def lease_columns(ctx: RunContext) -> Iterable[LeaseColumns] | None:
    """Return columns to add to ``leases.csv`` (values a plugin keeps per lease), or None.

    Called once, when the run is built, before :func:`run_started` (a plugin registered later
    adds no columns); the twin of :func:`collect_summary`. Each
    :class:`~lease_manager.LeaseColumns` names its columns and gives a lease's values for them
    when the lease is accounted for (in its final state, or unfinished when the run stops).
    The columns follow the core's in pluggy's order: the core's own (a run with several
    sites: ``site``; energy: ``level``, ``ghz``, ``stretched_requested``,
    ``energy_joules``), then the others, the most recently registered first (malleable
    leases: ``resizes``, ``allocations``, ``work_single_server``); ``sparse`` ones (a lease's
    own ``watts``) come last, each written only if some lease has a value. A name that
    clashes with another column is an error.
    """


@hookspec
def run_finished(ctx: RunContext) -> None:
    """The run has stopped; every lease is in its final state for this run.

    Replay: at the stop condition. Daemon: when it stops (SIGTERM, SIGINT), after the API has
    stopped answering and before the database is closed; leases still running stay so (a
    restarted daemon takes them back). Called before :func:`collect_summary`.
    """


@hookspec
def collect_summary(ctx: RunContext) -> dict[str, Any] | None:
    """Return extra fields for ``summary.json`` (metrics a plugin computed), or None.

    Called after :func:`run_finished`, once the core's own fields are computed (the replay's
    ``summary.json``; the daemon's ``state-dir/summary.json`` when it stops). Every
    implementation's fields are merged; a name that clashes with another field is an error.
    """


# ------------------------------------------------------------------------ scheduling cycle
@hookspec
def scheduling_cycle_start(ctx: RunContext, now: float) -> None:
    """A scheduling cycle begins at ``now``: ended and started leases and new arrivals have
    been handled; held leases have not yet been released and the queue not yet processed.

    Replay: at every instant something happens. Daemon: at every engine step (an event, a
    request, a reconciliation).
    """


@hookspec
def scheduling_cycle_end(ctx: RunContext, now: float) -> None:
    """The scheduling cycle at ``now`` is over: the queue has been processed and every
    decision of this instant is in the slot table. (The daemon answers the API calls made
    during the cycle here, in its observer.)"""


# ------------------------------------------------------------------------- lease lifecycle
@hookspec
def lease_submitted(ctx: RunContext, lease: Lease, now: float) -> None:
    """``lease`` arrived (state NEW), before admission control.

    Replay: when its submit time comes. Daemon: when the API accepts the request (not again
    when a restarted daemon restores it).
    """


@hookspec
def lease_rejected(ctx: RunContext, lease: Lease, now: float) -> None:
    """``lease`` was rejected; ``lease.reason`` says why. It is final: no other hook follows
    for this lease."""


@hookspec
def lease_scheduled(ctx: RunContext, lease: Lease, now: float) -> None:
    """``lease`` got a plan: ``lease.reservations`` holds it (nodes and times).

    Called again whenever the plan changes before the lease starts (for instance when a
    premature end lets it move earlier); the previous plan is then void. Called before the
    plan's first segment starts, also when it starts at once.
    """


@hookspec
def lease_started(ctx: RunContext, lease: Lease, now: float) -> None:
    """``lease``'s VMs started running (state ACTIVE): its first start, or after a
    resumption."""


@hookspec
def lease_state_changed(ctx: RunContext, lease: Lease, old: LeaseState,
                        now: float) -> None:
    """``lease`` moved from state ``old`` to ``lease.state`` (every move, including those the
    other lease hooks announce, which it precedes; the daemon writes each one to its
    database)."""


@hookspec
def lease_preempted(ctx: RunContext, lease: Lease, now: float) -> None:
    """``lease`` lost its resources to another lease (it is suspended or requeued), or was
    planned from the start to yield to an advance reservation."""


@hookspec
def lease_resized(ctx: RunContext, lease: Lease, old_nodes: int, old_vms: int,
                  now: float) -> None:
    """Running malleable ``lease`` got a new allocation from ``now`` on (it had ``old_vms``
    VMs on ``old_nodes`` nodes): ``lease.reservations[0]`` is the new one, the old one is the
    last of ``lease.allocations``, ``lease.malleable`` has its new rate and history."""


@hookspec
def lease_ended(ctx: RunContext, lease: Lease, now: float) -> None:
    """``lease`` reached DONE, CANCELLED or FAILED; its resources are free from ``now``. It is
    final: no other hook follows for this lease."""
