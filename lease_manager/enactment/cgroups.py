"""Control groups for the ``process`` backend: v2 or v1 detected, CPU limits and freezing, and
removing a VM's groups when its processes are gone."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from lease_manager.enactment.base import EnactmentError
from lease_manager.enactment.os_processes import process_log, signal_pids, warn_once

#: where the cgroup file systems are mounted (a parameter for tests)
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: the group under which the VMs' groups are made
PARENT_GROUP = "lease_manager"
#: cgroup CPU bandwidth period, microseconds
CPU_PERIOD = 100_000
#: the smallest quota the kernel accepts, microseconds
MIN_QUOTA = 1_000


class Cgroups:
    """How the backend uses cgroups: ``version`` is ``"v2"``, ``"v1"`` or ``"none"``;
    ``cpu``/``freezer`` say which of the two features work."""

    def __init__(self, wanted: str, root: Path) -> None:
        self.root = Path(root)
        self.version = "none"
        self.cpu = False
        self.freezer = False
        #: v1: hierarchy -> the parent group's folder; v2: {"unified": folder}
        self.parents: dict[str, Path] = {}
        problems: list[str] = []
        if wanted == "none":
            return
        version = wanted
        if wanted == "auto":
            version = "v2" if (self.root / "cgroup.controllers").exists() else "v1"
        if version == "v2":
            self._detect_v2(problems)
        else:
            self._detect_v1(problems)
        if wanted in ("v1", "v2") and not (self.cpu and self.freezer):
            raise EnactmentError(f"[process] cgroups = {wanted}, but cgroup {wanted} cannot be "
                                 f"used here: {'; '.join(problems)}")
        if self.cpu or self.freezer:
            self.version = version
        lost = []
        if not self.cpu:
            lost.append("CPU limits are off")
        if not self.freezer:
            lost.append("suspension uses SIGSTOP/SIGCONT to the VMs' process groups")
        if lost:
            detail = "; ".join(problems) or "no usable cgroup"
            warn_once(f"{self.root}:{wanted}",
                       f"process backend: cgroups cannot be fully used ({detail}): "
                       f"{', and '.join(lost)}")

    # v2 -------------------------------------------------------------------------------------
    def _detect_v2(self, problems: list[str]) -> None:
        root = self.root
        try:
            controllers = (root / "cgroup.controllers").read_text().split()
        except OSError as exc:
            problems.append(f"no cgroup v2 at {root} ({exc.strerror or exc})")
            return
        parent = root / PARENT_GROUP
        try:
            parent.mkdir(exist_ok=True)
        except OSError as exc:
            problems.append(f"cannot create {parent} ({exc.strerror or exc})")
            return
        if not os.access(parent / "cgroup.procs", os.W_OK):
            problems.append(f"{parent} is not writable")
            return
        self.parents["unified"] = parent
        # the freezer is a core feature of v2 (Linux 5.2+), in every non-root group
        if (parent / "cgroup.freeze").exists():
            self.freezer = True
        else:
            problems.append("this kernel's cgroup v2 has no cgroup.freeze")
        if "cpu" not in controllers:
            problems.append(f"the cpu controller is not available in {root}")
            return
        # children of `parent` get cpu.max only if cpu is enabled in the subtree_control of
        # every group above them
        for group in (root, parent):
            try:
                enabled = (group / "cgroup.subtree_control").read_text().split()
                if "cpu" not in enabled:
                    (group / "cgroup.subtree_control").write_text("+cpu")
            except OSError as exc:
                problems.append(f"cannot enable the cpu controller in {group} "
                                f"({exc.strerror or exc})")
                return
        self.cpu = True

    # v1 -------------------------------------------------------------------------------------
    def _detect_v1(self, problems: list[str]) -> None:
        for hierarchy, probe in (("cpu", "cpu.cfs_quota_us"), ("freezer", "freezer.state")):
            base = self.root / hierarchy
            if not (base / "cgroup.procs").exists():
                problems.append(f"no cgroup v1 {hierarchy} hierarchy at {base}")
                continue
            parent = base / PARENT_GROUP
            try:
                parent.mkdir(exist_ok=True)
            except OSError as exc:
                problems.append(f"cannot create {parent} ({exc.strerror or exc})")
                continue
            if not os.access(parent / "cgroup.procs", os.W_OK):
                problems.append(f"{parent} is not writable")
                continue
            if not (parent / probe).exists():
                problems.append(f"{parent} has no {probe}")
                continue
            self.parents[hierarchy] = parent
            setattr(self, hierarchy, True)

    # per VM ---------------------------------------------------------------------------------
    def create(self, name: str, cores: float | None) -> dict[str, str]:
        """Make the groups of one VM (``cores``: its CPU limit, None for none); returns
        ``{"cpu": folder, "freezer": folder}`` (each only if the feature works; in v2 both are
        the same folder)."""
        made: dict[str, str] = {}
        try:
            if self.version == "v2":
                group = self.parents["unified"] / name
                group.mkdir(exist_ok=True)
                if self.freezer:
                    made["freezer"] = str(group)
                if self.cpu:
                    made["cpu"] = str(group)
                    quota = "max" if cores is None else str(max(MIN_QUOTA,
                                                                round(cores * CPU_PERIOD)))
                    (group / "cpu.max").write_text(f"{quota} {CPU_PERIOD}")
                if self.freezer:
                    (group / "cgroup.freeze").write_text("0")
            elif self.version == "v1":
                for hierarchy in ("cpu", "freezer"):
                    if hierarchy in self.parents:
                        group = self.parents[hierarchy] / name
                        group.mkdir(exist_ok=True)
                        made[hierarchy] = str(group)
                if "cpu" in made:
                    group = Path(made["cpu"])
                    (group / "cpu.cfs_period_us").write_text(str(CPU_PERIOD))
                    quota_us = -1 if cores is None else max(MIN_QUOTA, round(cores * CPU_PERIOD))
                    (group / "cpu.cfs_quota_us").write_text(str(quota_us))
                if "freezer" in made:
                    (Path(made["freezer"]) / "freezer.state").write_text("THAWED")
        except OSError as exc:
            remove_groups(made, retry=0)
            raise EnactmentError(f"cannot set up the cgroup {name}: {exc}") from None
        return made


def _is_v2(folder: Path) -> bool:
    return (folder / "cgroup.freeze").exists()


def set_frozen(groups: dict[str, str], frozen: bool) -> None:
    folder = groups.get("freezer")
    if not folder:
        return
    path = Path(folder)
    if _is_v2(path):
        (path / "cgroup.freeze").write_text("1" if frozen else "0")
    else:
        (path / "freezer.state").write_text("FROZEN" if frozen else "THAWED")


def is_frozen(groups: dict[str, str]) -> bool | None:
    """Whether the VM's freezer group is frozen (or freezing); None without a freezer."""
    folder = groups.get("freezer")
    if not folder:
        return None
    path = Path(folder)
    try:
        if _is_v2(path):
            # cgroup.freeze is what was asked; cgroup.events says "frozen 1" once done
            return (path / "cgroup.freeze").read_text().strip() == "1"
        return (path / "freezer.state").read_text().strip() in ("FROZEN", "FREEZING")
    except OSError:
        return None


def group_pids(groups: dict[str, str]) -> list[int]:
    pids: set[int] = set()
    for folder in set(groups.values()):
        try:
            pids.update(int(p) for p in (Path(folder) / "cgroup.procs").read_text().split())
        except (OSError, ValueError):
            pass
    return sorted(pids)


def kill_groups(groups: dict[str, str]) -> None:
    """SIGKILL every process of the VM's cgroups (even those that left its process group)."""
    import signal  # (loaded by the daemon's runs only: start-up)

    for folder in set(groups.values()):
        kill_file = Path(folder) / "cgroup.kill"
        if kill_file.exists():
            try:
                kill_file.write_text("1")
                continue
            except OSError:
                pass
    signal_pids(group_pids(groups), signal.SIGKILL)


def remove_groups(groups: dict[str, str], retry: float = 1.0) -> bool:
    """rmdir the VM's cgroups, retrying for ``retry`` seconds while processes remain."""
    deadline = time.monotonic() + retry
    left = set(groups.values())
    while True:
        for folder in list(left):
            try:
                os.rmdir(folder)
                left.discard(folder)
            except FileNotFoundError:
                left.discard(folder)
            except OSError as exc:
                if exc.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                    process_log().warning("cannot remove the cgroup %s: %s", folder, exc)
                    left.discard(folder)
        if not left:
            return True
        if time.monotonic() >= deadline:
            process_log().warning("cannot remove the cgroups %s: processes remain", ", ".join(left))
            return False
        time.sleep(0.02)


# -------------------------------------------------------------------------------------- backend
