"""The daemon: one run of the scheduler on the real clock, fed by the API, kept in SQLite,
carried out by an enactment backend, and rebuilt from the database when it restarts."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lease_manager.config.core_options import MAX_SPEEDUP
from lease_manager.config.schema import Config, load_config
from lease_manager.context import RunContext
from lease_manager.daemon.dashboard import SiteView
from lease_manager.daemon.driver import EnactmentDriver
from lease_manager.daemon.lease_requests import build_lease
from lease_manager.daemon.refusals import DaemonStopping
from lease_manager.daemon.restore import Restorer
from lease_manager.daemon.sessions import DashboardAccess
from lease_manager.daemon.state_folder import (
    load_token,
    lock_state_dir,
    refuse_loose_mode,
    write_daemon_file,
)
from lease_manager.daemon.store import Store
from lease_manager.enactment.base import NumberedNodes
from lease_manager.errors import LeaseManagerError
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.clock import RealClock
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.timeutil import LAST_INSTANT
from lease_manager.multisite import refuse_sites_in_the_daemon
from lease_manager.observers.accounting import write_summary
from lease_manager.plugins import DAEMON_PLUGIN, Plugins
from lease_manager.run import Run, vm_vector

log = logging.getLogger("lease_manager.daemon")
S = LeaseState
#: wall-clock seconds a daemon must be able to run, at its speed-up, before its clock would
#: pass 9999-12-31T23:59:59Z (``LAST_INSTANT``): a clock (or a stored anchor) that gets there
#: sooner is refused; at the largest speed-up, 1e6, a day is about 2,700 years of schedule
CLOCK_HORIZON = 86400.0


class _Call:
    """An API call's answer, handed from the engine thread to the API thread that waits for
    it: one lock, released once the answer is in (a ``Future`` allocates two locks a call
    and makes the woken thread take its condition's lock back from the engine)."""

    __slots__ = ("_waiting", "_answer", "_error", "_set")

    def __init__(self) -> None:
        self._waiting = threading.Lock()
        self._waiting.acquire()
        self._answer: Any = None
        self._error: BaseException | None = None
        self._set = False

    def done(self) -> bool:
        return self._set

    def set_result(self, answer: Any) -> None:
        self._answer = answer
        self._settle()

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._settle()

    def _settle(self) -> None:
        if not self._set:
            self._set = True
            self._waiting.release()

    def result(self, timeout: float) -> Any:
        """The answer (or the error raised), waiting ``timeout`` seconds at most for it
        (``TimeoutError``)."""
        if not self._waiting.acquire(timeout=timeout):
            raise TimeoutError
        if self._error is not None:
            raise self._error
        return self._answer


class DaemonObserver:
    """The daemon's own hook implementations (plugin ``lease_manager.daemon``): persist every
    change, answer API calls once the scheduling cycle that follows them is over."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def _before_change(self, lease: Lease) -> None:
        """A lease whose start waits (:meth:`EnactmentDriver.flush`) gets it before its row
        changes again: the backend's start always follows the row that says so."""
        if lease.id in self.daemon.driver.deferred:
            self.daemon.driver.flush()

    @hookimpl
    def lease_state_changed(self, ctx: RunContext, lease: Lease, old: LeaseState,
                            now: float) -> None:
        d = self.daemon
        self._before_change(lease)
        d.view.changed(lease)
        fresh = (lease.state is S.ACTIVE and old is S.SCHEDULED and not lease.image_nodes
                 and not d.restoring)
        d.store.update(lease, now, old=None if d.restoring else old.value, started=fresh)
        if old is S.SCHEDULED and lease.state is S.QUEUED and not lease.image_nodes:
            d.driver.release(lease)   # its plan was given up: so are its bookings

    @hookimpl
    def lease_scheduled(self, ctx: RunContext, lease: Lease, now: float) -> None:
        d = self.daemon
        self._before_change(lease)
        d.view.changed(lease)
        d.store.update(lease, now)
        if not d.restoring:
            d.driver.prepare(lease, now)

    @hookimpl
    def lease_preempted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._before_change(lease)
        self.daemon.view.changed(lease)
        self.daemon.store.update(lease, now)
        self.daemon.store.log(lease.id, now, lease.state.value, "preempted")

    @hookimpl
    def lease_resized(self, ctx: RunContext, lease: Lease, old_nodes: int, old_vms: int,
                      now: float) -> None:
        self._before_change(lease)
        self.daemon.view.changed(lease)
        self.daemon.store.update(lease, now)
        self.daemon.store.log(lease.id, now, lease.state.value,
                              f"resized: {lease.vms.count} VMs on "
                              f"{len(lease.reservations[0].nodes)} nodes (was {old_vms} on "
                              f"{old_nodes})")

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.daemon.leases.pop(lease.id, None)   # the database keeps it; memory need not
        self.daemon.view.lease_ended(lease)

    @hookimpl
    def lease_rejected(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.daemon.leases.pop(lease.id, None)
        self.daemon.view.lease_ended(lease)     # (it has no bars: nothing is kept of it)

    @hookimpl
    def scheduling_cycle_end(self, ctx: RunContext, now: float) -> None:
        self.daemon._answer_pending()


class Daemon:
    """``lease-manager serve``: build with a configuration, then :meth:`serve_forever`."""

    def __init__(self, config_path: str | Path | None, overrides: tuple[str, ...] = (), *,
                 plugins: Plugins | None = None) -> None:
        self.plugins = plugins or Plugins()
        self.plugins.pm.register(DaemonObserver(self), name=DAEMON_PLUGIN)
        self.config: Config = load_config(config_path, self.plugins.schema, overrides)
        refuse_sites_in_the_daemon(self.config)
        cfg = self.config
        self.state_dir = Path(cfg.get("daemon", "state-dir")).resolve()
        self._lock = self._lock_state_dir()
        self.store = Store(self.state_dir / "leases.db", sync=cfg.get("daemon", "sync"))
        self.token = load_token(self.token_path())
        #: the dashboard's one-time codes and sessions, and its view of the site
        self.access = DashboardAccess()
        self.view = SiteView(self)
        self.restoring = False
        self.clock = self._clock()
        self.backend: Any = None
        self.driver: EnactmentDriver
        self.run = self._build_run()
        self.default_vm: Any = vm_vector(cfg, self.run.nodes)
        self._pending: list[tuple[_Call, Callable[[], Any]]] = []
        #: the API calls in flight (failed at once if the daemon stops)
        self._calls: set[_Call] = set()
        #: live leases by id (finished ones leave when they end)
        self.leases: dict[int, Lease] = {}
        self._stopping: threading.Event = threading.Event()
        #: set once the leases are restored: until then the API answers 503
        self.ready: threading.Event = threading.Event()
        self.server: Any = None
        self.url: str | None = None
        #: Haizea's XML-RPC endpoint (``[daemon] haizea-rpc``), when on
        self.haizea_rpc: Any = None
        #: what the invariant check at shutdown found wrong (None: nothing)
        self.violation: str | None = None

    # ------------------------------------------------------------------------ set-up
    def _lock_state_dir(self) -> Any:
        """Make the state folder (private) and hold its lock; a loose mode on it or on the
        token file, or a speed-up at which the clock would soon pass 9999-12-31, is refused
        first."""
        cfg = self.config
        try:
            # private: the database holds users' commands, the folder the API token
            self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise cfg.error("daemon", "state-dir",
                            f"cannot create {self.state_dir}: {exc.strerror}") from None
        refuse_loose_mode(self.state_dir, 0o700)
        refuse_loose_mode(self.token_path(), 0o600)     # before the state folder is locked
        speedup = cfg.get("simulation", "speedup")
        if time.time() + CLOCK_HORIZON * speedup > LAST_INSTANT:
            raise cfg.error("simulation", "speedup",
                            f"{speedup:g}: the clock would pass 9999-12-31 within "
                            f"{CLOCK_HORIZON:g} wall seconds; use a smaller speed-up")
        return lock_state_dir(self.state_dir)

    def _build_run(self) -> Run:
        """The run on the real clock, with the enactment backend ``[daemon] enactment``
        behind its driver (a backend that cannot keep a lease suspended is refused unless
        ``suspension = none``)."""
        cfg = self.config
        backend_name = cfg.get("daemon", "enactment")

        def enactment(run: Run) -> EnactmentDriver:
            self.backend = self.plugins.policy("enactment", backend_name)(run.ctx)
            names = getattr(self.backend, "node_names", None)
            names = names() if callable(names) else NumberedNodes(len(run.nodes.capacity))
            self.driver = EnactmentDriver(run, self.backend, names, note=self._note,
                                          handed_over=self.store.handed_over,
                                          durable=self.store.commit)
            return self.driver

        run = Run(cfg, self.plugins, leases=(), clock=self.clock, serve=True,
                  enactment=enactment)
        assert self.backend is not None   # the run built it (enactment above)
        if not self.backend.can_suspend and cfg.get("scheduling", "suspension") != "none":
            run.close()
            raise cfg.error("scheduling", "suspension",
                            f"the {backend_name} backend cannot keep a lease suspended while "
                            f"an advance reservation uses its resources: set suspension = none "
                            f"(preempted leases are then stopped and requeued)")
        return run

    def token_path(self) -> Path:
        configured = self.config.get("daemon", "token-file")
        return Path(configured) if configured else self.state_dir / "token"

    def _clock(self) -> RealClock:
        """The real clock in epoch seconds, sped up ``[simulation] speedup`` times; after a
        restart it carries on from where the last run's clock would be now."""
        speedup = self.config.get("simulation", "speedup")
        wall = time.time()
        start = self._clock_from_anchor(self.store.meta("clock"), wall, speedup)
        self.store.set_meta("clock", json.dumps({"clock": start, "wall": wall,
                                                 "speedup": speedup}))
        return RealClock(start=start, speedup=speedup)

    def _clock_from_anchor(self, anchor: str | None, wall: float, speedup: float) -> float:
        """Where the last run's clock would be now, from its stored anchor; the wall time if
        there is none, or if the anchor is not valid or would reach 9999-12-31 within
        ``CLOCK_HORIZON`` wall seconds at this run's ``speedup`` (then with a warning: the
        state folder stays usable whatever an earlier run stored)."""
        if anchor is None:
            return wall
        try:
            a = json.loads(anchor)
            clock, then, speedup = (float(a["clock"]), float(a["wall"]), float(a["speedup"]))
            start = clock + (wall - then) * speedup
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            why = f"unreadable ({type(exc).__name__})"
        else:
            if not all(map(math.isfinite, (clock, then, speedup, start))):
                why = "not finite"
            elif not 0 < speedup <= MAX_SPEEDUP:
                why = f"speed-up {speedup:g} out of range"
            elif not 0 <= start <= LAST_INSTANT:
                why = "a time outside years 1970-9999"
            elif start + CLOCK_HORIZON * speedup > LAST_INSTANT:
                why = (f"so late that at speed-up {speedup:g} the clock would pass 9999-12-31 "
                       f"within {CLOCK_HORIZON:g} wall seconds")
            else:
                return start
        log.warning("%s: the stored clock anchor is %s; the clock starts from the wall time",
                    self.store.path, why)
        return wall

    # ---------------------------------------------------------------------- engine side
    def call(self, fn: Callable[[float], Callable[[], Any]], timeout: float = 60.0) -> Any:
        """Run ``fn(now)`` on the engine thread (from an API thread) and return what the
        callable it returns gives once the scheduling cycle after it is over."""
        if self._stopping.is_set():
            raise DaemonStopping("the daemon is stopping")
        future = _Call()

        def step(now: float) -> None:
            try:
                answer = fn(now)
            except BaseException as exc:   # handed to the API thread, which reports it
                self.store.commit()        # what it changed before it failed is kept
                future.set_exception(exc)
                return
            self._pending.append((future, answer))

        self._calls.add(future)
        try:
            self.run.engine.post(step)
            return future.result(timeout=timeout)
        finally:
            self._calls.discard(future)

    def _answer_pending(self) -> None:
        """Answer the calls of this step once their changes are durable: the step's changes
        are one transaction (a group commit), committed here before the first answer (after
        the cycle's starts, which share the commit before them). The backend's hand-over
        marks of those starts, which no answer shows, are committed at the step's end, after
        the answers (:meth:`Store.commit_shown`)."""
        self.driver.flush()
        self.store.commit_shown()
        pending, self._pending = self._pending, []
        for future, answer in pending:
            try:
                future.set_result(answer())
            except BaseException as exc:
                future.set_exception(exc)

    def submit(self, requests: list[dict], now: float, *,
               key: tuple[str, str, bool] | None = None) -> list[Lease]:
        """Record normalised requests, and the idempotency ``key`` (key, body hash, single)
        that makes them, in one transaction; then hand them to the scheduler (engine
        thread). A crash leaves either all of it or nothing: a key never names ids that other
        leases could take later."""
        first = self.store.next_id()
        leases = []
        for i, request in enumerate(requests):
            lease = build_lease(first + i, request, self.run.nodes)
            lease.submit = now
            leases.append(lease)
        self.store.insert(list(zip(leases, requests)), now, key=key)
        for lease in leases:
            self.leases[lease.id] = lease
            self.run.site_scheduler.submit(lease, now)
        return leases

    def _note(self, lease_id: int, text: str) -> None:
        lease = self.leases.get(lease_id)
        if lease is not None:
            state = lease.state.value
        else:
            row = self.store.lease(lease_id, self.store.db)   # with this step's changes
            state = row["state"] if row is not None else "?"
        self.store.log(lease_id, self.clock.now(), state, text)

    def find(self, lease_id: int) -> Lease | None:
        """The live lease object with this id (None if unknown or finished)."""
        return self.leases.get(lease_id)

    # --------------------------------------------------------------------------- restore
    def restore(self) -> dict[str, int]:
        """Rebuild the slot table and queue from the database and reconcile with the
        backend (:class:`~lease_manager.daemon.restore.Restorer`); returns how many leases
        were found running, planned, queued, failed and finished."""
        return Restorer(self).restore()

    # ----------------------------------------------------------------------------- serve
    def serve_forever(self, *, ready: Callable[[Daemon], None] | None = None,
                      install_signals: bool = True) -> None:
        """Restore, start the API and the reconciliation loop, and run the engine until
        SIGTERM/SIGINT or :meth:`stop`."""
        from lease_manager.daemon.haizea_rpc import stop_haizea_rpc

        self.run.start()
        info = self._start_servers()
        try:
            counts = self.restore()
        except BaseException:
            self.server.shutdown()
            self.server.server_close()
            stop_haizea_rpc(self.haizea_rpc)
            (self.state_dir / "daemon.json").unlink(missing_ok=True)
            raise
        if any(counts.values()):
            log.info("restored from %s: %s", self.store.path,
                     ", ".join(f"{n} {what}" for what, n in counts.items() if n))
        else:
            log.info("no leases to restore in %s", self.store.path)
        self.ready.set()
        write_daemon_file(self.state_dir / "daemon.json", {**info, "ready": True})
        if install_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda signum, frame: self.stop())
        reconciler = threading.Thread(target=self._reconcile_loop, name="lm-reconcile",
                                      daemon=True)
        reconciler.start()
        # each engine step's changes are one transaction, committed before the step's answers
        # and backend calls (_answer_pending, EnactmentDriver.durable) and at its end
        self.run.engine.before_step.insert(0, lambda now: self.store.group())
        self.store.checkpoint_in_background()
        self.driver.defer_starts = True
        self.run.engine.after_step.append(self._end_step)
        if ready is not None:
            ready(self)
        try:
            self.run.engine.run()
        finally:
            self._shut_down()

    def _start_servers(self) -> dict[str, Any]:
        """Start the API (it answers 503 with Retry-After until the leases are back) and,
        if on, Haizea's XML-RPC; write ``daemon.json`` (not ready yet) and return what it
        says."""
        from lease_manager.daemon.api import start_api
        from lease_manager.daemon.haizea_rpc import start_haizea_rpc

        self.server, self.url = start_api(self)
        info = {"url": self.url, "pid": os.getpid(),
                "token_file": str(self.token_path().resolve())}
        if self.config.get("daemon", "haizea-rpc"):    # Haizea's clients (opt-in)
            self.haizea_rpc, info["haizea_rpc_url"] = start_haizea_rpc(self)
        write_daemon_file(self.state_dir / "daemon.json", {**info, "ready": False})
        return info

    def _shut_down(self) -> None:
        """After the engine stopped: fail the calls it will never answer, stop the servers,
        finish the run (summary, invariants) and let the state folder go."""
        from lease_manager.daemon.haizea_rpc import stop_haizea_rpc

        self._stopping.set()
        self._commit_quietly()
        self.server.shutdown()
        self.server.server_close()
        stop_haizea_rpc(self.haizea_rpc)
        for future in list(self._calls):   # calls the engine will never answer now
            if not future.done():
                future.set_exception(DaemonStopping("the daemon is stopping"))
        self._pending = []
        self._finish_run()
        self.backend.close()
        self.store.close()
        self._verify_invariants()
        self.run.close()
        self._lock.close()
        (self.state_dir / "daemon.json").unlink(missing_ok=True)

    def _end_step(self, now: float) -> None:
        """Hand the backend the starts still waiting, and commit the step."""
        self.driver.flush()
        self.store.ungroup()

    def _commit_quietly(self) -> None:
        """Keep what a step that failed had changed (as if each change were committed at
        once), and go back to a transaction a change for the shutdown. Starts a failed step
        left waiting are not made: their rows say ``starting``, which a restart checks with
        the backend, as after a crash."""
        self.driver.defer_starts = False
        if self.driver.deferred:
            log.error("the last step failed before %d starts reached the backend",
                      len(self.driver.deferred))
            self.driver.deferred.clear()
        try:
            self.store.ungroup()
        except Exception as exc:    # the step's own error is the one to report
            log.error("the last step's changes could not be stored: %s", exc)

    def _finish_run(self) -> None:
        """``run_finished`` and ``collect_summary``, as at the end of a replay; the summary of
        this run of the daemon goes to ``state-dir/summary.json``."""
        try:
            summary = self.run.finish()
        except LeaseManagerError as exc:
            log.error("the run's summary failed: %s", exc)
            return
        write_summary(self.state_dir / "summary.json", summary)

    def _verify_invariants(self) -> None:
        """Check that no node was over-committed by the leases that ended in this run of the
        daemon (``[accounting] check-invariants``); a violation is logged and kept."""
        checker = self.run.invariants
        if checker is None:
            return
        try:
            checker.verify()
        except AssertionError as exc:
            self.violation = str(exc)
            log.error("invariant violated: %s", exc)

    def _reconcile_loop(self) -> None:
        interval = self.config.get("daemon", "reconcile-interval")
        while not self._stopping.wait(interval):
            self.run.engine.post(self.driver.reconcile)

    def stop(self) -> None:
        """Stop after the current step (any thread, or a signal handler)."""
        self._stopping.set()
        self.run.engine.stop()


