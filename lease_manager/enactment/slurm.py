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
import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lease_manager.config.schema import BOOLEAN, FLOAT, NAMES, PATH, STRING, Option
from lease_manager.enactment.base import (
    EnactmentBackend,
    EnactmentError,
    Work,
    WorkStatus,
    clean_env,
    node_names,
    work_env,
)
from lease_manager.hookspecs import hookimpl

if TYPE_CHECKING:
    import subprocess

    from lease_manager.context import RunContext

#: Slurm job states that mean the job is (about to be) running
_LIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "RESIZING", "REQUEUED",
         "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"}
#: states of a job that has not ended (COMPLETING has: it is cleaning up)
_UNFINISHED = (_LIVE - {"COMPLETING"}) | {"SUSPENDED"}
#: how close (seconds) to the planned end a TIMEOUT counts as "ran to its end"
_END_TOLERANCE = 5.0


def _whole(t: float) -> int:
    """A lease boundary in whole seconds. Starts and ends are rounded the same way (down) so
    that back-to-back leases stay back to back: rounding a start down and an end up would make
    them overlap by a second, and Slurm refuses the second reservation on the same cores."""
    return math.floor(t + 1e-6)


def _fmt_time(t: float) -> str:
    """UTC epoch seconds as Slurm's ``YYYY-MM-DDTHH:MM:SS`` (read by scontrol with TZ=UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))


def _parse_time(text: str) -> float | None:
    """Slurm's ``YYYY-MM-DDTHH:MM:SS`` printed with TZ=UTC, as epoch seconds."""
    try:
        import calendar

        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def _exit_code(raw: Any) -> int | None:
    """Slurm's ``exit_code`` (a wait(2) status) as a shell-style exit code."""
    if not isinstance(raw, int):
        return None
    if raw & 0x7F:                      # killed by a signal
        return 128 + (raw & 0x7F)
    return (raw >> 8) & 0xFF


def _one_line(text: str) -> str:
    """Slurm's stderr as one clean line: no ``sbatch: error:`` prefixes, no repeats."""
    lines: list[str] = []
    seen: set[str] = set()
    for line in text.splitlines():
        line = re.sub(r"^(\S+:\s+)?(error|fatal):\s*", "", line.strip(), flags=re.I)
        tail = line.rsplit(": ", 1)[-1]     # "slurm_update error: X" repeats "Error ...: X"
        if line and tail not in seen:
            seen.add(tail)
            lines.append(line)
    return "; ".join(lines) or "(no message)"


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

    def _cmd(self, args: Sequence[str], *, stdin: str | None = None,
             ok: Sequence[str] = ()) -> subprocess.CompletedProcess[str] | None:
        """Run a Slurm command; raise EnactmentError naming it and Slurm's message on failure,
        unless the message contains one of ``ok`` (then return None)."""
        argv = list(args)
        if self.bin_dir:
            argv[0] = str(Path(self.bin_dir) / argv[0])
        env = dict(os.environ)
        if args[0] == "scontrol":     # scontrol reads and prints times in its local zone
            env["TZ"] = "UTC"
        elif args[0] == "sbatch":     # a job gets sbatch's environment: not the daemon's
            env = {**clean_env(os.environ),
                   **{k: v for k, v in os.environ.items() if k.startswith(("SLURM_", "MUNGE"))}}
        import subprocess  # (loaded by Slurm's runs only: start-up)

        shown = " ".join(shlex.quote(a) for a in args)
        try:
            proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env,
                                  timeout=self.timeout)
        except FileNotFoundError:
            raise EnactmentError(f"`{shown}`: {argv[0]} not found (is Slurm installed? "
                                 f"see [slurm] bin-dir)") from None
        except subprocess.TimeoutExpired:
            raise EnactmentError(f"`{shown}` did not answer within {self.timeout:g} s "
                                 f"(is slurmctld running?)") from None
        except OSError as exc:
            raise EnactmentError(f"`{shown}`: {exc}") from None
        if proc.returncode != 0:
            message = _one_line(proc.stderr or proc.stdout)
            if any(text.lower() in message.lower() for text in ok):
                return None
            raise EnactmentError(f"`{shown}` failed: {message}")
        return proc

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
            proc = self._cmd(args)
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
    def _reservation(self, name: str) -> dict[str, str] | None:
        """``scontrol -o show reservation NAME`` as a dict, or None if there is none."""
        proc = self._cmd(["scontrol", "-o", "show", "reservation", name], ok=("not found",))
        if proc is None or not proc.stdout.strip():
            return None
        fields: dict[str, str] = {}
        for token in proc.stdout.split():
            key, sep, value = token.partition("=")
            if sep and key not in fields:
                fields[key] = value
        return fields if fields.get("ReservationName") == name else None

    def _jobs(self) -> list[dict[str, Any]]:
        """All jobs ``squeue --json`` shows (22.05 ignores squeue's filters with --json)."""
        proc = self._cmd(["squeue", "--json"])
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
            self._cmd(["scontrol", "update", f"JobId={job['job_id']}",
                       f"EndTime={_fmt_time(target)}"],
                      # the work may end between squeue's answer and this update
                      ok=("already completing", "already finished"))

    def _exit_file(self, lease_id: int, job_id: int) -> Path:
        return self.job_dir / f"{self._name(lease_id)}.{job_id}.exit"

    # ------------------------------------------------------------------------ protocol
    # Longer than ~50 lines on purpose: the Slurm reservation is built, compared with the booked
    # one and created or moved in one place, so its states stay readable.
    def prepare(self, work: Work) -> None:
        name = self._name(work.lease_id)
        nodes, cores, _ = self._layout(work)
        now = time.time()
        start = max(_whole(work.start), math.floor(now))
        end = _whole(work.end)
        if end <= now:
            raise EnactmentError(f"lease {work.lease_id}: its reservation would end in the "
                                 f"past ({_fmt_time(end)} UTC)")
        record = self.leases.get(work.lease_id, {})
        placement = {"nodes": nodes, "cores": cores}
        existing = self._reservation(name)
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
            args = ["scontrol", "update", f"ReservationName={name}"]
            if existing.get("State") != "ACTIVE":
                args.append(f"StartTime={_fmt_time(start)}")
            elif start > now + 1 and not busy:   # started too early now: start it again later
                self._delete_reservation(name)
                existing = None
            if existing is not None:
                args.append(f"EndTime={_fmt_time(end)}")
                self._cmd(args)
                if busy and job is not None:      # the job must follow the reservation's end
                    record["end"] = end
                    self.leases[work.lease_id] = record
                    self._fix_end(work.lease_id, job)
        else:
            if existing is not None:
                self._delete_reservation(name)
            existing = None
        if existing is None:
            args = ["scontrol", "create", "reservation", f"ReservationName={name}",
                    f"StartTime={_fmt_time(start)}", f"EndTime={_fmt_time(end)}",
                    f"Nodes={','.join(nodes)}", f"CoreCnt={','.join(map(str, cores))}",
                    f"Users={self.user}"]
            if self.account:
                args.append(f"Accounts={self.account}")
            if self.partition:
                args.append(f"PartitionName={self.partition}")
            try:
                self._cmd(args)
            except EnactmentError as exc:
                if "busy" not in str(exc).lower():
                    raise
                # our own running jobs may still hold cores past their reservations' end
                # (Slurm's time limits are in minutes): pull them in and try once more
                jobs = self._jobs()
                for other in list(self.leases):
                    other_job = self._job(other, jobs)
                    if other_job is not None:
                        self._fix_end(other, other_job)
                self._cmd(args)
        record.update(placement=placement, start=start, end=end)
        self.leases[work.lease_id] = record
        self._save()

    def start(self, work: Work) -> None:
        name = self._name(work.lease_id)
        job = self._job(work.lease_id)
        if job is not None and job.get("job_state") in _LIVE | {"SUSPENDED"}:
            return                              # already started (e.g. before a restart)
        # the reservation must hold from now on, whatever the plan said
        self.prepare(attrs.evolve(work, start=min(work.start, time.time())))
        nodes, cores, vms = self._layout(work)
        now = time.time()
        minutes = max(1, math.ceil((_whole(work.end) - now) / 60))
        script = self._script(work, vms)
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
        proc = self._cmd(args, stdin=script)
        assert proc is not None
        text = proc.stdout.strip().split(";")[0]
        if not text.isdigit():
            raise EnactmentError(f"`sbatch` printed no job id for {name}: {proc.stdout.strip()!r}")
        job_id = int(text)
        (self.job_dir / f"{name}.{job_id}.sh").write_text(script)
        record = self.leases.setdefault(work.lease_id, {})
        record.update(job=job_id, end=_whole(work.end))
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

    def _script(self, work: Work, vms: list[tuple[Any, str, int]]) -> str:
        name = self._name(work.lease_id)
        lines = ["#!/bin/sh",
                 f"# lease_manager slurm backend: lease {work.lease_id}, {len(vms)} VM(s)",
                 f"exit_file={shlex.quote(str(self.job_dir / name))}.$SLURM_JOB_ID.exit",
                 "code=0"]
        if not work.command.strip():
            end = _whole(work.end)
            lines += [f"now=$(date +%s); if [ {end} -gt \"$now\" ]; then "
                      f"sleep $(({end} - now)); fi"]
        else:
            for vm, node, cores in vms:
                vm = vm if vm.node_name == node else attrs.evolve(vm, node_name=node)
                env = [f"{k}={v}" for k, v in sorted(work_env(work, vm).items())]
                step = ["srun", "--nodes=1", "--ntasks=1", f"--cpus-per-task={cores}",
                        f"--nodelist={node}", "--exact", f"--job-name={name}.vm{vm.index}"]
                if self.request_memory and vm.memory > 0:
                    step.append(f"--mem={max(1, math.ceil(vm.memory))}")
                step += ["env", *env, "/bin/sh", "-c", work.command]
                lines.append(" ".join(shlex.quote(a) for a in step) + " &")
                lines.append(f"pid{vm.index}=$!")
            for vm, _, _ in vms:
                lines.append(f"wait $pid{vm.index}; c=$?; "
                             "if [ $code -eq 0 ]; then code=$c; fi")
        lines += ['echo $code > "$exit_file.tmp" && mv "$exit_file.tmp" "$exit_file"',
                  "exit $code", ""]
        return "\n".join(lines)

    def power_off(self, node_name: str) -> None:
        """Slurm's power saving: the node is powered down through the cluster's
        ``SuspendProgram`` (Slurm refuses when power saving is not configured)."""
        self._cmd(["scontrol", "update", f"NodeName={node_name}", "State=POWER_DOWN"])

    def power_on(self, node_name: str) -> None:
        """Slurm's power saving: the node is resumed through the cluster's
        ``ResumeProgram``."""
        self._cmd(["scontrol", "update", f"NodeName={node_name}", "State=POWER_UP"])

    def suspend(self, lease_id: int) -> None:
        self._cmd(["scontrol", "suspend", str(self._job_id(lease_id))])

    def resume(self, lease_id: int) -> None:
        job_id = self._job_id(lease_id)
        self._cmd(["scontrol", "resume", str(job_id)])
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

    def _delete_reservation(self, name: str) -> None:
        """Delete a reservation; absent is fine; wait a little for cancelled jobs to go."""
        deadline = time.monotonic() + min(self.timeout, 15.0)
        while True:
            try:
                self._cmd(["scontrol", "delete", f"ReservationName={name}"],
                          ok=("invalid", "not found"))
                return
            except EnactmentError as exc:
                if "in use" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self, lease_id: int) -> None:
        name = self._name(lease_id)
        record = self.leases.get(lease_id, {})
        ids = {str(j["job_id"]) for j in self._jobs() if j.get("name") == name
               and j.get("job_state") in _LIVE | {"SUSPENDED"}}
        if record.get("job"):
            ids.add(str(record["job"]))
        if ids:
            self._cmd(["scancel", *sorted(ids)],
                      ok=("invalid job id", "already completing", "already completed"))
        self._delete_reservation(name)
        if record.get("job"):
            self._exit_file(lease_id, record["job"]).unlink(missing_ok=True)
        if lease_id in self.leases:
            del self.leases[lease_id]
            self._save()

    def known_leases(self) -> list[int]:
        return list(self.leases)

    def status(self, lease_id: int) -> WorkStatus:
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
                    code = _exit_code(job.get("exit_code"))
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
        if self._reservation(name) is not None:
            return WorkStatus("planned", detail=f"reservation {name}")
        return WorkStatus("absent")

    def _read_exit(self, lease_id: int, job_id: int) -> int | None:
        try:
            return int(self._exit_file(lease_id, job_id).read_text().strip())
        except (OSError, ValueError):
            return None


@hookimpl
def register_options():
    return [
        Option("slurm", "nodes", NAMES, (), doc="""
            The Slurm node name of each site node, in order (as many as `[simulation]
            resources` has nodes). Empty: the first nodes `sinfo` lists (of `partition`, if
            set), in Slurm's order."""),
        Option("slurm", "partition", STRING, "", doc="""
            Partition of the reservations and jobs. Empty: Slurm's default partition."""),
        Option("slurm", "user", STRING, "", doc="""
            The user allowed into the reservations (`Users=`): the user the jobs are submitted
            as. Empty: the daemon's user."""),
        Option("slurm", "account", STRING, "", doc="""
            Account of the reservations (`Accounts=`) and jobs (`--account`). Empty: none."""),
        Option("slurm", "cpu-unit", FLOAT, 1.0, minimum=1e-9, maximum=1e12, doc="""
            The site's `CPU` amount that is one Slurm core (100 for Haizea-style `CPU:100`
            sites). Each VM gets its CPU amount in cores, rounded up, at least one."""),
        Option("slurm", "request-memory", BOOLEAN, False, doc="""
            Ask for each VM's `Memory` (MB) with `--mem` (for sites with
            `SelectTypeParameters=CR_*_Memory`; reservations hold cores only)."""),
        Option("slurm", "job-dir", PATH, "", doc="""
            Folder of the batch jobs' scripts, output (`lm-<lease>.<job>.out`) and exit-code
            files. It must be at the same path on the daemon's machine and the Slurm nodes
            (a shared file system), or exit codes are lost once Slurm forgets a job. Empty:
            the backend's folder under `[daemon] state-dir`."""),
        Option("slurm", "name-prefix", STRING, "lm-", doc="""
            Prefix of the reservation and job names (`lm-<lease id>`): give each daemon
            sharing one Slurm cluster its own."""),
        Option("slurm", "commands-timeout", FLOAT, 30.0, minimum=0.1, maximum=86400, doc="""
            Seconds a Slurm command (scontrol, sbatch, squeue, scancel, sinfo) may take
            before the action fails."""),
        Option("slurm", "bin-dir", PATH, "", doc="""
            Folder of the Slurm commands. Empty: found on `PATH`."""),
    ]


@hookimpl
def register_policies():
    return [SlurmBackend]
