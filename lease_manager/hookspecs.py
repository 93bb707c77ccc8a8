"""Every hook lease_manager calls, in the order of a run's life.

Plugins implement them with ``@lease_manager.hookimpl``. There are two families:

*Registration* hooks are called once when a run is set up. They declare ini options and
*policies*: classes with a ``kind`` (``admission``, ``pricing``, ``queue``, ``host-selection``,
``preemption``, ``probe``, ``annotator``), a ``name`` the ini file selects them by, and the methods of that kind's protocol
(see :mod:`lease_manager.policies`). The chosen policies are instantiated for the run with
``cls(run)`` and registered into the run's plugin manager too, so a policy object can also
implement the event hooks below (that is how a queue mechanism watches the schedule).

*Event* hooks are called as the run goes; every implementation is called and return values are
ignored unless the docstring says otherwise. They receive the :class:`~lease_manager.run.Run`,
whose public attributes (``config``, ``site``, ``table``, ``scheduler``, ``metrics``, ``now``)
are what a plugin may read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import pluggy

if TYPE_CHECKING:
    from lease_manager.config.schema import Option
    from lease_manager.kernel.lease import Lease, LeaseState
    from lease_manager.run import Run

hookspec = pluggy.HookspecMarker("lease_manager")
hookimpl = pluggy.HookimplMarker("lease_manager")


# --------------------------------------------------------------------------- registration
@hookspec
def register_options() -> "Iterable[Option]":
    """Declare ini options this plugin reads (typed, with defaults and docs).

    Called once per run before the configuration file is validated; every implementation's
    options are added to the schema, so they are validated, overridable with ``--set`` and
    listed by ``lease-manager config-doc``. A plugin should use a section of its own.
    """


@hookspec
def register_policies() -> Iterable[type]:
    """Return the policy classes this plugin provides.

    Each class has class attributes ``kind`` and ``name`` (the name users write in the ini
    file) and a docstring whose first line describes it. The core instantiates only the
    policies a run selects, as ``cls(run)``.
    """


# -------------------------------------------------------------------------- run lifecycle
@hookspec
def run_started(run: "Run") -> None:
    """The run is set up and its clock is about to start."""


@hookspec
def run_finished(run: "Run") -> None:
    """The run has stopped; every lease is in its final state for this run."""


@hookspec
def collect_summary(run: "Run") -> "dict[str, Any] | None":
    """Return extra fields for ``summary.json`` (metrics a plugin computed), or None.

    Called after :func:`run_finished`. Field names must not clash with the core's.
    """


# ------------------------------------------------------------------------ scheduling cycle
@hookspec
def scheduling_cycle_start(run: "Run", now: float) -> None:
    """A scheduling cycle begins at ``now``: ended and started leases and new arrivals have
    been handled; held leases have not yet been released and the queue not yet processed."""


@hookspec
def scheduling_cycle_end(run: "Run", now: float) -> None:
    """The scheduling cycle at ``now`` is over: the queue has been processed and every
    decision of this instant is in the slot table."""


# ------------------------------------------------------------------------- lease lifecycle
@hookspec
def lease_submitted(run: "Run", lease: "Lease", now: float) -> None:
    """``lease`` arrived (state NEW), before admission control."""


@hookspec
def lease_rejected(run: "Run", lease: "Lease", now: float) -> None:
    """``lease`` was rejected; ``lease.reason`` says why."""


@hookspec
def lease_scheduled(run: "Run", lease: "Lease", now: float) -> None:
    """``lease`` got a plan: ``lease.reservations`` holds it (nodes and times).

    Called again whenever the plan changes before the lease starts (for instance when a
    premature end lets it move earlier); the previous plan is then void.
    """


@hookspec
def lease_started(run: "Run", lease: "Lease", now: float) -> None:
    """``lease`` started running (state ACTIVE)."""


@hookspec
def lease_state_changed(run: "Run", lease: "Lease", old: "LeaseState", now: float) -> None:
    """``lease`` moved from state ``old`` to ``lease.state`` (every move, including those the
    other lease hooks announce; a daemon writes each one to its database)."""


@hookspec
def lease_preempted(run: "Run", lease: "Lease", now: float) -> None:
    """``lease`` lost its resources to another lease (it is suspended or requeued)."""


@hookspec
def lease_ended(run: "Run", lease: "Lease", now: float) -> None:
    """``lease`` reached DONE, CANCELLED or FAILED; its resources are free from ``now``."""
