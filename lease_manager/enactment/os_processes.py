"""Processes of the ``process`` backend: finding them again (start times from ``/proc``),
their process groups, signals, and the JSON records kept beside them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

_warned: set[str] = set()


def process_log() -> logging.Logger:
    """The process backend's logger (logging is loaded when a message is written: start-up)."""
    import logging

    return logging.getLogger("lease_manager.enactment.process")


def warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        process_log().warning(message)


# ------------------------------------------------------------------------------------ processes

def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, process group, start time)`` of a process from ``/proc/<pid>/stat``, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may contain anything
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is field 3 (state), fields[2] field 5 (pgrp), fields[19] field 22 (starttime)
    return fields[0], int(fields[2]), int(fields[19])


def start_time(pid: int) -> int | None:
    stat = proc_stat(pid)
    return stat[2] if stat else None


def alive(pid: int, start_time: int | None) -> bool:
    """Whether the process ``pid`` started at ``start_time`` still runs (zombies do not)."""
    stat = proc_stat(pid)
    if stat is None:
        if Path("/proc/self/stat").exists():
            return False
        try:            # no /proc: the best we can do
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    state, _, started = stat
    return state not in ("Z", "X", "x") and (start_time is None or started == start_time)


def group_members(pgid: int) -> list[int]:
    """The live (non-zombie) processes of the process group ``pgid``."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        entries = []
    if not entries:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    for entry in entries:
        if not entry.isdigit():
            continue
        stat = proc_stat(int(entry))
        if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X", "x"):
            out.append(int(entry))
    return out


def group_stopped(pid: int, pgid: int) -> bool | None:
    """Whether the process group of the leader ``pid`` is stopped (SIGSTOP); None if the leader
    is gone. The leader answers for its group, except when it is in uninterruptible sleep (as
    a shell is while its vforked child, stopped before its exec, holds it): then any stopped
    member says so."""
    stat = proc_stat(pid)
    if stat is None or stat[0] in ("Z", "X", "x"):
        return None
    if stat[0] in ("T", "t"):
        return True
    if stat[0] != "D":
        return False
    for member in group_members(pgid):
        member_stat = proc_stat(member)
        if member_stat is not None and member_stat[0] in ("T", "t"):
            return True
    return False


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def signal_pids(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


# -------------------------------------------------------------------------------------- cgroups
