"""A restarted daemon takes its leases back from the database: running work found running
is taken back, work that vanished fails its lease, planned leases are planned again and
queued ones queued in their order; leftover work of the backend is stopped."""

from __future__ import annotations

import json
import logging
import math
from typing import TYPE_CHECKING, Any

from lease_manager.daemon.lease_requests import RequestError, build_lease, check_stored
from lease_manager.errors import LeaseManagerError, OvercommitError
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType

if TYPE_CHECKING:
    from lease_manager.daemon.service import Daemon

log = logging.getLogger("lease_manager.daemon")
S = LeaseState
RUNNING_STATES = ("active", "suspending", "resuming", "migrating")


class Restorer:
    """Restores one daemon's leases (:meth:`restore`), once, before the API answers."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.store = daemon.store
        self.backend = daemon.backend
        self.driver = daemon.driver
        self.scheduler = daemon.run.site_scheduler
        self.nodes = daemon.run.nodes

    def restore(self) -> dict[str, int]:
        """Rebuild the slot table and queue from the database and reconcile with the
        backend: running work found running is taken back, work that vanished fails its lease,
        planned leases are planned again and queued ones queued in their order."""
        now = self.daemon.clock.now()
        counts = {"running": 0, "planned": 0, "queued": 0, "failed": 0, "finished": 0}
        rows = list(self.store.unfinished())
        if rows:
            self.backend.refresh()
        later: list[tuple[Lease, Any]] = []
        unstarted: dict[int, Lease] = {}    # their recorded start never reached the backend
        self.daemon.restoring = True
        try:
            for row in rows:                    # running work first: it holds its nodes
                try:
                    lease = self._lease_of(row)
                    misfit = self._misfit(lease, row)
                except RequestError as exc:     # an edited or damaged row: it fails alone
                    misfit = f"its stored request is invalid ({exc})"
                if misfit:                      # ... and so does one the site no longer fits
                    self._fail_stored(row, misfit, now)
                    counts["failed"] += 1
                    continue
                self.daemon.leases[lease.id] = lease
                if row["state"] in RUNNING_STATES:
                    outcome = self._restore_running(lease, row, now)
                    if outcome != "unstarted":
                        counts[outcome] += 1
                        continue
                    unstarted[lease.id] = lease
                later.append((lease, row))
            for lease, row in later:            # then leases with a time of their own
                if (row["state"] == "scheduled" or lease.id in unstarted) \
                        and lease.type is not LeaseType.BEST_EFFORT and not lease.image_nodes:
                    counts[self._restore_planned(lease, now)] += 1
            for lease, row in later:            # then the queue, in submission order
                if lease.state is S.NEW:
                    counts[self._restore_queued(lease, row, now)] += 1
            for lease_id, lease in unstarted.items():
                self.store.log(lease_id, now, lease.state.value,
                               "its start had not reached the backend when the daemon "
                               "stopped: it waits for its start again")
        finally:
            self.daemon.restoring = False
        running = self.scheduler.running
        for lease_id in self.backend.known_leases():
            known = self.daemon.find(lease_id)
            if known is None:                   # work of a lease that is over: clean up
                self._stop_quietly(lease_id)
            elif lease_id not in running and not known.image_nodes and \
                    self.backend.status(lease_id).state not in ("planned", "absent"):
                # work of a lease queued again (preempted, losing it) before it was stopped
                self._stop_quietly(lease_id)
                self.store.log(lease_id, now, known.state.value,
                               "work left over from before it was queued again: stopped")
        self.scheduler.cycle(now)               # the queue gets its plans before any answer
        for lease in list(self.scheduler.future.values()):
            self.driver.prepare(lease, now)     # a backend that books ahead books again
        return counts

    def _lease_of(self, row: Any) -> Lease:
        """The lease of a stored row, its request checked with the API's bounds (raises
        :class:`RequestError`)."""
        try:
            request = json.loads(row["request"])
        except ValueError:
            raise RequestError("request", "is not JSON") from None
        try:
            check_stored(request, self.nodes, self.daemon.plugins.extra_attributes)
        except (KeyError, TypeError) as exc:
            raise RequestError("request", f"malformed ({type(exc).__name__}: {exc})") from None
        for field in ("submit", "work_done", "start", "price", "time_suspended",
                      "suspended_at"):
            value = row[field]
            if value is not None and not (isinstance(value, (int, float))
                                          and math.isfinite(value)):
                raise RequestError(field, f"{value!r} is not a finite number")
        lease = build_lease(row["id"], request, self.nodes)
        lease.submit = row["submit"]
        lease.work_done = row["work_done"]
        lease.start = row["start"]
        lease.price = row["price"]
        lease.preemptions = row["preemptions"]
        lease.suspensions = row["suspensions"]
        lease.time_suspended = row["time_suspended"]
        lease.suspended_at = row["suspended_at"]
        lease.image_nodes = tuple(json.loads(row["image_nodes"]))
        return lease

    def _fail_stored(self, row: Any, reason: str, now: float) -> None:
        """Fail the stored lease of ``row`` alone, with one logged line: the others restore."""
        log.warning("%s: lease %s: %s; the lease fails", self.store.path, row["id"], reason)
        self._stop_quietly(row["id"])
        self.store.end(row["id"], row["state"], "failed", reason, now)

    def _misfit(self, lease: Lease, row: Any) -> str:
        """Why ``lease`` no longer fits the site the daemon now runs (restarted with fewer
        nodes or other resources), or "": a VM larger than every node, or running work or
        memory images on nodes the site has no more. A restart with fewer nodes than its
        running leases held once stopped every restore with an IndexError."""
        nodes = self.nodes.count
        try:
            plan = json.loads(row["plan"]) if row["state"] in RUNNING_STATES else []
            held = [int(n) for seg in plan[:1] for n in seg["vm_nodes"]]
        except (ValueError, KeyError, TypeError) as exc:
            return f"its stored plan could not be read ({type(exc).__name__})"
        gone = sorted({n for n in (*held, *lease.image_nodes) if not 0 <= n < nodes})
        if gone:
            return (f"it held node(s) {', '.join(str(n + 1) for n in gone[:5])} that the site "
                    f"no longer has (it has {nodes} nodes now)")
        oversize = self.scheduler.oversize_reason(lease)
        return f"after a restart on another site it is {oversize}" if oversize else ""

    def _finish_offline(self, lease: Lease, row: Any, state: str, reason: str,
                        now: float) -> str:
        """End a lease whose work ended while the daemon was down."""
        self._stop_quietly(lease.id)
        self.store.end(lease.id, row["state"], state, reason, now)
        self.daemon.leases.pop(lease.id, None)
        return "failed" if state == "failed" else "finished"

    def _restore_running(self, lease: Lease, row: Any, now: float) -> str:
        plan = json.loads(row["plan"])
        status = self.backend.status(lease.id)
        segment = plan[0] if plan else None
        if row["starting"]:
            if status.state == "absent":
                # the daemon stopped between recording a start and handing over its work:
                # nothing ran, so the lease is scheduled again as if it had not started
                self.store.unstart(lease.id, now)
                if row["starts"] <= 1:
                    lease.start = None
                return "unstarted"
            self.store.handed_over(lease.id)  # the backend has it: the start happened
        if status.state == "exited":
            if status.exit_code:
                return self._finish_offline(lease, row, "failed", f"its command exited with "
                                            f"status {status.exit_code} while the daemon was "
                                            f"down", now)
            return self._finish_offline(lease, row, "done", "finished while the daemon was "
                                        "down", now)
        if status.state in ("vanished", "absent") or segment is None:
            return self._finish_offline(lease, row, "failed", "its work vanished while the "
                                        "daemon was down" + (f": {status.detail}"
                                                             if status.detail else ""), now)
        if row["state"] == "active":
            lease.work_done += max(0.0, now - segment["start"])
            over = ((lease.start_request or 0.0) + lease.requested_duration <= now
                    if lease.type is LeaseType.ADVANCE_RESERVATION
                    else lease.remaining_requested <= 0)
            if over:
                return self._finish_offline(lease, row, "done", "its time ran out while the "
                                            "daemon was down", now)
            self.driver.adopting = True
            try:
                self.scheduler.restore_running(lease, tuple(segment["vm_nodes"]), now)
            except OvercommitError as exc:
                self.driver.adopting = False
                return self._finish_offline(lease, row, "failed", f"its nodes could not be "
                                            f"taken back after a restart: {exc}", now)
            finally:
                self.driver.adopting = False
            if status.state == "suspended":
                self.backend.resume(lease.id)
            self.store.log(lease.id, now, "active", "found running after a restart")
            return "running"
        # suspending, resuming or migrating: it ends up suspended, waiting to resume
        if status.state == "running":
            self.backend.suspend(lease.id)
        vm_nodes = tuple(segment["vm_nodes"]) or lease.image_nodes
        if lease.suspended_at is None:
            lease.suspended_at = now
        self.scheduler.restore_queued(lease, vm_nodes)
        self.store.log(lease.id, now, "queued", "found suspended after a restart")
        return "queued"

    def _restore_planned(self, lease: Lease, now: float) -> str:
        start = lease.start_request
        if (lease.type is LeaseType.ADVANCE_RESERVATION and start is not None
                and start < now):
            end = start + lease.requested_duration
            lease.requested_duration = end - now   # what is left of its interval
            lease.start_request = now
        self.scheduler.restore_planned(lease, now)
        if lease.state is S.FAILED:
            return "failed"
        self.store.log(lease.id, now, lease.state.value, "planned again after a restart")
        return "planned"

    def _restore_queued(self, lease: Lease, row: Any, now: float) -> str:
        sched = self.scheduler
        if row["state"] == "new":       # the crash came before the scheduler saw it
            self.daemon.restoring = False
            try:
                sched.submit(lease, now)
            finally:
                self.daemon.restoring = True
            return "queued"
        if lease.image_nodes:
            status = self.backend.status(lease.id)
            if status.state != "suspended":
                return self._finish_offline(lease, row, "failed", f"its suspended work is gone "
                                            f"({status.state})", now)
        sched.restore_queued(lease, lease.image_nodes)
        return "queued"

    def _stop_quietly(self, lease_id: int) -> None:
        try:
            self.backend.stop(lease_id)
        except LeaseManagerError as exc:
            log.warning("lease %s: stopping its leftover work failed: %s", lease_id, exc)
