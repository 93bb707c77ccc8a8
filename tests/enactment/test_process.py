"""The ``process`` enactment backend, with real local processes (and real cgroups if the machine
lets us make them)."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import attrs
import pytest

from lease_manager.config.schema import load_config
from lease_manager.enactment import os_processes as processes
from lease_manager.enactment import process_backend as process_mod
from lease_manager.enactment.base import EnactmentError, VMWork, Work
from lease_manager.enactment.os_processes import proc_stat
from lease_manager.enactment.process_backend import ProcessBackend
from lease_manager.kernel.resources import parse_site
from lease_manager.plugins import Plugins

from daemon_support import wait_for

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _v1_usable() -> bool:
    for hierarchy in ("cpu", "freezer"):
        base = CGROUP_ROOT / hierarchy
        if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
            return False
    return True


def _v2_root() -> Path | None:
    """A cgroup v2 mount where groups can be made (the root on a v2 machine, the unified
    hierarchy on a hybrid one)."""
    for root in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        if (root / "cgroup.controllers").exists() and os.access(root, os.W_OK):
            probe = root / f"lm-probe-{os.getpid()}"
            try:
                probe.mkdir()
            except OSError:
                continue
            ok = (probe / "cgroup.freeze").exists()
            probe.rmdir()
            if ok:
                return root
    return None


V1 = _v1_usable()
V2_ROOT = _v2_root()


def make_backend(tmp_path: Path, *settings: str, cgroup_root=None,
                 resources: str = "2 CPU:2 Memory:1024") -> ProcessBackend:
    ini = tmp_path / "lm.ini"
    ini.write_text("[simulation]\n"
                   f"resources = {resources}\n"
                   "[daemon]\n"
                   f"state-dir = {tmp_path / 'state'}\n")
    config = load_config(ini, Plugins(entry_points=False).schema, list(settings))
    ctx = SimpleNamespace(config=config, site=parse_site(resources))
    return ProcessBackend(ctx, cgroup_root=cgroup_root)


def work(lease_id: int, command: str, vms: int = 2, cpu: float = 1.0) -> Work:
    now = time.time()
    return Work(lease_id, command,
                tuple(VMWork(i, i % 2, f"node-{i % 2 + 1}", cpu, 512) for i in range(vms)),
                now, now + 60)


def record(backend: ProcessBackend, lease_id: int) -> dict:
    rec = backend._load(lease_id)
    assert rec is not None
    return rec


def gone(pid: int) -> bool:
    stat = proc_stat(pid)
    return stat is None or stat[0] == "Z"


def group_gone(pgid: int) -> bool:
    return not processes.group_members(pgid)


COUNTER = 'i=0; while :; do i=$((i+1)); echo $i >> count; sleep 0.05; done'


def size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


@pytest.fixture
def backends():
    made: list[ProcessBackend] = []
    yield made
    for backend in made:          # never leave processes or cgroups behind
        for path in backend.root.glob("lease-*/work.json"):
            backend.stop(int(path.parent.name.split("-")[1]))
        backend.close()


# ------------------------------------------------------------------------------------------ tests

def test_start_env_status_stop(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=none")
    backends.append(b)
    out = tmp_path / "out"
    b.prepare(work(7, ""))
    assert b.status(7).state == "absent"
    b.start(work(7, f'echo "$LM_LEASE_ID $LM_VM_INDEX" >> {out}; sleep 30'))
    assert b.status(7).state == "running"
    wait_for(lambda: out.exists() and len(out.read_text().splitlines()) == 2, what="output")
    assert sorted(out.read_text().splitlines()) == ["7 0", "7 1"]
    vm_dir = b.root / "lease-7" / "vm-0"
    assert (vm_dir / "out.log").exists() and (vm_dir / "err.log").exists()
    with pytest.raises(EnactmentError, match="already has running work"):
        b.start(work(7, "sleep 1"))
    pids = [vm["pid"] for vm in record(b, 7)["vms"]]
    b.stop(7)
    assert b.status(7).state == "absent"
    for pid in pids:
        wait_for(lambda pid=pid: group_gone(pid), 3, f"process group {pid} to end")
    b.stop(7)           # idempotent
    b.stop(99)
    assert b.status(7).state == "absent"


def test_commands_get_a_clean_environment(tmp_path, backends, monkeypatch):
    """A lease's command sees PATH, its lease variables and its own ``work.env``, never the
    daemon's token nor anything else of the daemon's environment."""
    monkeypatch.setenv("LEASE_MANAGER_TOKEN", "secret-token")
    monkeypatch.setenv("SOME_DAEMON_SETTING", "x")
    b = make_backend(tmp_path, "process.cgroups=none")
    backends.append(b)
    out = tmp_path / "env.txt"
    b.start(work(8, f"env > {out}.$LM_VM_INDEX", vms=1))
    wait_for(lambda: b.status(8).state == "exited", what="the command to end")
    seen = dict(line.split("=", 1) for line in (tmp_path / "env.txt.0").read_text().splitlines()
                if "=" in line)
    assert "LEASE_MANAGER_TOKEN" not in seen and "SOME_DAEMON_SETTING" not in seen
    assert seen["LM_LEASE_ID"] == "8" and seen["PATH"] == os.environ["PATH"]


def test_commands_never_start_inside_the_state_folder(tmp_path, backends):
    """A lease without a ``workdir`` runs in a folder of its own under the work root, outside
    the state folder: the daemon's token is not reachable through relative paths from there
    (it was, with ``cat ../../../../token``, when the command ran in its folder of logs)."""
    b = make_backend(tmp_path, "process.cgroups=none")
    backends.append(b)
    state = (tmp_path / "state").resolve()
    (state / "token").write_text("secret-token\n")
    b.start(work(12, "pwd; for up in .. ../.. ../../.. ../../../.. ../../../../..; do "
                     "cat $up/token 2>/dev/null; done", vms=2))
    wait_for(lambda: b.status(12).state == "exited", what="the command to end")
    for vm in (0, 1):
        out = (b.root / "lease-12" / f"vm-{vm}" / "out.log").read_text()   # logs stay there
        cwd = Path(out.splitlines()[0]).resolve()
        assert cwd == (tmp_path / "state-work" / "lease-12" / f"vm-{vm}").resolve()
        assert cwd != state and state not in cwd.parents
        assert "secret-token" not in out
    assert (tmp_path / "state-work").stat().st_mode & 0o077 == 0


def test_a_work_root_in_or_around_the_state_folder_is_refused(tmp_path, backends):
    for root in (tmp_path / "state", tmp_path / "state" / "work", tmp_path):
        with pytest.raises(EnactmentError, match="outside the state folder"):
            make_backend(tmp_path, "process.cgroups=none", f"daemon.work-root={root}")
    b = make_backend(tmp_path, "process.cgroups=none",
                     f"daemon.work-root={tmp_path / 'elsewhere'}")
    backends.append(b)
    with pytest.raises(EnactmentError, match="inside the daemon's state folder"):
        b.start(attrs.evolve(work(13, "true", vms=1), workdir=str(tmp_path / "state")))
    b.start(work(14, "pwd", vms=1))
    wait_for(lambda: b.status(14).state == "exited", what="the command to end")
    out = (b.root / "lease-14" / "vm-0" / "out.log").read_text().strip()
    assert Path(out).resolve() == (tmp_path / "elsewhere" / "lease-14" / "vm-0").resolve()


def test_output_logs_and_empty_command(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=none")
    backends.append(b)
    b.start(work(1, "echo hello; echo oops >&2; sleep 30", vms=1))
    log_dir = b.root / "lease-1" / "vm-0"
    wait_for(lambda: (log_dir / "out.log").read_text() == "hello\n", what="out.log")
    wait_for(lambda: (log_dir / "err.log").read_text() == "oops\n", what="err.log")
    b.start(work(2, "", vms=1))      # holds its resources until stopped
    time.sleep(0.1)
    assert b.status(2).state == "running"
    b.stop(2)
    assert b.status(2).state == "absent"


def test_exit_codes(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=none")
    backends.append(b)
    b.start(work(1, "exit 3"))
    b.start(work(2, "true"))
    b.start(work(3, 'if [ "$LM_VM_INDEX" = 1 ]; then exit 5; fi'))
    assert wait_for(lambda: b.status(1).state == "exited", what="exit") is True
    assert b.status(1).exit_code == 3
    wait_for(lambda: b.status(2).state == "exited", what="exit")
    assert b.status(2).exit_code == 0
    wait_for(lambda: b.status(3).state == "exited", what="exit")
    assert b.status(3).exit_code == 5
    # a lease whose work ended may be started again
    b.start(work(2, "exit 4", vms=1))
    wait_for(lambda: b.status(2).state == "exited", what="exit")
    assert b.status(2).exit_code == 4
    for lease in (1, 2, 3):
        b.stop(lease)
        assert b.status(lease).state == "absent"


def test_vanished(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=none")
    backends.append(b)
    b.start(work(4, "sleep 30"))
    pgid = record(b, 4)["vms"][1]["pgid"]
    os.killpg(pgid, signal.SIGKILL)
    status = wait_for(lambda: (s := b.status(4)).state == "vanished" and s, what="vanished")
    assert str(pgid) in status.detail
    b.stop(4)
    assert b.status(4).state == "absent"


def check_suspend_resume(b: ProcessBackend, tmp_path: Path, lease_id: int) -> None:
    b.start(work(lease_id, COUNTER, vms=1, cpu=0))
    count = b.work_root() / f"lease-{lease_id}" / "vm-0" / "count"
    wait_for(lambda: size(count) > 0, what="the counter")
    b.suspend(lease_id)
    assert b.status(lease_id).state == "suspended"
    vm = record(b, lease_id)["vms"][0]
    if vm["cgroups"].get("freezer"):
        assert process_mod.is_frozen(vm["cgroups"]) is True
    else:
        wait_for(lambda: processes.group_stopped(vm["pid"], vm["pgid"]), 2, "SIGSTOP")
        assert proc_stat(vm["pid"])[0] == "T"
    time.sleep(0.1)          # let a write in flight land
    before = size(count)
    time.sleep(0.3)
    assert size(count) == before, "a suspended VM made progress"
    b.suspend(lease_id)      # again: nothing changes
    assert b.status(lease_id).state == "suspended"
    b.resume(lease_id)
    assert b.status(lease_id).state == "running"
    wait_for(lambda: size(count) > before, 2, "progress after the resume")
    pid = vm["pid"]
    # stopping a suspended lease ends it too
    b.suspend(lease_id)
    b.stop(lease_id)
    wait_for(lambda: group_gone(pid), 3, "the VM's processes to end")
    for folder in vm["cgroups"].values():
        assert not Path(folder).exists()
    with pytest.raises(EnactmentError):
        b.suspend(lease_id)
    with pytest.raises(EnactmentError):
        b.resume(lease_id)


def test_suspend_resume_signals(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=none")
    backends.append(b)
    check_suspend_resume(b, tmp_path, 5)


@pytest.mark.skipif(not V1, reason="cgroup v1 cpu+freezer not usable here")
def test_suspend_resume_cgroup_v1(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=v1")
    backends.append(b)
    assert b.cgroups.version == "v1" and b.cgroups.cpu and b.cgroups.freezer
    check_suspend_resume(b, tmp_path, 6)


@pytest.mark.skipif(V2_ROOT is None, reason="no usable cgroup v2 hierarchy with a freezer here")
def test_suspend_resume_cgroup_v2_freezer(tmp_path, backends, caplog):
    # on a hybrid machine the unified hierarchy has the v2 freezer but maybe no cpu controller
    with caplog.at_level(logging.WARNING, "lease_manager.enactment.process"):
        b = make_backend(tmp_path, cgroup_root=V2_ROOT)
    backends.append(b)
    assert b.cgroups.version == "v2" and b.cgroups.freezer
    check_suspend_resume(b, tmp_path, 8)


@pytest.mark.skipif(not V1, reason="cgroup v1 cpu+freezer not usable here")
def test_cpu_limit_v1(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=v1", "process.cpu-per-core=2")
    backends.append(b)
    b.start(work(9, "sleep 30", vms=2, cpu=1))     # 1 CPU of the site = half a core
    rec = record(b, 9)
    for vm in rec["vms"]:
        cpu = Path(vm["cgroups"]["cpu"])
        assert (cpu / "cpu.cfs_period_us").read_text().strip() == "100000"
        assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert vm["pid"] in process_mod.group_pids(vm["cgroups"])
        # the command runs in the group too
        assert len(process_mod.group_pids({"cpu": str(cpu)})) >= 1
    b.start(work(10, "sleep 30", vms=1, cpu=0))     # no CPU: no limit
    cpu = Path(record(b, 10)["vms"][0]["cgroups"]["cpu"])
    assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "-1"
    b.stop(9)
    b.stop(10)
    for vm in rec["vms"]:
        assert not Path(vm["cgroups"]["cpu"]).exists()


def test_restart_finds_work(tmp_path, backends):
    first = make_backend(tmp_path, "process.cgroups=auto")
    backends.append(first)
    first.start(work(11, COUNTER, vms=2, cpu=0))
    pids = [vm["pid"] for vm in record(first, 11)["vms"]]
    first.close()                          # the daemon stops; the work keeps running
    assert all(not gone(pid) for pid in pids)
    second = make_backend(tmp_path, "process.cgroups=auto")
    backends.append(second)
    assert second._children == {}
    assert second.status(11).state == "running"
    second.suspend(11)
    assert second.status(11).state == "suspended"
    third = make_backend(tmp_path, "process.cgroups=auto")
    backends.append(third)
    assert third.status(11).state == "suspended"
    third.resume(11)
    assert second.status(11).state == "running"
    third.stop(11)
    assert second.status(11).state == "absent"
    for pid in pids:
        wait_for(lambda pid=pid: group_gone(pid), 3, f"process group {pid} to end")
    third.stop(11)


def test_sigkill_after_grace(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=none", "process.stop-grace=0.5")
    backends.append(b)
    # the command ignores SIGTERM (and so does the wrapper's child shell running it)
    b.start(work(12, "trap '' TERM; while :; do sleep 0.05; done", vms=1))
    time.sleep(0.2)
    pgid = record(b, 12)["vms"][0]["pgid"]
    t0 = time.monotonic()
    b.stop(12)
    assert time.monotonic() - t0 < 0.45, "stop blocked for the grace period"
    assert b.status(12).state == "absent"
    assert not group_gone(pgid)            # still in its grace period
    b.stop(12)                             # idempotent while stopping
    wait_for(lambda: group_gone(pgid), 3, "the SIGKILL")
    wait_for(lambda: b._load(12) is None, 2, "the record to go")


def test_unfinished_stop_is_finished_by_a_new_backend(tmp_path, backends):
    b = make_backend(tmp_path, "process.cgroups=none", "process.stop-grace=0.3")
    backends.append(b)
    b.start(work(13, "trap '' TERM; while :; do sleep 0.05; done", vms=1))
    time.sleep(0.2)
    pgid = record(b, 13)["vms"][0]["pgid"]
    b.stop(13)
    b._timers.pop(13).cancel()              # the daemon dies before the SIGKILL
    assert record(b, 13)["state"] == "stopping"
    again = make_backend(tmp_path, "process.cgroups=none", "process.stop-grace=0.3")
    backends.append(again)
    wait_for(lambda: group_gone(pgid), 3, "the SIGKILL")
    wait_for(lambda: again._load(13) is None, 2, "the record to go")


def test_no_cgroups_degrades_with_one_warning(tmp_path, caplog, backends):
    fake = tmp_path / "fake-cgroup"        # nothing mounted there
    fake.mkdir()
    processes._warned.clear()
    with caplog.at_level(logging.WARNING, "lease_manager.enactment.process"):
        b = make_backend(tmp_path, cgroup_root=fake)
        backends.append(b)
        backends.append(make_backend(tmp_path, cgroup_root=fake))
    warnings = [r for r in caplog.records if r.name == "lease_manager.enactment.process"]
    assert len(warnings) == 1
    assert "CPU limits are off" in warnings[0].getMessage()
    assert "SIGSTOP" in warnings[0].getMessage()
    assert b.cgroups.version == "none"
    b.start(work(1, "sleep 30", vms=1))
    assert record(b, 1)["vms"][0]["cgroups"] == {}
    b.suspend(1)
    assert b.status(1).state == "suspended"
    b.stop(1)
    assert b.status(1).state == "absent"


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_explicit_cgroup_version_unavailable_is_an_error(tmp_path, version):
    fake = tmp_path / "fake-cgroup"
    fake.mkdir()
    with pytest.raises(EnactmentError, match=f"cgroups = {version}"):
        make_backend(tmp_path, f"process.cgroups={version}", cgroup_root=fake)


def test_v2_detection_on_a_fake_root(tmp_path, caplog):
    """A cgroup v2 root without the cpu controller: the freezer is used, CPU limits are off."""
    fake = tmp_path / "fake-v2"
    (fake / "lease_manager").mkdir(parents=True)
    (fake / "cgroup.controllers").write_text("memory io\n")
    (fake / "lease_manager" / "cgroup.procs").write_text("")
    (fake / "lease_manager" / "cgroup.freeze").write_text("0\n")
    processes._warned.clear()
    with caplog.at_level(logging.WARNING, "lease_manager.enactment.process"):
        groups = process_mod.Cgroups("auto", fake)
    assert (groups.version, groups.freezer, groups.cpu) == ("v2", True, False)
    assert "CPU limits are off" in caplog.text
    with pytest.raises(EnactmentError, match="cpu controller"):
        process_mod.Cgroups("v2", fake)
    # with cpu: it is enabled in the subtree of the root and of lease_manager
    (fake / "cgroup.controllers").write_text("cpu memory io\n")
    (fake / "cgroup.subtree_control").write_text("")
    (fake / "lease_manager" / "cgroup.subtree_control").write_text("")
    groups = process_mod.Cgroups("v2", fake)
    assert (groups.version, groups.freezer, groups.cpu) == ("v2", True, True)
    assert (fake / "cgroup.subtree_control").read_text() == "+cpu"
    assert (fake / "lease_manager" / "cgroup.subtree_control").read_text() == "+cpu"
    # a VM's group: cpu.max gets quota and period
    (fake / "lease_manager" / "vm").mkdir()
    (fake / "lease_manager" / "vm" / "cgroup.freeze").write_text("0")
    made = groups.create("vm", 1.5)
    assert made == {"cpu": str(fake / "lease_manager" / "vm"),
                    "freezer": str(fake / "lease_manager" / "vm")}
    assert (fake / "lease_manager" / "vm" / "cpu.max").read_text() == "150000 100000"
    groups.create("vm", None)
    assert (fake / "lease_manager" / "vm" / "cpu.max").read_text() == "max 100000"
    process_mod.set_frozen(made, True)
    assert process_mod.is_frozen(made) is True
    process_mod.set_frozen(made, False)
    assert process_mod.is_frozen(made) is False


def test_registered():
    plugins = Plugins(entry_points=False)
    assert plugins.policies["enactment"]["process"][0] is ProcessBackend
    assert plugins.schema.option("process", "cgroups").default == "auto"


def test_known_leases_lists_the_leases_with_work(tmp_path):
    backend = make_backend(tmp_path)
    try:
        assert backend.known_leases() == []
        backend.start(work(7, "sleep 30"))
        backend.start(work(9, "sleep 30"))
        assert backend.known_leases() == [7, 9]
        backend.stop(7)
        assert backend.known_leases() == [9]
    finally:
        backend.stop(7)
        backend.stop(9)


def test_a_daemon_killed_while_starting_a_vm_finds_its_process(tmp_path):
    """The record is written before each VM's process exists; a crash right after the spawn
    leaves a VM without a process id, which the wrapper's own pid file supplies."""
    backend = make_backend(tmp_path)
    try:
        backend.start(work(5, "sleep 30", vms=2))
        record_path = backend._record_path(5)
        record = json.loads(record_path.read_text())
        pids = [vm["pid"] for vm in record["vms"]]
        for vm in record["vms"]:          # as if the daemon died before recording the pids
            vm.update(pid=None, pgid=None, start_time=None)
        record_path.write_text(json.dumps(record))
        again = make_backend(tmp_path)
        assert again.status(5).state == "running"
        assert [vm["pid"] for vm in json.loads(record_path.read_text())["vms"]] == pids
        again.stop(5)
        assert again.status(5).state == "absent"
    finally:
        backend.stop(5)


def test_a_lease_none_of_whose_vms_started_has_no_work(tmp_path):
    backend = make_backend(tmp_path)
    backend.start(work(6, "sleep 30", vms=1))
    record_path = backend._record_path(6)
    record = json.loads(record_path.read_text())
    pid = record["vms"][0]["pid"]
    backend.stop(6)
    record["vms"][0].update(pid=None, pgid=None, start_time=None)
    record_path.parent.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record))
    Path(record["vms"][0]["exit_file"] + ".pid").unlink(missing_ok=True)
    again = make_backend(tmp_path)
    assert again.status(6).state == "absent"
    assert again.known_leases() == []
    assert pid


@pytest.mark.skipif(not V1, reason="cgroup v1 cpu+freezer not usable here")
def test_cgroups_no_lease_owns_are_swept(tmp_path):
    backend = make_backend(tmp_path, "process.cgroups=v1")
    try:
        backend.start(work(3, "sleep 30", vms=1))
        owned = set(json.loads(backend._record_path(3).read_text())["vms"][0]["cgroups"].values())
        stray = [parent / f"l99-v0-{backend.token}" for parent in backend.cgroups.parents.values()]
        foreign = [parent / "l99-v0-someone-else" for parent in backend.cgroups.parents.values()]
        for folder in stray + foreign:
            folder.mkdir()
        backend.refresh()
        assert not any(folder.exists() for folder in stray)
        assert all(folder.exists() for folder in foreign)   # another daemon's
        assert all(Path(folder).exists() for folder in owned)
    finally:
        backend.stop(3)
        for folder in foreign:
            folder.rmdir()


def test_resize_starts_and_stops_vm_processes(tmp_path, backends):
    """A malleable lease grows from 2 VMs to 4 (two more processes, the first two untouched),
    then shrinks to 1 (VMs 1-3 stopped); a resize of work that is not running is refused."""
    b = make_backend(tmp_path, "process.cgroups=none")
    backends.append(b)
    out = tmp_path / "out"
    command = f'echo "$LM_VM_INDEX" >> {out}; sleep 30'
    b.start(work(8, command, vms=2))
    wait_for(lambda: out.exists() and len(out.read_text().splitlines()) == 2, what="2 VMs")
    first = {vm["index"]: vm["pid"] for vm in record(b, 8)["vms"]}
    b.resize(work(8, command, vms=4))
    wait_for(lambda: len(out.read_text().splitlines()) == 4, what="4 VMs")
    assert sorted(out.read_text().split()) == ["0", "1", "2", "3"]
    now = {vm["index"]: vm["pid"] for vm in record(b, 8)["vms"]}
    assert now[0] == first[0] and now[1] == first[1] and len(now) == 4
    b.resize(work(8, command, vms=1))
    assert [vm["index"] for vm in record(b, 8)["vms"]] == [0]
    for index in (1, 2, 3):
        wait_for(lambda pid=now[index]: group_gone(pid), 5, f"VM {index} to stop")
    assert not gone(now[0])
    assert b.status(8).state == "running"
    with pytest.raises(EnactmentError, match="no work to resize"):
        b.resize(work(9, command, vms=1))
    b.stop(8)
