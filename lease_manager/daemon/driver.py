"""The enactment driver: turns the scheduler's starts, suspensions and stops into backend calls
and reconciles what the backend really sees with the plan.

It is the scheduler's :class:`~lease_manager.kernel.scheduler.Enactment` in a daemon. Like the
simulated one it puts an END event at the planned end of a lease's work (where the reservation
runs out: the backend stops the work then); work that ends earlier is noticed by
:meth:`EnactmentDriver.reconcile` and ends the lease there and then.
"""

from __future__ import annotations

import errno
import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lease_manager.enactment.base import EnactmentError, VMWork, Work
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import LeaseState
from lease_manager.kernel.scheduler import Enactment

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.slottable import Reservation
    from lease_manager.run import Run

log = logging.getLogger("lease_manager.daemon")
S = LeaseState


class EnactmentDriver(Enactment):
    """Carries out one run's leases through ``backend``; ``note(lease_id, text)`` records what
    happened that is not a change of state (the daemon writes it to the lease's history);
    ``durable()`` is called before every call that changes what the backend runs or books, so
    that the changes that led to it are stored first (the daemon groups its changes)."""

    def __init__(self, run: Run, backend: Any, names: Sequence[str],
                 note: Callable[[int, str], None] = lambda lease_id, text: None,
                 handed_over: Callable[[int], None] = lambda lease_id: None,
                 durable: Callable[[], None] = lambda: None) -> None:
        self.run = run
        self.backend = backend
        self.names = names
        self.note = note
        #: called with a lease's id once the backend has taken the work of a fresh start
        self.handed_over = handed_over
        self.durable = durable
        #: while True, ``start`` only takes back work that is already running (a restart)
        self.adopting = False
        #: while True, starts wait in :attr:`deferred` for :meth:`flush`: the starts of one
        #: scheduling cycle then share one ``durable()`` (with ``sync = full``, one fsync
        #: instead of one a start: the steps that started leases made the latency's tail)
        self.defer_starts = False
        #: starts decided and stored, not yet handed to the backend, in their order
        self.deferred: dict[int, tuple[Lease, Reservation]] = {}
        types = run.nodes.types.names
        self._cpu = types.index("CPU") if "CPU" in types else None
        self._memory = types.index("Memory") if "Memory" in types else None

    # ----------------------------------------------------------------- what the backend gets
    def work(self, lease: Lease, res: Reservation) -> Work:
        vms = []
        for i, (node, vector) in enumerate(zip(res.vm_nodes, lease.vms.per_vm())):
            vms.append(VMWork(i, int(node), self.names[int(node)],
                              float(vector[self._cpu]) if self._cpu is not None else 0.0,
                              float(vector[self._memory]) if self._memory is not None else 0.0))
        end = res.end if math.isfinite(res.end) else 2.0 ** 40
        workdir = lease.extra.get("workdir")
        return Work(lease.id, str(lease.extra.get("command", "")), tuple(vms), res.start, end,
                    workdir=str(workdir) if workdir else None)

    def _failed(self, lease: Lease, action: str, exc: Exception) -> None:
        reason = f"{action} failed: {exc}"
        log.warning("lease %s: %s", lease.id, reason)
        # not from inside the scheduler's own call: on the engine's next step
        self.run.engine.post(lambda now: self.run.site_scheduler.fail(lease, now, reason))

    # ------------------------------------------------------------- the scheduler's calls
    def start(self, lease: Lease, res: Reservation, end: float) -> None:
        if end <= res.end and not math.isinf(end):
            self.run.timeline.push(end, EventKind.END, res)
        if self.adopting:
            return
        if self.defer_starts:
            self.deferred[lease.id] = (lease, res)
            return
        self.durable()
        self._start(lease, res)

    def flush(self) -> None:
        """Make what led to the deferred starts durable (one ``durable()``), then hand them
        to the backend in their order. Called before any other backend call, before any
        change to a lease whose start waits, before the step's answers and at its end: the
        backend gets the same calls in the same order, each once its lease's row is stored
        as started (``starting``: a restart asks the backend whether it took the work)."""
        if not self.deferred:
            return
        self.durable()
        while self.deferred:
            lease_id = next(iter(self.deferred))
            lease, res = self.deferred.pop(lease_id)
            self._start(lease, res)

    def _start(self, lease: Lease, res: Reservation) -> None:
        try:
            if self.backend.status(lease.id).state == "suspended":
                self.backend.resume(lease.id)
            else:
                self.backend.start(self.work(lease, res))
                self.handed_over(lease.id)
        except EnactmentError as exc:
            self._failed(lease, "starting its work", exc)

    def resize(self, lease: Lease, res: Reservation, end: float) -> None:
        if end <= res.end and not math.isinf(end):
            self.run.timeline.push(end, EventKind.END, res)
        self.flush()
        self.durable()
        try:
            self.backend.resize(self.work(lease, res))
        except EnactmentError as exc:
            self._failed(lease, "resizing its work", exc)

    def suspend(self, lease: Lease, now: float) -> None:
        self.flush()
        self.durable()
        try:
            self.backend.suspend(lease.id)
        except EnactmentError as exc:
            self._failed(lease, "suspending its work", exc)

    def stop(self, lease: Lease, now: float) -> None:
        self.flush()
        self.durable()
        try:
            self.backend.stop(lease.id)
        except EnactmentError as exc:   # the lease is over for the scheduler anyway
            log.warning("lease %s: stopping its work failed: %s", lease.id, exc)
            self.note(lease.id, f"stopping its work failed: {exc}")

    def release(self, lease: Lease) -> None:
        """A lease that had not started gave up its plan (preempted before it began): free
        what the backend booked for it."""
        self.flush()
        self.durable()
        try:
            self.backend.stop(lease.id)
        except EnactmentError as exc:
            log.warning("lease %s: releasing its booking failed: %s", lease.id, exc)
            self.note(lease.id, f"releasing its booking failed: {exc}")

    power_calls = True

    def power_off(self, node: int, now: float) -> None:
        self.flush()
        self.durable()
        try:
            self.backend.power_off(self.names[node])
        except EnactmentError as exc:
            log.warning("switching node %s off failed: %s", self.names[node], exc)

    def power_on(self, node: int, now: float) -> None:
        self.flush()
        self.durable()
        try:
            self.backend.power_on(self.names[node])
        except EnactmentError as exc:
            log.warning("switching node %s on failed: %s", self.names[node], exc)

    def prepare(self, lease: Lease, now: float) -> None:
        """A plan that starts in the future was made or changed (the ``lease_scheduled``
        hook): let a backend that books ahead know."""
        first = next((r for r in lease.reservations if r.kind == "vm"), None)
        if first is None or first.start <= now:
            return
        self.flush()
        self.durable()
        try:
            self.backend.prepare(self.work(lease, first))
        except EnactmentError as exc:
            self._failed(lease, "booking its resources", exc)

    # --------------------------------------------------------------------- reconciliation
    def reconcile(self, now: float) -> None:
        """Compare the backend's real state with the plan and act on every difference: work
        that exited ends its lease (DONE, or FAILED on a non-zero code), work that vanished
        fails it, work found in the wrong running/suspended state is put right. A round that
        finds no file descriptor free is skipped (the next one tries again): it once stopped
        the daemon ("internal error: ... Too many open files")."""
        self.flush()
        try:
            self._reconcile(now)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            log.warning("reconciliation skipped: %s", exc.strerror)

    def _reconcile(self, now: float) -> None:
        sched = self.run.site_scheduler
        try:
            self.backend.refresh()
        except EnactmentError as exc:
            log.warning("reconciliation skipped: %s", exc)
            return
        for lease in list(sched.running.values()):
            self._reconcile_one(lease, now)
        for lease in [l for l in sched.queue if l.image_nodes]:
            status = self.backend.status(lease.id)
            if status.state in ("vanished", "absent", "exited"):
                sched.fail(lease, now, f"its suspended work is gone ({status.state}"
                                       f"{': ' + status.detail if status.detail else ''})")

    def _reconcile_one(self, lease: Lease, now: float) -> None:
        sched = self.run.site_scheduler
        status = self.backend.status(lease.id)
        state = status.state
        if lease.state is S.ACTIVE:
            res = lease.reservations[0]
            if state == "exited":
                if status.exit_code:
                    sched.fail(lease, now, f"its command exited with status {status.exit_code}")
                else:
                    sched.work_finished(res, min(now, res.end))
            elif state in ("vanished", "absent"):
                sched.fail(lease, now, f"its work vanished"
                                       f"{': ' + status.detail if status.detail else ''}")
            elif state == "suspended":
                self.note(lease.id, "found suspended while it should run: resumed")
                self.durable()
                try:
                    self.backend.resume(lease.id)
                except EnactmentError as exc:
                    sched.fail(lease, now, f"resuming its work failed: {exc}")
        elif lease.state in (S.SUSPENDING, S.RESUMING, S.MIGRATING):
            if state in ("vanished", "absent"):
                sched.fail(lease, now, f"its suspended work vanished"
                                       f"{': ' + status.detail if status.detail else ''}")
            elif state == "running" and lease.state is S.SUSPENDING:
                self.note(lease.id, "found running while it should be suspended: suspended")
                self.durable()
                try:
                    self.backend.suspend(lease.id)
                except EnactmentError as exc:
                    sched.fail(lease, now, f"suspending its work failed: {exc}")
