"""Running lease commands as another user than the daemon's (``[process] run-as``).

A command that runs as the daemon's user can read whatever that user can, the API token in
the state folder included, by any path. Run as a user of its own, it meets the state folder's
mode 0700 and the token's 0600 and cannot. Only the command changes user: the small wrapper
around it stays the daemon's, because it records the exit status in the state folder and joins
the VM's cgroups, both of which the command's user must not be able to touch.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable
from pathlib import Path

import attrs

from lease_manager.enactment.base import EnactmentError

#: run by the daemon's Python as ``python -I -c DROP UID:GID:G1,G2 PROGRAM ARGS...``: takes
#: the user's groups, then its group, then its user (in that order: each step needs the
#: privilege the next one gives up), and becomes PROGRAM
DROP = """
import os, sys
uid, gid, groups = sys.argv[1].split(":")
os.setgroups([int(g) for g in groups.split(",") if g])
os.setgid(int(gid))
os.setuid(int(uid))
if os.getuid() != int(uid) or os.geteuid() != int(uid):
    sys.exit("lease_manager: could not become user " + uid)
try:
    os.execv(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.exit("lease_manager: cannot run " + sys.argv[2] + ": " + exc.strerror)
"""


@attrs.frozen
class RunAs:
    """The user lease commands run as, resolved once at start."""

    name: str
    uid: int
    gid: int
    #: its groups (``getgrouplist``: its own and those it is a member of)
    groups: tuple[int, ...]
    home: str

    def ids(self) -> str:
        """``UID:GID:G1,G2``, the argument of :data:`DROP`."""
        return f"{self.uid}:{self.gid}:{','.join(str(g) for g in self.groups)}"

    def env(self) -> dict[str, str]:
        """The account variables of the command's environment, the user's own."""
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name}


def resolve_run_as(spec: str, kept: Iterable[Path]) -> RunAs | None:
    """The user ``spec`` names (a name or a numeric id), or None when empty. Refused, in one
    line, when the user does not exist, when the daemon cannot switch to another user (it does
    not run as root), when it is the daemon's own user, or when it owns one of the ``kept``
    paths (the state folder, the token: an owner can change their modes)."""
    if not spec:
        return None
    try:
        entry = pwd.getpwuid(int(spec)) if spec.isdigit() else pwd.getpwnam(spec)
    except KeyError:
        raise EnactmentError(f"[process] run-as: there is no user {spec!r} on this "
                             "machine") from None
    me = os.geteuid()
    if entry.pw_uid == me:
        raise EnactmentError(f"[process] run-as: {spec!r} is the daemon's own user; commands "
                             "would reach its token (leave run-as empty, or name another user)")
    if me != 0:
        raise EnactmentError(f"[process] run-as = {spec}: the daemon runs as uid {me}, not "
                             "root, so it cannot start commands as another user")
    for path in kept:
        try:
            owner = path.stat().st_uid
        except OSError:
            continue
        if owner == entry.pw_uid:
            raise EnactmentError(f"[process] run-as: user {entry.pw_name!r} owns {path}, so "
                                 "its commands could open it; give it to the daemon's user")
    groups = tuple(sorted(set(os.getgrouplist(entry.pw_name, entry.pw_gid))))
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)
