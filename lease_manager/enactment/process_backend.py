"""The ``process`` backend (the daemon's embedded default): each VM is a real local process.

Each VM of a lease runs the lease's command in a shell, as a local process in a session (and
process group) of its own, in the lease's ``workdir`` or else in
``WORK-ROOT/lease-<id>/vm-<index>/`` (``[daemon] work-root``, outside the state folder), with
its output in ``out.log`` and ``err.log`` in ``state-dir/enactment/process/lease-<id>/vm-<index>/``.
A small wrapper shell runs the command and then writes its exit status to the file ``exit``
(atomically), so that the exit code is known
even if the daemon was dead when the command ended.

CPU limits and suspension use cgroups where the machine allows it:

* cgroup v2 (``cgroup.controllers`` at the cgroup root): one group per VM under
  ``lease_manager/``; CPU limit in ``cpu.max``; suspension with ``cgroup.freeze``;
* cgroup v1 (``cpu`` and ``freezer`` hierarchies mounted and writable): one group per VM in
  each; CPU limit in ``cpu.cfs_quota_us``; suspension with ``freezer.state``;
* otherwise (``cgroups = none``, or ``auto`` when no cgroup is usable): no CPU limit, and
  suspension with SIGSTOP/SIGCONT to the VM's process group.

A VM's CPU limit is ``cpu / cpu-per-core`` cores (no limit for a VM of 0 CPU).

What the backend started is recorded in ``lease-<id>/work.json`` (process ids and their start
times, process groups, cgroups, suspended or not), so that a restarted daemon finds the work
again: the processes keep running while the daemon is down.

Stopping sends SIGTERM to the VMs' process groups, and SIGKILL ``stop-grace`` later, from a
timer thread (the caller is never blocked that long).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lease_manager.enactment.base import (
    EnactmentBackend,
    EnactmentError,
    clean_env,
    work_env,
)
from lease_manager.enactment.cgroups import (
    CGROUP_ROOT,
    Cgroups,
    group_pids,
    is_frozen,
    kill_groups,
    remove_groups,
    set_frozen,
)
from lease_manager.enactment.os_processes import (
    group_stopped,
    process_log,
    signal_pids,
    start_time,
    write_json,
)
from lease_manager.enactment.process_options import process_options
from lease_manager.hookspecs import hookimpl

if TYPE_CHECKING:
    import subprocess

    from lease_manager.context import RunContext
    from lease_manager.enactment.work import Work, WorkStatus

class ProcessBackend(EnactmentBackend):
    """Each VM of a lease is a local process running the lease's command."""

    name = "process"

    def __init__(self, ctx: RunContext, *, cgroup_root: Path | str | None = None) -> None:
        super().__init__(ctx)
        config = ctx.config
        self.shell = config.get("process", "shell") or "/bin/sh"
        self.cpu_per_core = float(config.get("process", "cpu-per-core"))
        self.grace = float(config.get("process", "stop-grace"))
        self.cgroups = Cgroups(config.get("process", "cgroups"),
                               Path(cgroup_root) if cgroup_root is not None else CGROUP_ROOT)
        self.root = self.state_dir()
        self.work_root()            # refuses a work root in the state folder at start
        state = Path(config.get("daemon", "state-dir"))
        from lease_manager.enactment.run_as import resolve_run_as  # (not at start-up)
        self.run_as = resolve_run_as(config.get("process", "run-as"),
                                     (state, Path(config.get("daemon", "token-file")
                                                  or state / "token")))
        # keeps the cgroup names of two daemons (two state folders) apart
        self.token = hashlib.sha1(str(self.root.resolve()).encode()).hexdigest()[:8]
        self._lock = threading.RLock()
        from lease_manager.enactment.vm_processes import VmProcesses
        self.vms = VmProcesses()
        #: leases being stopped: lease id -> the timer that SIGKILLs them
        self._timers: dict[int, threading.Timer] = {}
        self._closed = False
        # stops that a previous daemon left unfinished
        for path in sorted(self.root.glob("lease-*/work.json")):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if record.get("state") == "stopping":
                self._schedule_kill(int(record["lease_id"]), record.get("kill_at", 0.0))
        self._sweep_cgroups()

    @property
    def _children(self) -> dict[int, subprocess.Popen]:
        """The VM processes this object started: pid -> Popen (to reap them)."""
        return self.vms.children

    # records ----------------------------------------------------------------------------------
    def _lease_dir(self, lease_id: int) -> Path:
        return self.root / f"lease-{lease_id}"

    def log_files(self, lease_id: int, vms: int) -> list[dict[str, str]]:
        """Each VM's ``out.log`` and ``err.log`` (kept after the lease ends)."""
        lease_dir = self._lease_dir(lease_id).resolve()
        return [{"vm": str(i), "out": str(lease_dir / f"vm-{i}" / "out.log"),
                 "err": str(lease_dir / f"vm-{i}" / "err.log")} for i in range(vms)]

    def _record_path(self, lease_id: int) -> Path:
        return self._lease_dir(lease_id) / "work.json"

    def _load(self, lease_id: int) -> dict | None:
        try:
            record = json.loads(self._record_path(lease_id).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise EnactmentError(f"cannot read the record of lease {lease_id}: {exc}") from None
        if any(vm["pid"] is None for vm in record["vms"]):
            return self._resolve_pids(record)
        return record

    def _resolve_pids(self, record: dict) -> dict | None:
        """Fill in the process ids that a daemon killed while starting the VMs did not record:
        each wrapper wrote its own next to its exit file. A VM without one never started; a
        lease none of whose VMs started has no work (None)."""
        for vm in record["vms"]:
            if vm["pid"] is not None:
                continue
            try:
                pid = int(Path(vm["exit_file"] + ".pid").read_text())
            except (OSError, ValueError):
                process_log().warning("lease %s: VM %s never started", record["lease_id"],
                                      vm["index"])
                remove_groups(vm.get("cgroups", {}), retry=0)
                continue
            vm.update(pid=pid, pgid=pid, start_time=start_time(pid))
        record["vms"] = [vm for vm in record["vms"] if vm["pid"] is not None]
        if not record["vms"]:
            self._drop(record["lease_id"])
            return None
        self._save(record)
        return record

    def _save(self, record: dict) -> None:
        write_json(self._record_path(record["lease_id"]), record)

    def _drop(self, lease_id: int) -> None:
        try:
            self._record_path(lease_id).unlink()
        except FileNotFoundError:
            pass

    # interface --------------------------------------------------------------------------------
    def prepare(self, work: Work) -> None:
        """Nothing to book ahead on the local machine."""

    def start(self, work: Work) -> None:
        with self._lock:
            old = self._load(work.lease_id)
            if old is not None:
                if old.get("state") == "stopping":
                    self._finish_stop(work.lease_id)
                elif any(self.vms.exit_code(vm) is None and self.vms.alive(vm)
                         for vm in old["vms"]):
                    raise EnactmentError(f"lease {work.lease_id} already has running work")
                else:
                    self._cleanup(old)
            record: dict[str, Any] = {"lease_id": work.lease_id, "state": "running",
                                      "end": work.end, "vms": []}
            lease_dir = self._lease_dir(work.lease_id)
            lease_dir.mkdir(parents=True, exist_ok=True)
            try:
                for vm in work.vms:
                    entry = self._prepare_vm(work, vm, lease_dir)
                    record["vms"].append(entry)
                    self._save(record)        # before the process exists: a crash finds it
                    self._spawn_vm(work, vm, entry)
                    self._save(record)
                for vm in record["vms"]:
                    self.vms.wait_joined(vm)
            except BaseException as exc:
                for vm in [vm for vm in record["vms"] if vm["pid"] is None]:
                    remove_groups(vm.get("cgroups", {}), retry=0)   # never started
                    record["vms"].remove(vm)
                self._kill_now(record)
                self._cleanup(record)
                if isinstance(exc, EnactmentError):
                    raise
                if isinstance(exc, OSError):
                    raise EnactmentError(f"cannot start lease {work.lease_id}: {exc}") from None
                raise

    def _prepare_vm(self, work: Work, vm, lease_dir: Path) -> dict:
        """The VM's folder and cgroups, and its record (no process yet: ``pid`` is None)."""
        vm_dir = lease_dir / f"vm-{vm.index}"
        vm_dir.mkdir(parents=True, exist_ok=True)
        exit_file = vm_dir / "exit"
        for stale in (exit_file, vm_dir / "exit.tmp", vm_dir / "exit.pid",
                      vm_dir / "exit.pid.tmp"):
            stale.unlink(missing_ok=True)
        cores = vm.cpu / self.cpu_per_core if vm.cpu > 0 else None
        groups = self.cgroups.create(f"l{work.lease_id}-v{vm.index}-{self.token}", cores)
        return {"index": vm.index, "pid": None, "pgid": None, "start_time": None,
                "exit_file": str(exit_file), "cgroups": groups}

    def _spawn_vm(self, work: Work, vm, entry: dict) -> None:
        """Start the VM's process and complete its record."""
        groups = entry["cgroups"]
        exit_file = Path(entry["exit_file"])
        procs_files = [str(Path(folder) / "cgroup.procs") for folder in set(groups.values())]
        env = {**clean_env(os.environ), **work_env(work, vm)}
        drop = ["", "", ""]
        if self.run_as is not None:
            env.update(self.run_as.env())
            from lease_manager.enactment.run_as import DROP
            drop = [sys.executable, DROP, self.run_as.ids()]
        # never the VM's folder of logs: that is in the state folder, next to the token
        cwd = self.lease_work_dir(work, vm, owner=self.run_as)
        if not cwd.is_dir():   # it was when the lease was requested
            raise EnactmentError(f"cannot start VM {vm.index} of lease {work.lease_id}: its "
                                 f"working folder {cwd} no longer exists")
        env["PWD"] = str(cwd)
        try:
            self.vms.spawn(entry, [self.shell, work.command, str(exit_file), *drop,
                                   *procs_files], cwd, env)
        except OSError as exc:
            raise EnactmentError(f"cannot start VM {vm.index} of lease {work.lease_id}: "
                                 f"{exc}") from None

    def resize(self, work: Work) -> None:
        """Start the processes of VMs the lease gains, stop those of VMs it loses (SIGTERM,
        then SIGKILL after the grace, as :meth:`stop`); the others go on where they are
        (every node is this machine: a VM that moves keeps its process)."""
        import signal

        with self._lock:
            record = self._live_record(work.lease_id, "resize")
            if record.get("state") != "running":
                raise EnactmentError(f"lease {work.lease_id} is not running: it cannot be "
                                     f"resized")
            wanted = {vm.index for vm in work.vms}
            gone = [vm for vm in record["vms"] if vm["index"] not in wanted]
            for vm in gone:
                self.vms.signal(vm, signal.SIGTERM)
                signal_pids(group_pids(vm["cgroups"]), signal.SIGTERM)
            deadline = time.monotonic() + self.grace
            while any(self.vms.live_group(vm) for vm in gone):
                if time.monotonic() >= deadline:
                    for vm in gone:
                        self.vms.signal(vm, signal.SIGKILL)
                        kill_groups(vm.get("cgroups", {}))
                    break
                time.sleep(0.005)
            for vm in gone:
                self.vms.reap(vm["pid"])
                remove_groups(vm.get("cgroups", {}), retry=1.0)
            record["vms"] = [vm for vm in record["vms"] if vm["index"] in wanted]
            record["end"] = work.end
            self._save(record)
            have = {vm["index"] for vm in record["vms"]}
            lease_dir = self._lease_dir(work.lease_id)
            for vm in work.vms:
                if vm.index in have:
                    continue
                entry = self._prepare_vm(work, vm, lease_dir)
                record["vms"].append(entry)
                self._save(record)
                try:
                    self._spawn_vm(work, vm, entry)
                except EnactmentError:
                    record["vms"].remove(entry)
                    remove_groups(entry.get("cgroups", {}), retry=0)
                    self._save(record)
                    raise
                self._save(record)
                self.vms.wait_joined(entry)

    def _live_record(self, lease_id: int, action: str) -> dict:
        record = self._load(lease_id)
        if record is None or record.get("state") == "stopping":
            raise EnactmentError(f"lease {lease_id} has no work to {action}")
        return record

    def suspend(self, lease_id: int) -> None:
        self._pause(lease_id, True)

    def resume(self, lease_id: int) -> None:
        self._pause(lease_id, False)

    def _pause(self, lease_id: int, stop: bool) -> None:
        """Freeze (``stop``) or thaw the lease's VMs: the cgroup freezer where there is one,
        else SIGSTOP / SIGCONT to their process groups."""
        import signal

        action = "suspend" if stop else "resume"
        with self._lock:
            record = self._live_record(lease_id, action)
            try:
                for vm in record["vms"]:
                    if vm["cgroups"].get("freezer"):
                        set_frozen(vm["cgroups"], stop)
                    else:
                        self.vms.signal(vm, signal.SIGSTOP if stop else signal.SIGCONT)
            except OSError as exc:
                raise EnactmentError(f"cannot {action} lease {lease_id}: {exc}") from None
            self._settle(record, stopped=stop)
            record["state"] = "suspended" if stop else "running"
            self._save(record)

    def _settle(self, record: dict, stopped: bool, timeout: float = 0.5) -> None:
        """Signals are delivered asynchronously: wait (briefly) until the processes of the VMs
        suspended by signals show the new state, so that ``status`` right after agrees."""
        deadline = time.monotonic() + timeout
        for vm in record["vms"]:
            if vm["cgroups"].get("freezer"):
                continue
            while time.monotonic() < deadline:
                now_stopped = group_stopped(vm["pid"], vm["pgid"])
                if now_stopped is None or now_stopped == stopped:
                    break
                time.sleep(0.001)

    def stop(self, lease_id: int) -> None:
        import signal

        with self._lock:
            record = self._load(lease_id)
            if record is None or record.get("state") == "stopping":
                return
            for vm in record["vms"]:
                try:
                    set_frozen(vm["cgroups"], False)    # a frozen process can't handle SIGTERM
                except OSError:
                    pass
                self.vms.signal(vm, signal.SIGTERM)
                signal_pids(group_pids(vm["cgroups"]), signal.SIGTERM)
                self.vms.signal(vm, signal.SIGCONT)     # a stopped one neither
            # most commands end at once: then clean up now; else SIGKILL after the grace
            deadline = time.monotonic() + min(self.grace, 0.2)
            while any(self.vms.live_group(vm) for vm in record["vms"]):
                if time.monotonic() >= deadline:
                    record["state"] = "stopping"
                    record["kill_at"] = time.time() + self.grace
                    self._save(record)
                    self._schedule_kill(lease_id, record["kill_at"])
                    return
                time.sleep(0.005)
            self._cleanup(record)

    def _schedule_kill(self, lease_id: int, kill_at: float) -> None:
        if lease_id in self._timers or self._closed:
            return
        timer = threading.Timer(max(0.0, kill_at - time.time()), self._finish_stop, (lease_id,))
        timer.daemon = True
        timer.name = f"lease_manager-process-kill-{lease_id}"
        self._timers[lease_id] = timer
        timer.start()

    def _finish_stop(self, lease_id: int) -> None:
        """SIGKILL what is left of a lease being stopped, and clean up."""
        with self._lock:
            timer = self._timers.pop(lease_id, None)
            if timer is not None and timer is not threading.current_thread():
                timer.cancel()
            record = self._load(lease_id)
            if record is None or record.get("state") != "stopping":
                return
            self._kill_now(record)
            self._cleanup(record)

    def _kill_now(self, record: dict) -> None:
        import signal

        for vm in record["vms"]:
            try:
                set_frozen(vm.get("cgroups", {}), False)
            except OSError:
                pass
            self.vms.signal(vm, signal.SIGKILL)
            kill_groups(vm.get("cgroups", {}))
        deadline = time.monotonic() + 2.0
        while any(self.vms.live_group(vm) for vm in record["vms"]):
            if time.monotonic() >= deadline:
                process_log().warning("lease %s: processes survive SIGKILL", record["lease_id"])
                break
            time.sleep(0.005)

    def _cleanup(self, record: dict) -> None:
        for vm in record["vms"]:
            self.vms.forget(vm["pid"])
            remove_groups(vm.get("cgroups", {}), retry=1.0)
        self._drop(record["lease_id"])

    def refresh(self) -> None:
        with self._lock:
            self.vms.reap_all()
            for lease_id in list(self._timers):
                record = self._load(lease_id)
                if record is None or record.get("kill_at", 0.0) <= time.time():
                    self._finish_stop(lease_id)
            self._sweep_cgroups()

    def _sweep_cgroups(self) -> None:
        """Remove this backend's VM cgroups that no lease owns any more (a removal that gave
        up while the processes were still dying, or a crash between the two): empty ones go,
        busy ones are tried again on the next sweep."""
        suffix = f"-{self.token}"
        owned = {folder for lease_id in self.known_leases()
                 for vm in (self._load(lease_id) or {"vms": []})["vms"]
                 for folder in vm.get("cgroups", {}).values()}
        for parent in self.cgroups.parents.values():
            try:
                children = [c for c in parent.iterdir() if c.is_dir() and c.name.endswith(suffix)]
            except OSError:
                continue
            for child in children:
                if str(child) not in owned:
                    try:
                        child.rmdir()
                    except OSError:
                        pass   # processes remain: next time

    def known_leases(self) -> list[int]:
        ids = []
        for path in self.root.glob("lease-*/work.json"):
            suffix = path.parent.name.partition("-")[2]
            if suffix.isdigit():
                ids.append(int(suffix))
        return sorted(ids)

    def status(self, lease_id: int) -> WorkStatus:
        from lease_manager.enactment.work import WorkStatus

        with self._lock:
            record = self._load(lease_id)
            if record is None:
                return WorkStatus("absent")
            if record.get("state") == "stopping":
                return WorkStatus("absent", detail="being stopped")
            codes: list[int] = []
            live: list[bool] = []       # of each live VM: is it suspended?
            for vm in record["vms"]:
                code = self.vms.exit_code(vm)
                if code is None and not self.vms.alive(vm):
                    code = self.vms.exit_code(vm)     # it may have just written it and ended
                    if code is None:
                        return WorkStatus("vanished", detail=(
                            f"VM {vm['index']} (pid {vm['pid']}) ended without an exit status"))
                if code is not None:
                    codes.append(code)
                    continue
                frozen = is_frozen(vm["cgroups"])
                if frozen is None:
                    frozen = bool(group_stopped(vm["pid"], vm["pgid"]))
                live.append(frozen)
            if not live:
                return WorkStatus("exited", next((c for c in codes if c != 0), 0))
            if all(live):
                return WorkStatus("suspended")
            if not any(live):
                return WorkStatus("running")
            return WorkStatus(record["state"], detail="some VMs are suspended, some are not")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            # leases asked to stop are ended now; the others keep running
            for lease_id in list(self._timers):
                self._finish_stop(lease_id)
            self.vms.reap_all()
            self.vms.children.clear()


@hookimpl
def register_policies():
    return [ProcessBackend]


@hookimpl
def register_options():
    return process_options()
