"""The daemon's state folder: its lock (one daemon per folder), the API token, the
``daemon.json`` that says where the daemon listens, and the refusal of loose permissions."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from lease_manager.errors import LeaseManagerError


def lock_state_dir(state_dir: Path) -> Any:
    """Hold ``state-dir/daemon.lock`` for the life of the daemon: two daemons on one state
    would both carry out the same leases. The lock goes with the process, even on SIGKILL."""
    import fcntl

    path = state_dir / "daemon.lock"
    lock = open(path, "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.seek(0)
        holder = lock.read().strip() or "?"
        lock.close()
        raise LeaseManagerError(f"another daemon (pid {holder}) is using the state folder "
                                f"{state_dir}") from None
    lock.seek(0)
    lock.truncate()
    lock.write(str(os.getpid()))
    lock.flush()
    return lock


def refuse_loose_mode(path: Path, mode: int) -> None:
    """Refuse to use ``path`` (the state folder, the token file) if users other than its owner
    may read or enter it: made beforehand with 0755 or 0644, it was used without a word."""
    try:
        have = path.stat().st_mode & 0o777
    except OSError:
        return
    if have & 0o077:
        raise LeaseManagerError(f"{path} is open to other users (mode {have:04o}): run "
                                f"`chmod {mode:o} {path}` (the daemon keeps the API token and "
                                "the users' commands there)")


def load_token(path: Path) -> str:
    """The API token in ``path``, created (mode 0600) with a random token if missing; an
    existing one open to other users is refused."""
    refuse_loose_mode(path, 0o600)      # made meanwhile
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text().strip()
        if not token:
            raise LeaseManagerError(f"{path}: the token file is empty") from None
        return token
    except OSError as exc:
        raise LeaseManagerError(f"cannot create the token file {path}: {exc.strerror}") from None
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def write_daemon_file(path: Path, info: dict) -> None:
    """Replace ``path`` with ``info`` as JSON, at once (a reader never sees half a file)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, path)
