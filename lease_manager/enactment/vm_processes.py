"""The VM processes of the ``process`` backend: the wrapper that runs a lease's command and
records its exit status, starting it, waiting until it joined its cgroups, and knowing
whether it (and its process group) is still there."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from lease_manager.enactment.base import EnactmentError
from lease_manager.enactment.cgroups import group_pids
from lease_manager.enactment.os_processes import (
    alive,
    group_members,
    proc_stat,
    signal_group,
    start_time,
)

if TYPE_CHECKING:
    import subprocess

#: the VM's process: ``/bin/sh -c WRAPPER lm-vm SHELL COMMAND EXIT_FILE PYTHON DROP IDS
#: [CGROUP_PROCS...]``; writes its process id next to the exit file (a daemon killed while
#: starting it finds it there), joins the VM's cgroups, runs the command in a child shell (the
#: configured one; as the ``[process] run-as`` user through ``PYTHON -I -c DROP IDS`` when
#: PYTHON is not empty), records its exit status
WRAPPER = r"""
shell=$1; cmd=$2; exit_file=$3; python=$4; drop=$5; ids=$6; shift 6
echo $$ > "$exit_file.pid.tmp" && mv -f "$exit_file.pid.tmp" "$exit_file.pid"
for procs in "$@"; do
    if ! echo $$ > "$procs"; then
        echo "lease_manager: cannot join the cgroup $procs" >&2
        echo 125 > "$exit_file.tmp" && mv -f "$exit_file.tmp" "$exit_file"
        exit 125
    fi
done
if [ -z "$cmd" ]; then
    while :; do sleep 3600; done
fi
if [ -n "$python" ]; then
    "$python" -I -c "$drop" "$ids" "$shell" -c "$cmd"
else
    "$shell" -c "$cmd"
fi
status=$?
echo "$status" > "$exit_file.tmp" && mv -f "$exit_file.tmp" "$exit_file"
exit "$status"
"""


class VmProcesses:
    """The VM processes one backend started (to reap them), and what is known of any VM's
    process from its record (``pid``, ``pgid``, ``start_time``, ``exit_file``, ``cgroups``)."""

    def __init__(self) -> None:
        #: the VM processes this object started: pid -> Popen (to reap them)
        self.children: dict[int, subprocess.Popen] = {}

    def spawn(self, entry: dict, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        """Start the VM's wrapper (``argv``: the shell, the command, then the wrapper's other
        arguments), its output appended to ``out.log`` and ``err.log`` beside its exit file,
        and complete its record ``entry``; raises OSError."""
        import subprocess

        vm_dir = Path(entry["exit_file"]).parent
        with open(vm_dir / "out.log", "ab") as out, open(vm_dir / "err.log", "ab") as err:
            child = subprocess.Popen(
                ["/bin/sh", "-c", WRAPPER, "lm-vm", *argv],
                cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                start_new_session=True, close_fds=True)
        self.children[child.pid] = child
        entry.update(pid=child.pid, pgid=child.pid, start_time=start_time(child.pid))

    def forget(self, pid: int) -> None:
        """Reap the VM's process if this object started it (waiting half a second at most)."""
        import subprocess

        self.reap(pid)
        child = self.children.pop(pid, None)
        if child is not None:
            try:
                child.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass

    def reap(self, pid: int) -> None:
        child = self.children.get(pid)
        if child is not None and child.poll() is not None:
            del self.children[pid]

    def reap_all(self) -> None:
        for pid in list(self.children):
            self.reap(pid)

    @staticmethod
    def exit_code(vm: dict) -> int | None:
        try:
            text = Path(vm["exit_file"]).read_text().strip()
        except OSError:
            return None
        try:
            return int(text)
        except ValueError:
            return 255

    def alive(self, vm: dict) -> bool:
        self.reap(vm["pid"])
        return alive(vm["pid"], vm.get("start_time"))

    def live_group(self, vm: dict) -> list[int]:
        """The VM's processes still there: its process group's, and its cgroups'."""
        self.reap(vm["pid"])
        members = set(group_members(vm["pgid"]))
        members.update(group_pids(vm.get("cgroups", {})))
        return sorted(members)

    def signal(self, vm: dict, sig: int) -> None:
        # the process group id stays taken while one member lives, so it names our VM's
        # group unless the whole group is gone
        if vm["pid"] == vm["pgid"]:
            stat = proc_stat(vm["pid"])
            if stat is not None and vm.get("start_time") not in (None, stat[2]):
                return      # the pid was reused by someone else's session
        signal_group(vm["pgid"], sig)

    def wait_joined(self, vm: dict, timeout: float = 5.0) -> None:
        """Wait until the VM's wrapper has joined its cgroups (before it runs the command), so
        that a suspension right after the start freezes it."""
        groups = vm["cgroups"]
        if not groups:
            return
        deadline = time.monotonic() + timeout
        while True:
            if all(vm["pid"] in group_pids({"g": folder}) for folder in set(groups.values())):
                return
            code = self.exit_code(vm)
            if code is not None or not self.alive(vm):
                # joined and already done, or it could not join (exit 125)
                if code == 125:
                    raise EnactmentError(f"VM {vm['index']} could not join its cgroups "
                                         f"{', '.join(sorted(set(groups.values())))}")
                return
            if time.monotonic() >= deadline:
                raise EnactmentError(f"VM {vm['index']} did not join its cgroups within "
                                     f"{timeout:g} s")
            time.sleep(0.002)
