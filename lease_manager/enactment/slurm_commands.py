"""How the ``slurm`` backend talks to Slurm: its commands (run with a time limit, failures as
one line naming the command), its time format (UTC, whole seconds), its reservations, and
the batch script of a lease's job."""

from __future__ import annotations

import math
import os
import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lease_manager.enactment.base import EnactmentError, clean_env, work_env

if TYPE_CHECKING:
    import subprocess

    from lease_manager.enactment.work import Work


def whole_seconds(t: float) -> int:
    """A lease boundary in whole seconds. Starts and ends are rounded the same way (down) so
    that back-to-back leases stay back to back: rounding a start down and an end up would make
    them overlap by a second, and Slurm refuses the second reservation on the same cores."""
    return math.floor(t + 1e-6)


def slurm_time(t: float) -> str:
    """UTC epoch seconds as Slurm's ``YYYY-MM-DDTHH:MM:SS`` (read by scontrol with TZ=UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))


def parse_slurm_time(text: str) -> float | None:
    """Slurm's ``YYYY-MM-DDTHH:MM:SS`` printed with TZ=UTC, as epoch seconds."""
    try:
        import calendar

        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def shell_exit_code(raw: Any) -> int | None:
    """Slurm's ``exit_code`` (a wait(2) status) as a shell-style exit code."""
    if not isinstance(raw, int):
        return None
    if raw & 0x7F:                      # killed by a signal
        return 128 + (raw & 0x7F)
    return (raw >> 8) & 0xFF


def one_line(text: str) -> str:
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


class SlurmCommands:
    """Slurm's commands, from ``bin_dir`` (empty: on ``PATH``), each within ``timeout``
    seconds."""

    def __init__(self, bin_dir: str, timeout: float) -> None:
        self.bin_dir = bin_dir
        self.timeout = timeout

    def run(self, args: Sequence[str], *, stdin: str | None = None,
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
            message = one_line(proc.stderr or proc.stdout)
            if any(text.lower() in message.lower() for text in ok):
                return None
            raise EnactmentError(f"`{shown}` failed: {message}")
        return proc

    def reservation(self, name: str) -> dict[str, str] | None:
        """``scontrol -o show reservation NAME`` as a dict, or None if there is none."""
        proc = self.run(["scontrol", "-o", "show", "reservation", name], ok=("not found",))
        if proc is None or not proc.stdout.strip():
            return None
        fields: dict[str, str] = {}
        for token in proc.stdout.split():
            key, sep, value = token.partition("=")
            if sep and key not in fields:
                fields[key] = value
        return fields if fields.get("ReservationName") == name else None

    def delete_reservation(self, name: str) -> None:
        """Delete a reservation; absent is fine; wait a little for cancelled jobs to go."""
        deadline = time.monotonic() + min(self.timeout, 15.0)
        while True:
            try:
                self.run(["scontrol", "delete", f"ReservationName={name}"],
                         ok=("invalid", "not found"))
                return
            except EnactmentError as exc:
                if "in use" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def batch_script(name: str, job_dir: Path, work: Work, vms: list[tuple[Any, str, int]],
                 request_memory: bool) -> str:
    """The batch script of lease ``work``'s job ``name``: one ``srun`` step per VM (or a
    sleep until the lease's end, without a command), then the exit code to its file."""
    lines = ["#!/bin/sh",
             f"# lease_manager slurm backend: lease {work.lease_id}, {len(vms)} VM(s)",
             f"exit_file={shlex.quote(str(job_dir / name))}.$SLURM_JOB_ID.exit",
             "code=0"]
    if not work.command.strip():
        end = whole_seconds(work.end)
        lines += [f"now=$(date +%s); if [ {end} -gt \"$now\" ]; then "
                  f"sleep $(({end} - now)); fi"]
    else:
        for vm, node, cores in vms:
            vm = vm if vm.node_name == node else attrs.evolve(vm, node_name=node)
            env = [f"{k}={v}" for k, v in sorted(work_env(work, vm).items())]
            step = ["srun", "--nodes=1", "--ntasks=1", f"--cpus-per-task={cores}",
                    f"--nodelist={node}", "--exact", f"--job-name={name}.vm{vm.index}"]
            if request_memory and vm.memory > 0:
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
