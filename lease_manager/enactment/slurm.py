"""The ``slurm`` backend: each lease becomes a Slurm advance reservation with a batch job in it.

This is how a site that outgrows one machine uses lease_manager: Slurm runs the cluster,
lease_manager decides the leases. Tested against Slurm 22.05 (Debian 12's ``slurm-wlm``).

Mapping
-------
- **Lease → reservation** ``lm-<lease id>`` (``[slurm] name-prefix``), created by
  :meth:`SlurmBackend.prepare` with ``scontrol create reservation``: ``Nodes=`` the distinct
  Slurm nodes of the lease's VMs, ``CoreCnt=`` one count per node (22.05 takes a list matching
  ``Nodes=``): the sum over the node's VMs of ``ceil(VM CPU / cpu-unit)`` (at least one core per
  VM, so fractional VMs get whole cores), ``Users=`` (``[slurm] user``, default the daemon's
  user), optional ``Accounts=`` and ``PartitionName=``. No ``Flags``: in particular not
  ``IGNORE_JOBS``, so Slurm refuses a reservation that collides with other work, and the lease
  fails with Slurm's reason.
- **Times**: ``[work.start, work.end)`` in whole seconds, both rounded down (rounding a start
  down and an end up would make back-to-back leases overlap by a second, which Slurm refuses
  on the same cores); a start already past becomes now. ``scontrol`` parses
  ``YYYY-MM-DDTHH:MM:SS`` in *its own* process's local time zone, so the backend runs it with
  ``TZ=UTC`` and writes UTC times: this is exact whatever the machine's zone and across
  daylight-saving changes.
- **Re-planning**: a later ``prepare`` updates the reservation's times in place
  (``scontrol update``); Slurm cannot change the cores of a core-based reservation, so a new
  placement deletes and re-creates it (only while no job runs in it: moving running work,
  i.e. migration, is not supported and raises :class:`EnactmentError`).
- **Work → batch job** ``lm-<lease id>`` submitted by :meth:`SlurmBackend.start` into the
  reservation (``sbatch --parsable --reservation --job-name -N --nodelist -n <cores>``), so the
  job gets exactly the reserved cores. Its script runs each VM's command once as a job step
  (``srun -N1 -n1 -c <VM cores> -w <node> --exact``) with ``work_env`` (``LM_LEASE_ID``,
  ``LM_VM_INDEX``, ``LM_NODE``, ``LM_LEASE_END`` and the lease's env); an empty command holds
  the allocation with ``sleep`` until the lease's end. The script writes the first non-zero
  exit code (by VM order; else 0) to ``lm-<id>.<job id>.exit`` in ``[slurm] job-dir`` and exits
  with it; the job's output is ``lm-<id>.<job id>.out`` there.
- **Time limit**: ``--time`` is in whole minutes, rounded up; Slurm kills jobs at their
  reservation's end anyway. Because a running job whose end estimate passes its reservation's
  end blocks new reservations on its cores ("Requested nodes are busy"), the backend sets the
  running job's ``EndTime`` to one second before the reservation's end: right after the
  start, when a new plan moves the end, and in :meth:`status` when a resume pushed it later.
  So Slurm ends the job (``TIMEOUT``) a second before the lease's end at the latest, if the
  daemon has not stopped it first; that counts as ``exited`` 0.
- **Suspend/resume**: ``scontrol suspend|resume <job id>`` (needs Slurm operator rights, as
  creating reservations does). A suspended Slurm job keeps its cores, and its reservation
  cannot end without Slurm ending the job, so an advance reservation could never get those
  cores: the backend says it cannot suspend (``can_suspend = False``) and the daemon asks for
  ``[scheduling] suspension = none``, under which a preempted lease is stopped and requeued.
- **Stop**: ``scancel`` the job and ``scontrol delete ReservationName=``; absent ones are fine.
- **Node power** (with a ``[power]`` model that switches nodes off): ``scontrol update
  NodeName= State=POWER_DOWN`` and ``State=POWER_UP``, Slurm's power saving, which runs the
  cluster's ``SuspendProgram`` and ``ResumeProgram`` (Slurm refuses without them).
- **Status** from ``squeue --json`` (22.05's ``squeue --json`` works with Debian's
  packages; it ignores ``--name``, so the jobs are filtered here) and
  ``scontrol -o show reservation`` (22.05 has no ``scontrol --json``):

  ============================================  =========================================
  Slurm                                          :class:`WorkStatus`
  ============================================  =========================================
  no job, reservation exists                     ``planned``
  job PENDING/CONFIGURING/RUNNING/COMPLETING     ``running`` (the detail says if pending)
  job SUSPENDED                                  ``suspended``
  job COMPLETED/FAILED                           ``exited``, the script's exit code
  job TIMEOUT at the reservation's end           ``exited`` 0 (the lease ran to its end)
  job CANCELLED/TIMEOUT earlier/NODE_FAIL/...    ``vanished``
  job gone from squeue (after ``MinJobAge``)     ``exited`` from the exit-code file, else
                                                 ``vanished``
  nothing                                        ``absent``
  ============================================  =========================================

  Without slurmdbd there is no ``sacct``, hence the exit-code file: ``job-dir`` must be on a
  file system shared by the daemon and the nodes (true on one host). If it is not, an exit is
  still seen while the job is in ``squeue`` (``MinJobAge``, 300 s by default).

What the backend keeps of its own: ``leases.json`` in its state folder (job id, planned end
and placement of each lease), so that a restarted daemon tells "vanished" from "absent"; the
Slurm names alone find the reservation and the job again.

Not supported: migration (moving a lease's work to other nodes), memory reservations (Slurm
reservations hold cores, not memory; ``request-memory`` only adds ``--mem`` to the job), GPUs.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lease_manager.enactment.base import (
    EnactmentBackend,
    EnactmentError,
    node_names,
)
from lease_manager.enactment.slurm_commands import (
    SlurmCommands,
    batch_script,
    shell_exit_code,
    slurm_time,
    whole_seconds,
)
from lease_manager.enactment.slurm_options import slurm_options
from lease_manager.hookspecs import hookimpl

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.enactment.work import Work, WorkStatus

#: Slurm job states that mean the job is (about to be) running
_LIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "RESIZING", "REQUEUED",
         "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"}
#: states of a job that has not ended (COMPLETING has: it is cleaning up)
_UNFINISHED = (_LIVE - {"COMPLETING"}) | {"SUSPENDED"}
#: how close (seconds) to the planned end a TIMEOUT counts as "ran to its end"
_END_TOLERANCE = 5.0


class SlurmBackend(EnactmentBackend):
    """Each lease is a Slurm advance reservation with one batch job in it (see the module doc)."""

    name = "slurm"
    can_suspend = False

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        cfg = ctx.config
        self.prefix = cfg.get("slurm", "name-prefix")
        self.partition = cfg.get("slurm", "partition")
        if not (user := cfg.get("slurm", "user")):
            import getpass  # (loaded by Slurm's runs only: start-up)

            user = getpass.getuser()
        self.user = user
        self.account = cfg.get("slurm", "account")
        self.timeout = float(cfg.get("slurm", "commands-timeout"))
        self.bin_dir = cfg.get("slurm", "bin-dir")
        self.slurm = SlurmCommands(self.bin_dir, self.timeout)
        self.cpu_unit = float(cfg.get("slurm", "cpu-unit"))
        self.request_memory = bool(cfg.get("slurm", "request-memory"))
        self.job_dir = Path(cfg.get("slurm", "job-dir") or self.state_dir()).absolute()
        self.job_dir.mkdir(parents=True, exist_ok=True)
        self.work_root()            # refuses a work root in the state folder at start
        configured = tuple(cfg.get("slurm", "nodes"))
        self._nodes: tuple[str, ...] | None = node_names(ctx, configured) if configured else None
        types = tuple(ctx.site.types.names)
        self._has_cpu = "CPU" in types
        self._file = self.state_dir() / "leases.json"
        self.leases: dict[int, dict[str, Any]] = {}
        if self._file.exists():
            try:
                self.leases = {int(k): v for k, v in json.loads(self._file.read_text()).items()}
            except (ValueError, OSError) as exc:
                raise EnactmentError(f"cannot read {self._file}: {exc}") from None

    # ------------------------------------------------------------------------- plumbing
    def _save(self) -> None:
        tmp = self._file.with_suffix(".tmp")
        tmp.write_text(json.dumps({str(k): v for k, v in self.leases.items()}, indent=1))
        os.replace(tmp, self._file)

    def _name(self, lease_id: int) -> str:
        return f"{self.prefix}{lease_id}"

    def log_files(self, lease_id: int, vms: int) -> list[dict[str, str]]:
        """The batch job's output file (every VM's output and errors), once it has one."""
        name = self._name(lease_id)
        files = sorted(self.job_dir.glob(f"{name}.*.out"), key=lambda p: p.stat().st_mtime)
        path = str(files[-1].resolve()) if files else f"{self.job_dir.resolve() / name}.JOBID.out"
        return [{"vm": "all", "out": path, "err": path}]

    def node_names(self) -> tuple[str, ...]:
        """The Slurm node name of every site node: ``[slurm] nodes``, else the first nodes
        ``sinfo`` lists (of ``[slurm] partition`` if set), in Slurm's order."""
        if self._nodes is None:
            args = ["sinfo", "-h", "-N", "-o", "%N"]
            if self.partition:
                args += ["-p", self.partition]
            proc = self.slurm.run(args)
            assert proc is not None
            names = list(dict.fromkeys(proc.stdout.split()))
            count = len(self.ctx.site.capacity)
            if len(names) < count:
                raise EnactmentError(
                    f"the site has {count} nodes but Slurm lists {len(names)} "
                    f"({', '.join(names) or 'none'}); set [slurm] nodes")
            self._nodes = tuple(names[:count])
        return self._nodes

    def _layout(self, work: Work) -> tuple[list[str], list[int], list[tuple[Any, str, int]]]:
        """Slurm nodes, cores per node (same order) and (vm, node name, cores) per VM."""
        names = self.node_names()
        per_node: dict[str, int] = {}
        vms = []
        if not work.vms:
            raise EnactmentError(f"lease {work.lease_id} has no VMs to enact")
        for vm in sorted(work.vms, key=lambda v: v.index):
            if not 0 <= vm.node < len(names):
                raise EnactmentError(f"lease {work.lease_id}: VM {vm.index} is on node "
                                     f"{vm.node}, but the site has {len(names)} nodes")
            node = names[vm.node]
            cores = max(1, math.ceil(vm.cpu / self.cpu_unit - 1e-9)) if self._has_cpu else 1
            per_node[node] = per_node.get(node, 0) + cores
            vms.append((vm, node, cores))
        return list(per_node), list(per_node.values()), vms

    # ---------------------------------------------------------------------- Slurm state
    def _jobs(self) -> list[dict[str, Any]]:
        """All jobs ``squeue --json`` shows (22.05 ignores squeue's filters with --json)."""
        proc = self.slurm.run(["squeue", "--json"])
        assert proc is not None
        try:
            return list(json.loads(proc.stdout).get("jobs", []))
        except ValueError:
            raise EnactmentError("`squeue --json` printed something that is not JSON") from None

    def _job(self, lease_id: int, jobs: list[dict[str, Any]] | None = None
             ) -> dict[str, Any] | None:
        """The lease's job in squeue: the one recorded in ``leases.json``; without a record
        (state lost), the newest unfinished job of the lease's name. Finished jobs of earlier
        starts, which squeue shows for ``MinJobAge``, are never taken for the lease's work."""
        name = self._name(lease_id)
        mine = [j for j in (self._jobs() if jobs is None else jobs) if j.get("name") == name]
        record = self.leases.get(lease_id)
        if record is not None:
            recorded = record.get("job")
            return next((j for j in mine if j.get("job_id") == recorded), None)
        unfinished = [j for j in mine if j.get("job_state") in _UNFINISHED]
        return max(unfinished, key=lambda j: j.get("job_id", 0)) if unfinished else None

    def _job_id(self, lease_id: int) -> int:
        job = self._job(lease_id)
        if job is None or job.get("job_state") not in _LIVE | {"SUSPENDED"}:
            raise EnactmentError(f"lease {lease_id} has no Slurm job "
                                 f"{self._name(lease_id)} running")
        return int(job["job_id"])

    def _fix_end(self, lease_id: int, job: dict[str, Any]) -> None:
        """Keep a running job's end estimate inside its reservation (see the module doc)."""
        end = self.leases.get(lease_id, {}).get("end")
        if end is None or job.get("job_state") != "RUNNING":
            return
        target = int(end) - 1
        if int(job.get("end_time") or 0) != target and target > time.time():
            self.slurm.run(["scontrol", "update", f"JobId={job['job_id']}",
                       f"EndTime={slurm_time(target)}"],
                      # the work may end between squeue's answer and this update
                      ok=("already completing", "already finished"))

    def _exit_file(self, lease_id: int, job_id: int) -> Path:
        return self.job_dir / f"{self._name(lease_id)}.{job_id}.exit"

    # ------------------------------------------------------------------------ protocol
    def prepare(self, work: Work) -> None:
        """Create the lease's reservation, or move the one booked to the lease's new times
        (a running job's reservation only to a new end: see the module doc)."""
        name = self._name(work.lease_id)
        nodes, cores, _ = self._layout(work)
        now = time.time()
        start = max(whole_seconds(work.start), math.floor(now))
        end = whole_seconds(work.end)
        if end <= now:
            raise EnactmentError(f"lease {work.lease_id}: its reservation would end in the "
                                 f"past ({slurm_time(end)} UTC)")
        record = self.leases.get(work.lease_id, {})
        placement = {"nodes": nodes, "cores": cores}
        existing = self.slurm.reservation(name)
        job = self._job(work.lease_id) if existing else None
        busy = job is not None and job.get("job_state") in _LIVE | {"SUSPENDED"}
        # without a record (state lost) a running job's reservation is taken as it is
        same = existing is not None and record.get(
            "placement", placement if busy else None) == placement
        if existing is not None and (same or busy):
            if not same:
                raise EnactmentError(
                    f"lease {work.lease_id}: cannot move its running Slurm job "
                    f"{job['job_id'] if job else '?'} to other nodes or cores (migration is "
                    "not supported by the slurm backend)")
            existing = self._move_reservation(work.lease_id, existing, job if busy else None,
                                              record, start, end, now)
        elif existing is not None:
            self.slurm.delete_reservation(name)
            existing = None
        if existing is None:
            self._create_reservation(name, start, end, nodes, cores)
        record.update(placement=placement, start=start, end=end)
        self.leases[work.lease_id] = record
        self._save()

    def _move_reservation(self, lease_id: int, existing: dict[str, str],
                          job: dict[str, Any] | None, record: dict[str, Any], start: int,
                          end: int, now: float) -> dict[str, str] | None:
        """Give the booked reservation of the same placement the new times (``job``: its
        running job, whose end follows); None when it was deleted instead, started too
        early (it is then created again)."""
        name = self._name(lease_id)
        args = ["scontrol", "update", f"ReservationName={name}"]
        if existing.get("State") != "ACTIVE":
            args.append(f"StartTime={slurm_time(start)}")
        elif start > now + 1 and job is None:   # started too early now: start it again later
            self.slurm.delete_reservation(name)
            return None
        args.append(f"EndTime={slurm_time(end)}")
        self.slurm.run(args)
        if job is not None:      # the job must follow the reservation's end
            record["end"] = end
            self.leases[lease_id] = record
            self._fix_end(lease_id, job)
        return existing

    def _create_reservation(self, name: str, start: int, end: int, nodes: list[str],
                            cores: list[int]) -> None:
        """``scontrol create reservation``; when Slurm finds the cores busy, once more after
        pulling our own running jobs' ends in (Slurm's time limits are in minutes)."""
        args = ["scontrol", "create", "reservation", f"ReservationName={name}",
                f"StartTime={slurm_time(start)}", f"EndTime={slurm_time(end)}",
                f"Nodes={','.join(nodes)}", f"CoreCnt={','.join(map(str, cores))}",
                f"Users={self.user}"]
        if self.account:
            args.append(f"Accounts={self.account}")
        if self.partition:
            args.append(f"PartitionName={self.partition}")
        try:
            self.slurm.run(args)
        except EnactmentError as exc:
            if "busy" not in str(exc).lower():
                raise
            # our own running jobs may still hold cores past their reservations' end
            jobs = self._jobs()
            for other in list(self.leases):
                other_job = self._job(other, jobs)
                if other_job is not None:
                    self._fix_end(other, other_job)
            self.slurm.run(args)

    def start(self, work: Work) -> None:
        name = self._name(work.lease_id)
        job = self._job(work.lease_id)
        if job is not None and job.get("job_state") in _LIVE | {"SUSPENDED"}:
            return                              # already started (e.g. before a restart)
        # the reservation must hold from now on, whatever the plan said
        self.prepare(attrs.evolve(work, start=min(work.start, time.time())))
        nodes, cores, vms = self._layout(work)
        now = time.time()
        minutes = max(1, math.ceil((whole_seconds(work.end) - now) / 60))
        script = batch_script(name, self.job_dir, work, vms, self.request_memory)
        args = ["sbatch", "--parsable", f"--reservation={name}", f"--job-name={name}",
                f"--nodes={len(nodes)}", f"--nodelist={','.join(nodes)}",
                f"--ntasks={sum(cores)}", f"--time={minutes}",
                f"--output={self.job_dir / name}.%j.out",
                f"--chdir={self.lease_work_dir(work)}"]
        if self.partition:
            args.append(f"--partition={self.partition}")
        if self.account:
            args.append(f"--account={self.account}")
        if self.request_memory:
            per_node: dict[str, float] = {}
            for vm, node, _ in vms:
                per_node[node] = per_node.get(node, 0.0) + vm.memory
            args.append(f"--mem={max(1, math.ceil(max(per_node.values())))}")
        proc = self.slurm.run(args, stdin=script)
        assert proc is not None
        text = proc.stdout.strip().split(";")[0]
        if not text.isdigit():
            raise EnactmentError(f"`sbatch` printed no job id for {name}: {proc.stdout.strip()!r}")
        job_id = int(text)
        (self.job_dir / f"{name}.{job_id}.sh").write_text(script)
        record = self.leases.setdefault(work.lease_id, {})
        record.update(job=job_id, end=whole_seconds(work.end))
        self._save()
        # Keep its end estimate inside the reservation once it runs (usually at once).
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            job = self._job(work.lease_id)
            if job is None or job.get("job_state") != "PENDING":
                break
            time.sleep(0.1)
        if job is not None:
            self._fix_end(work.lease_id, job)

    def power_off(self, node_name: str) -> None:
        """Slurm's power saving: the node is powered down through the cluster's
        ``SuspendProgram`` (Slurm refuses when power saving is not configured)."""
        self.slurm.run(["scontrol", "update", f"NodeName={node_name}", "State=POWER_DOWN"])

    def power_on(self, node_name: str) -> None:
        """Slurm's power saving: the node is resumed through the cluster's
        ``ResumeProgram``."""
        self.slurm.run(["scontrol", "update", f"NodeName={node_name}", "State=POWER_UP"])

    def suspend(self, lease_id: int) -> None:
        self.slurm.run(["scontrol", "suspend", str(self._job_id(lease_id))])

    def resume(self, lease_id: int) -> None:
        job_id = self._job_id(lease_id)
        self.slurm.run(["scontrol", "resume", str(job_id)])
        job = self._job(lease_id)
        if job is not None:
            self._fix_end(lease_id, job)

    def resize(self, work: Work) -> None:
        """Refused: a lease is a batch job in an advance reservation, and Slurm can take nodes
        away from a running job (``scontrol update JobId=... NumNodes=``) but not give it
        more or move its tasks; a shrink alone would leave the reservation, and the other
        leases planned in it, out of step with the plan. Malleable leases need the
        ``process`` backend."""
        raise EnactmentError(
            f"the slurm backend cannot resize running lease {work.lease_id}: Slurm can only "
            f"shrink a running job, not grow it or move its tasks to other nodes (use the "
            f"process backend for malleable leases)")

    def stop(self, lease_id: int) -> None:
        name = self._name(lease_id)
        record = self.leases.get(lease_id, {})
        ids = {str(j["job_id"]) for j in self._jobs() if j.get("name") == name
               and j.get("job_state") in _LIVE | {"SUSPENDED"}}
        if record.get("job"):
            ids.add(str(record["job"]))
        if ids:
            self.slurm.run(["scancel", *sorted(ids)],
                      ok=("invalid job id", "already completing", "already completed"))
        self.slurm.delete_reservation(name)
        if record.get("job"):
            self._exit_file(lease_id, record["job"]).unlink(missing_ok=True)
        if lease_id in self.leases:
            del self.leases[lease_id]
            self._save()

    def known_leases(self) -> list[int]:
        return list(self.leases)

    def status(self, lease_id: int) -> WorkStatus:
        from lease_manager.enactment.work import WorkStatus

        record = self.leases.get(lease_id, {})
        name = self._name(lease_id)
        job = self._job(lease_id)
        if job is not None:
            state = str(job.get("job_state", ""))
            job_id = int(job["job_id"])
            what = f"Slurm job {job_id}"
            if state == "SUSPENDED":
                return WorkStatus("suspended", detail=what)
            if state == "PENDING":
                return WorkStatus("running", detail=f"{what} is pending "
                                                    f"({job.get('state_reason', '?')})")
            if state in _LIVE:
                self._fix_end(lease_id, job)
                return WorkStatus("running", detail=f"{what} is {state.lower()}")
            if state in ("COMPLETED", "FAILED"):
                code = self._read_exit(lease_id, job_id)
                if code is None:
                    code = shell_exit_code(job.get("exit_code"))
                return WorkStatus("exited", 0 if code is None else code, detail=what)
            end = record.get("end")
            ended = job.get("end_time") or 0
            if state == "TIMEOUT" and end is not None and ended >= end - _END_TOLERANCE:
                return WorkStatus("exited", 0, detail=f"{what} was ended by Slurm at the end "
                                                      f"of reservation {name}")
            return WorkStatus("vanished", detail=f"{what} is {state} "
                                                 f"({job.get('state_reason', '')})")
        if record.get("job"):
            code = self._read_exit(lease_id, record["job"])
            if code is not None:
                return WorkStatus("exited", code, detail=f"Slurm job {record['job']}")
            return WorkStatus("vanished", detail=f"Slurm job {record['job']} is gone without "
                                                 f"leaving an exit code in {self.job_dir}")
        if self.slurm.reservation(name) is not None:
            return WorkStatus("planned", detail=f"reservation {name}")
        return WorkStatus("absent")

    def _read_exit(self, lease_id: int, job_id: int) -> int | None:
        try:
            return int(self._exit_file(lease_id, job_id).read_text().strip())
        except (OSError, ValueError):
            return None


@hookimpl
def register_options():
    return slurm_options()


@hookimpl
def register_policies():
    return [SlurmBackend]
