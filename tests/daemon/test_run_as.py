"""``[process] run-as``: a lease's command run as another user cannot read the daemon's token,
by its absolute path or by ``..`` from its working folder; run as the daemon's user, it can.

Switching users needs root: run as another user, these tests are skipped, saying so. The
state folder's parent is made open (0755) so that what stops the command is the state folder's
own mode (0700) and the token's (0600), not a closed folder above them: a file beside the state
folder, open to all, is read in the same command as a check.
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lease_manager.enactment.run_as import resolve_run_as
from lease_manager.errors import LeaseManagerError

from daemon_support import ThreadDaemon, kill_leftover_processes, wait_for, write_config

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc"),
    pytest.mark.skipif(os.geteuid() != 0, reason="running commands as another user needs a "
                       "daemon running as root; these tests run as a user that is not"),
]


def _nobody() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("this machine has no user `nobody`")


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder every user can enter (pytest's tmp_path sits under a 0700 folder of root's)."""
    folder = Path(tempfile.mkdtemp(prefix="lm-run-as-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def probe(base: Path, run_as: str) -> tuple[str, str, str]:
    """Run one lease whose command tries the token by both paths and a public file; its
    output, its errors, and the token."""
    public = base / "public"
    public.write_text("public-text\n")
    public.chmod(0o644)
    extra = "[process]\ncgroups = none\n" + (f"run-as = {run_as}\n" if run_as else "")
    config = write_config(base, resources="1 CPU:1 Memory:1024", enactment="process",
                          extra=extra)
    token = base / "state" / "token"
    command = (f"id -u; cat {token}; echo absolute=$?; cat ../../../state/token; "
               f"echo relative=$?; cat {public}; echo public=$?; pwd > here; echo own=$?")
    try:
        with ThreadDaemon(config) as td:
            lease = td.client.submit({"start": "now", "duration": 60, "command": command})
            wait_for(lambda: td.client.lease(lease["id"])["state"] in ("done", "failed"), 20,
                     what="the lease's command to end")
            assert td.client.lease(lease["id"])["state"] == "done"
    finally:
        kill_leftover_processes(config)
    logs = base / "state" / "enactment" / "process" / f"lease-{lease['id']}" / "vm-0"
    return ((logs / "out.log").read_text(), (logs / "err.log").read_text(),
            token.read_text().strip())


def test_a_command_run_as_nobody_cannot_read_the_token(base):
    nobody = _nobody()
    out, err, token = probe(base, "nobody")
    lines = out.splitlines()
    assert lines[0] == str(nobody.pw_uid)
    assert token not in out
    assert "absolute=1" in lines and "relative=1" in lines
    assert err.count("Permission denied") == 2, err
    # what stopped it is the token's folder, not a closed folder above: the public file
    # beside the state folder was read, and the command could write in its own folder
    assert "public-text" in lines and "public=0" in lines and "own=0" in lines
    here = base / "state-work" / "lease-1" / "vm-0" / "here"
    assert here.stat().st_uid == nobody.pw_uid


def test_a_command_run_as_the_daemons_user_reads_the_token(base):
    out, err, token = probe(base, "")
    lines = out.splitlines()
    assert lines[0] == str(os.geteuid())
    assert lines.count(token) == 2          # by the absolute path and through ..
    assert "absolute=0" in lines and "relative=0" in lines


@pytest.mark.parametrize("user, says", [
    ("no-such-user-lm", "there is no user 'no-such-user-lm' on this machine"),
    ("root", "'root' is the daemon's own user"),
    ("0", "'0' is the daemon's own user"),
])
def test_a_run_as_user_that_cannot_be_used_is_refused_at_start(base, user, says):
    config = write_config(base, enactment="process",
                          extra=f"[process]\ncgroups = none\nrun-as = {user}\n")
    with pytest.raises(LeaseManagerError) as caught:
        ThreadDaemon(config)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_run_as_user_that_owns_the_state_folder_is_refused(base):
    nobody = _nobody()
    state = base / "state"
    state.mkdir(mode=0o700)
    os.chown(state, nobody.pw_uid, nobody.pw_gid)
    config = write_config(base, enactment="process",
                          extra="[process]\ncgroups = none\nrun-as = nobody\n")
    with pytest.raises(LeaseManagerError, match="user 'nobody' owns .*state, so its commands"):
        ThreadDaemon(config)


def test_a_daemon_that_is_not_root_refuses_run_as_in_one_line():
    """Checked in a forked child that became `nobody` (this machine's Python may not be one
    `nobody` can start, so no new program is run)."""
    nobody = _nobody()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:        # the child: become nobody, try, report, leave without cleanup
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            resolve_run_as("root", ())
            message = "accepted"
        except BaseException as exc:        # noqa: BLE001 - reported to the parent
            message = str(exc)
        os.write(write, message.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        message = pipe.read()
    os.waitpid(pid, 0)
    assert message == (f"[process] run-as = root: the daemon runs as uid {nobody.pw_uid}, "
                       "not root, so it cannot start commands as another user")
