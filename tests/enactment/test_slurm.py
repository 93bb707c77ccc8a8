"""The ``slurm`` enactment backend against a real Slurm (``.ci/slurm-setup.sh`` starts one on
this machine). The tests skip, saying what is missing, only when no usable Slurm is running."""

from __future__ import annotations

import calendar
import functools
import math
import time
import types
from pathlib import Path

import pytest

from lease_manager.config.schema import load_config
from lease_manager.enactment.base import EnactmentError, VMWork, Work
from lease_manager.enactment.slurm import SlurmBackend
from lease_manager.kernel.resources import parse_site
from lease_manager.plugins import Plugins

from daemon_support import wait_for as poll
from slurm_support import sh as _sh

#: the Slurm runs belong to the long profile (LM_LONG=1; CI starts Slurm and runs them)
pytestmark = pytest.mark.long


def make_backend(tmp_path: Path, node: str | None, cpus: int, **slurm: str) -> SlurmBackend:
    options = {"nodes": node or "", **slurm}
    ini = tmp_path / "lm.ini"
    ini.write_text(
        "[simulation]\n"
        f"resources = 1 CPU:{cpus} Memory:1024\n"
        "[daemon]\n"
        f"state-dir = {tmp_path / 'state'}\n"
        "enactment = slurm\n"
        "[slurm]\n" + "".join(f"{k} = {v}\n" for k, v in options.items() if v))
    config = load_config(ini, Plugins(entry_points=False).schema)
    ctx = types.SimpleNamespace(config=config,
                                site=parse_site(config.get("simulation", "resources")))
    return SlurmBackend(ctx)


@pytest.fixture
def lease_ids():
    """Fresh lease ids (unlikely to clash with leftovers), cleaned up from Slurm afterwards."""
    base = int(time.time() * 1000) % 10**9 * 10
    ids = [base + i for i in range(5)]
    yield ids
    for lease_id in ids:
        _sh("scancel", f"--name=lm-{lease_id}")
        _sh("scontrol", "delete", f"ReservationName=lm-{lease_id}")


@pytest.fixture
def backend(tmp_path, slurm_node):
    return make_backend(tmp_path, slurm_node[0], slurm_node[1])


def reservation(lease_id: int) -> dict[str, str] | None:
    out = _sh("scontrol", "-o", "show", "reservation", f"lm-{lease_id}")
    if out.returncode != 0:
        assert "not found" in out.stdout + out.stderr, out.stderr
        return None
    fields: dict[str, str] = {}
    for token in out.stdout.split():
        key, _, value = token.partition("=")
        fields.setdefault(key, value)
    return fields


def utc(text: str) -> int:
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def live_jobs(lease_id: int) -> list[str]:
    out = _sh("squeue", "-h", f"--name=lm-{lease_id}", "-o", "%i %T", check=True).stdout
    return [line for line in out.splitlines()
            if line.split()[1] in ("PENDING", "RUNNING", "SUSPENDED", "CONFIGURING")]


#: Slurm's commands are slow: poll them five times a second
wait_for = functools.partial(poll, every=0.2)


def vms(count: int, cpu: float = 1) -> tuple[VMWork, ...]:
    return tuple(VMWork(index=i, node=0, node_name="node-1", cpu=cpu, memory=256)
                 for i in range(count))


def test_prepare_creates_updates_and_replaces_the_reservation(backend, lease_ids, slurm_node,
                                                              monkeypatch):
    # the backend must not depend on the daemon's time zone: scontrol gets UTC times
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        lease = lease_ids[0]
        now = time.time()
        work = Work(lease, "true", vms(1), start=now + 100.6, end=now + 400.2)
        backend.prepare(work)
        res = reservation(lease)
        assert res is not None, "prepare did not create the reservation"
        # whole seconds, both rounded down (back-to-back leases must not overlap)
        assert utc(res["StartTime"]) == math.floor(now + 100.6)
        assert utc(res["EndTime"]) == math.floor(now + 400.2)
        assert res["Nodes"] == slurm_node[0] and res["CoreCnt"] == "1"
        assert res["Users"] == backend.user
        assert backend.status(lease).state == "planned"

        # a new plan for the same placement moves the reservation in place
        backend.prepare(Work(lease, "true", vms(1), start=now + 200, end=now + 500))
        res = reservation(lease)
        assert (utc(res["StartTime"]), utc(res["EndTime"])) == (int(now + 200), int(now + 500))

        # a start already past is "now"
        backend.prepare(Work(lease, "true", vms(1), start=now - 50, end=now + 300))
        res = reservation(lease)
        assert abs(utc(res["StartTime"]) - time.time()) <= 3
        assert res["State"] == "ACTIVE"

        if slurm_node[1] >= 2:   # another placement: 2 cores (re-created, Slurm cannot update it)
            backend.prepare(Work(lease, "true", vms(2), start=now + 100, end=now + 300))
            res = reservation(lease)
            assert res["CoreCnt"] == "2" and utc(res["StartTime"]) == int(now + 100)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    backend.stop(lease)
    assert reservation(lease) is None
    assert backend.status(lease).state == "absent"


def test_work_runs_suspends_resumes_and_exits_with_its_code(backend, lease_ids, slurm_node,
                                                            tmp_path):
    lease = lease_ids[1]
    count = min(2, slurm_node[1])
    out = tmp_path / "out"
    out.mkdir()
    command = (f'cd {out}; echo "$LM_LEASE_ID $LM_VM_INDEX $LM_NODE $GREETING" > vm.$LM_VM_INDEX;'
               ' i=0; while [ ! -e go ]; do i=$((i+1)); echo $i > count.$LM_VM_INDEX;'
               ' sleep 0.1; done; exit $((7 + LM_VM_INDEX))')
    now = time.time()
    work = Work(lease, command, vms(count), start=now, end=now + 120,
                env={"GREETING": "hello"})
    backend.start(work)                                  # no prepare: start creates it
    assert reservation(lease) is not None
    wait_for(lambda: all((out / f"vm.{i}").exists() for i in range(count)), 20,
             "every VM's command to write its file")
    for i in range(count):
        assert (out / f"vm.{i}").read_text().split() == [str(lease), str(i), slurm_node[0],
                                                         "hello"]
    assert backend.status(lease).state == "running"
    assert len(live_jobs(lease)) == 1

    # a new plan moving the end: the reservation and the running job follow it
    backend.prepare(Work(lease, command, vms(count), start=now, end=now + 150))
    assert utc(reservation(lease)["EndTime"]) == int(now + 150)
    job = _sh("scontrol", "-o", "show", "job", live_jobs(lease)[0].split()[0]).stdout
    assert f"EndTime={time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(int(now + 150) - 1))}" in job

    backend.suspend(lease)
    assert backend.status(lease).state == "suspended"
    time.sleep(0.5)
    frozen = (out / "count.0").read_text()
    time.sleep(1.0)
    assert (out / "count.0").read_text() == frozen, "the suspended command kept running"

    backend.resume(lease)
    assert backend.status(lease).state == "running"
    wait_for(lambda: (out / "count.0").read_text() != frozen, 10, "the resumed command to go on")

    (out / "go").touch()
    status = wait_for(lambda: (s := backend.status(lease)).state == "exited" and s, 20,
                      "the work to exit")
    assert status.exit_code == 7                         # the first non-zero code, by VM

    backend.stop(lease)
    assert reservation(lease) is None
    assert live_jobs(lease) == []
    assert backend.status(lease).state == "absent"
    backend.stop(lease)                                  # idempotent
    assert backend.status(lease).state == "absent"


def test_exit_code_survives_slurm_forgetting_the_job(backend, lease_ids, tmp_path):
    lease = lease_ids[2]
    now = time.time()
    backend.start(Work(lease, "exit 3", vms(1), start=now, end=now + 60))
    wait_for(lambda: backend.status(lease).state == "exited", 20, "the work to exit")
    # without accounting, squeue forgets a job after MinJobAge: the exit-code file remains
    backend._jobs = lambda: []
    assert backend.status(lease).state == "exited" and backend.status(lease).exit_code == 3
    del backend._jobs
    backend.stop(lease)
    assert backend.status(lease).state == "absent"


def test_jobs_do_not_get_the_daemons_environment(backend, lease_ids, tmp_path, monkeypatch):
    """sbatch passes its environment to the job: the daemon's token must not be in it."""
    monkeypatch.setenv("LEASE_MANAGER_TOKEN", "secret-token")
    lease = lease_ids[4]
    now = time.time()
    out = tmp_path / "env.txt"
    backend.start(Work(lease, f"env > {out}", vms(1), start=now, end=now + 60))
    wait_for(lambda: backend.status(lease).state == "exited", 20, "the work to exit")
    text = out.read_text()
    assert "LEASE_MANAGER_TOKEN" not in text and f"LM_LEASE_ID={lease}" in text
    backend.stop(lease)


def test_jobs_run_outside_the_state_folder(backend, lease_ids, tmp_path):
    """A job without a ``workdir`` used to run in its ``job-dir``, which is in the state folder
    by default (with the token two levels up); it runs in ``WORK-ROOT/lease-<id>`` now."""
    lease = lease_ids[2]
    state = (tmp_path / "state").resolve()
    (state / "token").write_text("secret-token\n")
    now = time.time()
    out = tmp_path / "pwd.txt"
    backend.start(Work(lease, f"(pwd; cat ../token ../../token ../../../token) > {out} 2>&1",
                       vms(1), start=now, end=now + 60))
    wait_for(lambda: backend.status(lease).state == "exited", 20, "the work to exit")
    lines = out.read_text().splitlines()
    cwd = Path(lines[0]).resolve()
    assert cwd == (tmp_path / "state-work" / f"lease-{lease}").resolve()
    assert state not in cwd.parents and "secret-token" not in lines
    backend.stop(lease)


def test_empty_command_holds_until_the_end(backend, lease_ids):
    """An empty command holds its allocation until the lease's end: still running well after
    it started, and exited 0 once the end has passed. Slurm may take up to two seconds to
    start the job (``start`` waits for it) and ends it a second before the whole second of the
    lease's end at the latest (see the module doc): the lease is long enough that "well after
    it started" is before that, however slow the start."""
    lease = lease_ids[3]
    now = time.time()
    end = now + 8
    backend.start(Work(lease, "", vms(1), start=now, end=end))
    assert backend.status(lease).state == "running"
    time.sleep(max(0.0, now + 4 - time.time()))
    assert time.time() < math.floor(end) - 1   # (the earliest Slurm may end it)
    assert backend.status(lease).state == "running"
    status = wait_for(lambda: (s := backend.status(lease)).state == "exited" and s, 20,
                      "the held work to end")
    assert status.exit_code == 0 and time.time() >= math.floor(end) - 1
    backend.stop(lease)


def test_killed_job_is_vanished_and_back_to_back_reservations(backend, lease_ids, slurm_node):
    first, second = lease_ids[4], lease_ids[4] + 5
    lease_ids.append(second)
    now = time.time()
    cores = slurm_node[1]
    backend.start(Work(first, "sleep 100", vms(cores), start=now, end=now + 40))
    wait_for(lambda: "running" in backend.status(first).detail, 20, "the job to run")
    # the next lease on the same cores right at the first one's end: Slurm accepts it only
    # if the running job's end estimate was pulled inside its reservation
    backend.prepare(Work(second, "true", vms(cores), start=now + 40, end=now + 100))
    assert reservation(second) is not None
    backend.stop(second)

    _sh("scancel", f"--name=lm-{first}", check=True)      # behind the backend's back
    status = wait_for(lambda: (s := backend.status(first)).state == "vanished" and s, 20,
                      "the killed job to be seen")
    assert "CANCELLED" in status.detail
    backend.stop(first)
    assert backend.status(first).state == "absent" and reservation(first) is None


def test_node_names_come_from_sinfo(tmp_path, slurm_node):
    backend = make_backend(tmp_path, None, slurm_node[1])
    assert backend.node_names()[0] == slurm_node[0]


def test_errors_name_the_command_and_slurms_reason(tmp_path, slurm_node, lease_ids):
    backend = make_backend(tmp_path, "no-such-node", slurm_node[1])
    now = time.time()
    with pytest.raises(EnactmentError) as info:
        backend.prepare(Work(lease_ids[0], "true", vms(1), start=now + 60, end=now + 120))
    message = str(info.value)
    assert "scontrol create reservation" in message and "Invalid node name" in message
    assert "\n" not in message
    with pytest.raises(EnactmentError, match="no Slurm job"):
        backend.suspend(lease_ids[0])
    backend.stop(lease_ids[0])                             # nothing there: fine
    assert backend.status(lease_ids[0]).state == "absent"


def node_state(node: str) -> str:
    """The node's state as ``sinfo`` prints it: ``idle``, ``idle%`` (powering down), ``idle~``
    (powered down), ``idle#`` (powering up)..."""
    return _sh("sinfo", "-h", "-N", "-n", node, "-o", "%t").stdout.strip()


def test_power_off_and_on_go_through_slurms_power_saving(backend, slurm_node, lease_ids):
    """POWER_DOWN runs the cluster's SuspendProgram and the node is powered down (``~``);
    POWER_UP runs its ResumeProgram, the node registers again and takes work."""
    config = _sh("scontrol", "show", "config").stdout
    if "SuspendProgram          = (null)" in config or "ResumeProgram           = (null)" in config:
        pytest.skip("this Slurm has no power saving (SuspendProgram/ResumeProgram): "
                    ".ci/slurm-setup.sh configures one")
    node = slurm_node[0]
    try:
        backend.power_off(node)
        wait_for(lambda: node_state(node).endswith("~"), 60, "the node to be powered down")
        backend.power_on(node)
        wait_for(lambda: node_state(node) == "idle", 60, "the node to be up again")
    finally:   # never leave the test cluster's only node powered down
        if node_state(node)[-1:] in ("~", "%"):
            _sh("scontrol", "update", f"NodeName={node}", "State=POWER_UP")
    # the node registered again (a new boot time) and runs work
    lease = lease_ids[0]
    now = time.time()
    backend.start(Work(lease, "exit 4", vms(1), start=now, end=now + 60))
    status = wait_for(lambda: (s := backend.status(lease)).state == "exited" and s, 30,
                      "work on the node that was booted again")
    assert status.exit_code == 4
    backend.stop(lease)


def test_resize_is_refused_naming_what_slurm_cannot_do():
    """Slurm can shrink a running job but not grow it or move its tasks: malleable leases are
    refused with the reason (no Slurm needed: nothing is asked of it)."""
    w = Work(5, "true", (VMWork(0, 0, "n1", 1, 0),), 0.0, 60.0)
    with pytest.raises(EnactmentError, match="cannot resize running lease 5: Slurm can only "
                                             "shrink"):
        SlurmBackend.resize(types.SimpleNamespace(), w)   # type: ignore[arg-type]
