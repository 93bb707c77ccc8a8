"""The daemon with the ``slurm`` backend: leases become Slurm reservations with a job in
each, end when the job ends, and leave nothing behind in Slurm. Skips where no Slurm runs."""

from __future__ import annotations

import time

import pytest

from lease_manager.errors import ConfigError

from daemon_support import ThreadDaemon, wait_for, write_config
from slurm_support import sh as _sh


@pytest.fixture
def slurm_site(tmp_path, slurm_node):
    """``(config, prefix, node, cores)``: a daemon configuration for the Slurm node whose
    leases' Slurm names start with a prefix of this test's; their jobs and reservations are
    removed afterwards."""
    node, cpus = slurm_node
    prefix = f"lmd{int(time.time() * 1000) % 10**8}-"
    config = write_config(tmp_path, resources=f"1 CPU:{cpus} Memory:1024", enactment="slurm",
                          extra=f"[slurm]\nnodes = {node}\nname-prefix = {prefix}")
    yield config, prefix, node, cpus
    for lease_id in (1, 2):
        _sh("scancel", f"--name={prefix}{lease_id}")
        _sh("scontrol", "delete", f"ReservationName={prefix}{lease_id}")


def test_leases_through_the_daemon_become_slurm_reservations_and_jobs(tmp_path, slurm_site):
    config, prefix, node, _ = slurm_site
    out = tmp_path / "ran"
    with ThreadDaemon(config, "scheduling.suspension=none") as d:
        c = d.client
        be = c.submit({"duration": 120, "command": f"echo $LM_LEASE_ID >> {out}; sleep 1"})
        assert be["state"] == "active"
        ar = c.submit({"start": "+00:10:00", "duration": 300})
        assert ar["state"] == "scheduled"
        # the AR is booked in Slurm ahead of time, on the lease's node
        shown = _sh("scontrol", "-o", "show", "reservation", f"{prefix}{ar['id']}").stdout
        assert f"Nodes={node}" in shown
        # the best-effort lease's job runs its command, ends, and so does the lease
        wait_for(lambda: out.exists() and out.read_text().split() == [str(be["id"])], 60,
                 every=0.2, what="the Slurm job to run the command")
        done = wait_for(lambda: (lambda v: v if v["state"] == "done" else None)(
            c.lease(be["id"])), 60, every=0.2, what="the lease to end with its job")
        assert done["end"] is not None
        # the lease is done once its work ended; its reservation goes right after (Slurm
        # may keep it "in use" while the job completes): wait for that, do not race it
        wait_for(lambda: _sh("scontrol", "-o", "show", "reservation",
                             f"{prefix}{be['id']}").returncode != 0, 30, every=0.2,
                 what="the lease's Slurm reservation to be deleted")
        assert c.cancel(ar["id"])["state"] == "cancelled"
        assert _sh("scontrol", "-o", "show", "reservation",
                   f"{prefix}{ar['id']}").returncode != 0


def test_an_ar_preempts_a_slurm_lease_by_stopping_and_requeuing_it(tmp_path, slurm_site):
    """One Slurm node with all its cores in the site; real clock, seconds from the start::

        cores | BE 1 (job, sleeps) ... stopped at 6 | AR 2: 6-12 (its own job) | BE 1 again
    """
    config, _, _, cpus = slurm_site
    log = tmp_path / "log"
    with ThreadDaemon(config, "scheduling.suspension=none") as d:
        c = d.client
        be = c.submit({"duration": 60, "nodes": cpus,
                       "command": f"echo be$LM_VM_INDEX >> {log}; sleep 100"})
        assert be["state"] == "active"
        wait_for(lambda: log.exists() and "be0" in log.read_text(), 30, every=0.2,
                 what="the best-effort job to run")
        ar = c.submit({"start": "+6", "duration": 6, "nodes": cpus,
                       "command": f"echo ar$LM_VM_INDEX >> {log}; sleep 100"})
        assert ar["state"] == "scheduled", ar["reason"]
        wait_for(lambda: "ar0" in log.read_text(), 30, every=0.2,
                 what="the AR's job to run in its reservation")
        v = c.lease(be["id"])
        assert v["preemptions"] == 1 and v["state"] in ("queued", "scheduled")
        assert v["work_done"] == 0     # stopped, not suspended: it starts over
        wait_for(lambda: c.lease(ar["id"])["state"] == "done", 30, every=0.2,
                 what="the AR to end")
        wait_for(lambda: log.read_text().count("be0") == 2, 30, every=0.2,
                 what="the best-effort lease to run again after the AR")


def test_the_slurm_backend_asks_for_suspension_none(slurm_site):
    from lease_manager.daemon.service import Daemon

    with pytest.raises(ConfigError, match="suspension = none"):
        Daemon(slurm_site[0])
