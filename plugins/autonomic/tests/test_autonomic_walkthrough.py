"""Leases walked through Pending/Prepending and every monitoring update, by hand.

Site: 2 nodes x (CPU:4, Memory:4096); every VM CPU:1 Memory:1024; host selection
``no-policy`` (node 0 first), aggressive backfilling. Total[CPU] = 8; only CPU is stressed
below, so only the CPU entries of MonitoringData (MD) and ScheduledMonitoringData (SMD) move.
"""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager.kernel.lease import LeaseState
from lm_autonomic.monitoring import Monitor

from lma_helpers import Snapshots, lease, make_run

SITE = "2 CPU:4 Memory:4096"


def cpu(snap, t):
    return snap.at[t]["MD"]["CPU"], snap.at[t]["SMD"]["CPU"]


def test_prepending_full_host_and_back_then_released():
    """A (3 VMs, t=0-100), B (4 VMs, t=10-110), C (6 VMs, arrives at 20)."""
    snap = Snapshots()
    a, b, c = (lease(1, 3, 100, 0, "CPU"), lease(2, 4, 100, 10, "CPU"),
               lease(3, 6, 50, 20, "CPU"))
    run = make_run([a, b, c], resources=SITE, extra=[snap])
    summary = run.run()

    # t=0, A arrives: MD=3; Util=0, 0 + 3/8 <= 1 (7.1): Pending, SMD=3. Mapped: 3 VMs on
    # node 0 (1 CPU free: not full), contributing.
    assert cpu(snap, 0) == (3, 3)
    assert snap.at[0]["MJ"] == {1: {"CPU": 3.0, 0: {"contributing": True, "CPU": 3.0}}}
    # t=10, B arrives: MD=7; Util=3/8, 3/8 + 4/8 <= 1 (7.1): Pending, SMD=7. Mapped: 1 VM on
    # node 0, 3 on node 1. End of cycle: node 0 is full (0 CPU free) -> A's 3 and B's 1 stop
    # contributing: MD = SMD = 7 - 4 = 3; node 1 has 1 CPU free: not full.
    assert cpu(snap, 10) == (3, 3)
    assert snap.at[10]["full"] == [0]
    assert snap.at[10]["MJ"][1][0] == {"contributing": False, "CPU": 3.0}
    assert snap.at[10]["MJ"][2] == {"CPU": 4.0, 0: {"contributing": False, "CPU": 1.0},
                                    1: {"contributing": True, "CPU": 3.0}}
    # t=20, C arrives: MD = 3 + 6 = 9. 7.1: Util = 7/8 (running), 7/8 + 6/8 > 1; 7.2 (as
    # written, MD holds C): 9 + 6 = 15 > 8: Prepending (HELD). 7.3 at the cycle's start:
    # SMD + 6 = 9 > 8: stays.
    assert cpu(snap, 20) == (9, 3)
    assert snap.at[20]["prepending"] == [3] and snap.at[20]["held"] == [3]
    assert snap.at[20]["MJ"][3] == {"CPU": 6.0}
    # t=100, A ends: its contribution is 0 (its only part is on the full node): MD=9, SMD=3;
    # 7.3: 3 + 6 > 8, C stays. End of cycle: node 0 not full (3 free): B's part there counts
    # again: MD=10, SMD=4; A's keys are gone.
    assert cpu(snap, 100) == (10, 4)
    assert snap.at[100]["full"] == []
    assert snap.at[100]["MJ"][2][0] == {"contributing": True, "CPU": 1.0}
    assert 1 not in snap.at[100]["MJ"] and snap.at[100]["prepending"] == [3]
    # t=110, B ends: MD = 10 - 4 = 6, SMD = 0. 7.3: 0 + 6 <= 8: C Pending, SMD=6; it starts
    # at once: 4 VMs on node 0 (full), 2 on node 1 -> MD = SMD = 6 - 4 = 2.
    assert cpu(snap, 110) == (2, 2)
    assert snap.at[110]["MJ"] == {3: {"CPU": 6.0, 0: {"contributing": False, "CPU": 4.0},
                                      1: {"contributing": True, "CPU": 2.0}}}
    assert snap.at[110]["full"] == [0]
    # t=160, C ends: everything back to 0, no keys left.
    assert cpu(snap, 160) == (0, 0) and snap.at[160]["MJ"] == {}
    assert (a.start, b.start, c.start) == (0, 10, 110)
    assert c.wait == 90                      # its Prepending time counts as wait
    assert summary["avg_wait"] == pytest.approx(30)
    assert summary["autonomic_prepending"] == 1
    assert summary["autonomic_released_by_7_3"] == 1
    assert summary["autonomic_prepending_time_total"] == 90
    assert "held_leases_force_released" not in summary


def test_pending_by_inequality_7_2_and_future_part_on_full_host():
    """A and B as above; D (2 VMs, 50 s) arrives at 20: 7.1 fails, 7.2 holds."""
    snap = Snapshots()
    d = lease(4, 2, 50, 20, "CPU")
    run = make_run([lease(1, 3, 100, 0, "CPU"), lease(2, 4, 100, 10, "CPU"), d],
                   resources=SITE, extra=[snap])
    summary = run.run()
    # t=20: MD = 3 + 2 = 5. 7.1: 7/8 + 2/8 > 1. 7.2: 5 + 2 = 7 <= 8: Pending, SMD = 5. It
    # cannot start (1 CPU free); EASY reserves t=100 on node 0 (free from A's end). End of
    # cycle: node 0 is full now, so D's future part there stops counting: MD = SMD = 3.
    assert summary["autonomic_pending_by_7_2"] == 1 and summary["autonomic_prepending"] == 0
    assert cpu(snap, 20) == (3, 3)
    assert snap.at[20]["MJ"][4] == {"CPU": 2.0, 0: {"contributing": False, "CPU": 2.0}}
    # t=100: A ends, node 0 has 1 CPU free (D started there): B's 1 and D's 2 count again:
    # MD = SMD = 3 (B on node 1) + 1 + 2 = 6.
    assert cpu(snap, 100) == (6, 6)
    assert d.start == 100 and d.wait == 80


def test_exclude_arrival_reading_of_7_2():
    """With ``exclude-arrival``, 7.2 does not count the arriving lease twice."""
    snap = Snapshots()
    # A, B as above; E (3 VMs) at 20: 7.1: 7/8 + 3/8 > 1; as written: (3 + 3) + 3 = 9 > 8
    # (Prepending), excluding the arrival: 3 + 3 = 6 <= 8 (Pending).
    for setting, pending in (("as-written", 0), ("exclude-arrival", 1)):
        run = make_run([lease(1, 3, 100, 0, "CPU"), lease(2, 4, 100, 10, "CPU"),
                        lease(5, 3, 50, 20, "CPU")], f"autonomic.inequality-7-2={setting}",
                       resources=SITE, extra=[snap])
        summary = run.run()
        assert summary["autonomic_pending_by_7_2"] == pending
        assert summary["autonomic_prepending"] == 1 - pending


def test_memory_and_non_stressed_leases():
    """Only stress-on resources count; a lease that stresses nothing is always Pending."""
    snap = Snapshots()
    m = lease(1, 2, 100, 0, "Memory")          # Memory 2048 of 8192
    n = lease(2, 8, 50, 10, None)               # stresses nothing: never held
    run = make_run([m, n], resources=SITE, extra=[snap])
    summary = run.run()
    assert snap.at[0]["MD"] == {"CPU": 0.0, "Memory": 2048.0, "IO": 0.0, "Net-in": 0.0,
                                "Net-out": 0.0}
    assert snap.at[0]["MJ"] == {1: {"Memory": 2048.0,
                                    0: {"contributing": True, "Memory": 2048.0}}}
    # n is planned for t=100 on both nodes: host keys, but no stressed resource
    assert snap.at[10]["MJ"][2] == {0: {"contributing": True}, 1: {"contributing": True}}
    assert summary["autonomic_prepending"] == 0
    assert n.start == 100                       # waits for m's CPUs, in the queue


def test_explicit_requirements_and_site_io_capacity():
    """IO is a resource type of the site here (Total[IO] = 2 x 100): req-IO counts per VM.
    Nodes of 8 CPUs, so that none is full."""
    snap = Snapshots()
    vm = (1.0, 1024.0, 0.0)
    x = lease(1, 2, 100, 0, "IO", vm=vm, req_IO=40)       # IO 80 of 200
    y = lease(2, 2, 100, 10, "IO", vm=vm, req_IO=50)      # IO 100: 80/200 + 100/200 <= 1
    z = lease(3, 2, 10, 20, "IO", vm=vm, req_IO=30)       # 180/200 + 60/200 > 1; 7.2: 240+60
    run = make_run([x, y, z], resources="2 CPU:8 Memory:8192 IO:100", extra=[snap])
    summary = run.run()
    assert snap.at[0]["MJ"] == {1: {"IO": 80.0, 0: {"contributing": True, "IO": 80.0}}}
    assert snap.at[10]["SMD"]["IO"] == 180.0
    assert snap.at[20]["prepending"] == [3] and snap.at[20]["MD"]["IO"] == 240.0
    # x ends at 100: SMD = 100, 100 + 60 <= 200: released and started at 100
    assert z.start == 100 and z.wait == 80
    assert summary["autonomic_released_by_7_3"] == 1


def test_monitor_by_hand_unbounded_types_and_cancel():
    """The Monitor alone: a type the site lacks (Total = inf) never holds a job back;
    ending a Prepending job takes it out of MD only."""
    inf = float("inf")
    mon = Monitor(np.array([8.0, 8192.0, inf, inf, inf]))
    rec = mon.arrive(1, np.array([2.0, 0, 500.0, 0, 0]), np.array([1, 0, 1, 0, 0]))
    assert mon.inequality_7_1(rec) and mon.inequality_7_2(rec) and mon.inequality_7_3(rec)
    big = mon.arrive(2, np.array([7.0, 0, 0, 0, 0]), np.array([1, 0, 0, 0, 0]))
    assert not mon.inequality_7_2(big)           # (2 + 7) + 7 > 8
    mon.set_pending(rec)
    assert mon.monitoring_data["CPU"] == 9 and mon.scheduled_monitoring_data["CPU"] == 2
    assert not mon.inequality_7_3(big)           # 2 + 7 > 8
    mon.end(big)                                  # cancelled while Prepending
    assert mon.monitoring_data["CPU"] == 2 and mon.scheduled_monitoring_data["CPU"] == 2
    mon.map(rec, {0: np.array([1.0, 0, 250, 0, 0]), 1: np.array([1.0, 0, 250, 0, 0])})
    assert mon.host_full(1) == [1]
    assert mon.monitoring_data.as_dict()["IO"] == 250
    assert mon.host_not_full(1) == [1] and mon.host_not_full(1) == []
    mon.check()
    mon.end(rec)
    assert mon.monitored_jobs == {} and not mon.monitoring_data.values.any()


def test_cancelled_prepending_lease_leaves_the_monitoring():
    snap = Snapshots()
    c = lease(3, 6, 50, 20, "CPU")
    run = make_run([lease(1, 3, 100, 0, "CPU"), lease(2, 4, 100, 10, "CPU"), c],
                   resources=SITE, extra=[snap])
    run.engine.call_at(50, lambda now: run.scheduler.cancel(c, now))
    summary = run.run()
    assert c.state is LeaseState.CANCELLED and c.start is None
    # MD at 100 (after the cycle of A's end): only B, all contributing again
    assert cpu(snap, 100) == (4, 4)
    assert summary["autonomic_monitored_jobs_left"] == 0
    assert summary["autonomic_prepending_time_total"] == 30
