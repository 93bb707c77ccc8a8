"""Each reading of chapter 7 that ``[autonomic]`` offers, pinned on a hand-computed three-lease
example: which inequality admits each lease, what MonitoringData (MD) and
ScheduledMonitoringData (SMD) hold, how long a lease is held (Prepending) and when it starts.

Every example: host selection ``no-policy`` (node 0 first), aggressive backfilling, VMs of
CPU:1 Memory:1024 (IO:0 where the site has IO); leases of one VM shape; A, B, C arrive at 0,
10 and 20.
"""

from __future__ import annotations

import pytest

import lease_manager
from lease_manager import Run
from lease_manager.config.schema import load_config
from lease_manager.kernel.lease import LeaseState

from lma_helpers import Snapshots, lease, make_run, plugins

VM3 = (1.0, 1024.0, 0.0)
IO_SITE = "2 CPU:8 Memory:8192 IO:100"
SMALL = "2 CPU:4 Memory:4096"


def decisions(summary) -> tuple[int, int, int]:
    return (summary["autonomic_pending_by_7_1"], summary["autonomic_pending_by_7_2"],
            summary["autonomic_prepending"])


def io_example(req_c: float = 50.0, vm=VM3):
    """Example 1 (IO bounded: 2 nodes x CPU:8 IO:100, Total[CPU] = 16, Total[IO] = 200)::

        A  2 VMs, 100 s, stresses IO, req-IO 40 per VM: JobResReqs IO 80   (per VM: 40)
        B  4 VMs, 100 s, stresses CPU:                  JobResReqs CPU 4   (per VM: 1)
        C  3 VMs,  50 s, stresses CPU and IO, req-IO 50 per VM: CPU 3, IO 150 (per VM: 1, 50)

        default:  node 0 (8 CPU) | A A B B B B . . |  A 0-100, B 10-110; C C C 100-150
                  node 1 (8 CPU) | free
        per VM:   node 0 (8 CPU) | A A B B B B C C |  C 20-70: node 0 full from 20
                  node 1 (8 CPU) | C . . . . . . . |
    """
    return [lease(1, 2, 100, 0, "IO", vm=vm, req_IO=40),
            lease(2, 4, 100, 10, "CPU", vm=vm),
            lease(3, 3, 50, 20, "CPU,IO", vm=vm, req_IO=req_c)]


def test_io_bounded_holds_until_the_io_frees():
    """Default readings. C at 20: 7.1: Util[IO] = 80/200 + 150/200 = 1.15 > 1; 7.2 (MD holds
    C): IO 80 + 150 + 150 = 380 > 200: Prepending. 7.3 at 20: SMD IO 80 + 150 = 230 > 200:
    held. A ends at 100: SMD IO 0 + 150 <= 200 and CPU 4 + 3 <= 16: released, starts at 100
    on node 0 (4 CPUs free there), ends at 150."""
    snap = Snapshots()
    leases = io_example()
    summary = make_run(leases, resources=IO_SITE, extra=[snap]).run()
    assert decisions(summary) == (2, 0, 1)
    assert snap.at[20]["MD"]["IO"] == 230 and snap.at[20]["SMD"]["IO"] == 80
    assert snap.at[20]["prepending"] == [3]
    c = leases[2]
    assert (c.start, c.end) == (100, 150)
    assert summary["autonomic_prepending_time_total"] == 80
    assert summary["autonomic_released_by_7_3"] == 1


def test_requirements_per_vm():
    """``requirements = vm``: JobResReqs are one VM's worth. C: 7.1: Util[IO] = 40/200 +
    50/200 <= 1, CPU 1/16 + 1/16 <= 1: Pending at once; it starts at 20 (2 VMs on node 0, which
    has 2 CPUs free, 1 on node 1). Node 0 is then full: A's, B's and C's parts there stop
    counting, and MD at the end of that cycle is C's part on node 1: CPU 1/3, IO 50/3."""
    snap = Snapshots()
    leases = io_example()
    summary = make_run(leases, "autonomic.requirements=vm", resources=IO_SITE,
                       extra=[snap]).run()
    assert decisions(summary) == (3, 0, 0)
    assert snap.at[20]["MD"]["CPU"] == pytest.approx(1 / 3)
    assert snap.at[20]["MD"]["IO"] == pytest.approx(50 / 3)
    assert snap.at[20]["full"] == [0]
    # a host's part is the lease's per-VM requirement x its share of the VMs there
    assert snap.at[20]["MJ"][3][0] == pytest.approx({"contributing": False, "CPU": 2 / 3,
                                                     "IO": 100 / 3})
    assert (leases[2].start, leases[2].end) == (20, 70)


def test_io_unbounded_site():
    """The same leases on a site without IO (Total[IO] infinite): C passes 7.1 on CPU
    (4/16 + 3/16) and starts at 20."""
    leases = io_example(vm=(1.0, 1024.0))
    summary = make_run(leases, resources="2 CPU:8 Memory:8192").run()
    assert decisions(summary) == (3, 0, 0)
    assert leases[2].start == 20


@pytest.mark.parametrize("admission, start, rejected", [
    ("accept-all", 110, 0), ("autonomic-unsatisfiable", None, 1)])
def test_a_lease_7_3_can_never_admit(admission, start, rejected):
    """C with req-IO 70 per VM: IO 210 > Total[IO] 200, so 7.1-7.3 can never hold for it.
    Default: held until the site is idle (B ends at 110), then it runs 110-160. With the
    admission policy ``autonomic-unsatisfiable`` it is rejected on arrival, naming why."""
    leases = io_example(req_c=70)
    summary = make_run(leases, f"scheduling.policy-admission={admission}",
                       resources=IO_SITE).run()
    c = leases[2]
    assert c.start == start and summary["leases_rejected"] == rejected
    if rejected:
        assert c.state is LeaseState.REJECTED
        assert c.reason == ("inequalities 7.1-7.3 can never hold: its IO requirement 210 "
                            "exceeds the site's total 200")
        assert summary["autonomic_rejected_unsatisfiable"] == 1
    else:
        assert summary["autonomic_released_idle_site"] == 1


def util_example():
    """Example 2 (Util; 2 nodes x CPU:4 Memory:4096, Total[CPU] = 8, Total[Memory] = 8192)::

        A  4 VMs, 100 s, stresses Memory   -> node 0 (full)
        B  3 VMs, 100 s, stresses CPU      -> node 1 (1 CPU free)
        C  3 VMs,  50 s, stresses CPU      -> can start only when A ends

        node 0 | A A A A |  0-100, then C C C . 100-150
        node 1 | B B B . | 10-110
    """
    return [lease(1, 4, 100, 0, "Memory"), lease(2, 3, 100, 10, "CPU"),
            lease(3, 3, 50, 20, "CPU")]


@pytest.mark.parametrize("util, expected", [
    # running: Util[CPU] = 3/8 (B stresses CPU) + 3/8 <= 1: C passes 7.1
    ("running", (3, 0, 0)),
    # site: Util[CPU] = (4 + 3)/8, A's CPU counts too: + 3/8 > 1; 7.2: MD = 3 (A's part is on
    # full node 0 and stresses Memory only) + 3 (C) + 3 = 9 > 8: Prepending; 7.3 at 20:
    # SMD 3 + 3 <= 8: released at once
    ("site", (2, 0, 1)),
    # monitoring: Util[CPU] = MD/8 = (3 + 3)/8 + 3/8 > 1; then as for site. A at 0: Util[Mem] =
    # 4096/8192 (A itself) + 4096/8192 = 1 <= 1
    ("monitoring", (2, 0, 1)),
])
def test_util_readings(util, expected):
    snap = Snapshots()
    leases = util_example()
    summary = make_run(leases, f"autonomic.util={util}", resources=SMALL, extra=[snap]).run()
    assert decisions(summary) == expected
    assert snap.at[20]["MD"]["CPU"] == 3        # C's future part on full node 0 is discounted
    assert [l.start for l in leases] == [0, 10, 100]
    assert summary["autonomic_prepending_time_total"] == 0


def discount_example():
    """Example 3 (the full-host discount and the arriving lease in 7.2; 2 nodes x CPU:4)::

        A  4 VMs, 100 s, stresses CPU   -> node 0 (full)
        B  2 VMs, 100 s, stresses CPU   -> node 1 (2 CPUs free)
        C  4 VMs,  50 s, stresses CPU   -> only when A ends

        node 0 | A A A A |  0-100, then C C C C 100-150
        node 1 | B B . . | 10-110

    C at 20: 7.1: Util = 6/8 + 4/8 > 1 under every reading below.
    """
    return [lease(1, 4, 100, 0, "CPU"), lease(2, 2, 100, 10, "CPU"), lease(3, 4, 50, 20, "CPU")]


@pytest.mark.parametrize("setting, expected, held, md_at_20", [
    # default: MD = 0 (A on full node 0) + 2 + 4 (C); 7.2: 6 + 4 > 8: Prepending; 7.3 at 20:
    # SMD 2 + 4 <= 8: released at once. After the cycle C's plan is on full node 0: MD = 2
    ("autonomic.util=running", (2, 0, 1), 0, 2),
    # exclude-arrival: 7.2 = (6 - 4) + 4 <= 8: Pending by 7.2
    ("autonomic.inequality-7-2=exclude-arrival", (2, 1, 0), 0, 2),
    # unmapped-none: C counts nothing before its mapping: MD = 2; 7.2: 2 + 4 <= 8
    ("autonomic.unmapped-demand=none", (2, 1, 0), 0, 2),
    # no discount: MD = 4 + 2 + 4; 7.2: 10 + 4 > 8; 7.3: SMD 6 + 4 > 8 until A ends at 100
    # (SMD 2 + 4 <= 8): held 80 s; MD at 20 = 10
    ("autonomic.full-host-discount=no", (2, 0, 1), 80, 10),
])
def test_discount_and_arrival_readings(setting, expected, held, md_at_20):
    snap = Snapshots()
    leases = discount_example()
    summary = make_run(leases, setting, resources=SMALL, extra=[snap]).run()
    assert decisions(summary) == expected
    assert summary["autonomic_prepending_time_total"] == held
    assert snap.at[20]["MD"]["CPU"] == md_at_20
    assert [l.start for l in leases] == [0, 10, 100]


def test_unmapped_none_counts_a_lease_from_its_mapping():
    """With ``unmapped-demand = none`` a held lease is not in MD; the MD of example 3 at 10
    (A's part on full node 0 discounted, B mapped on node 1) is B's 2, and both structures
    match MonitoredJobs after every cycle (Snapshots checks them)."""
    snap = Snapshots()
    summary = make_run(discount_example(), "autonomic.unmapped-demand=none",
                       "autonomic.full-host-discount=no", resources=SMALL, extra=[snap]).run()
    # no discount: A 4 + B 2 mapped = 6; C (unmapped, 4) counts nothing: 7.2: 6 + 4 > 8:
    # Prepending, released when A ends (SMD 2 + 4 <= 8)
    assert snap.at[10]["MD"]["CPU"] == 6 and snap.at[20]["MD"]["CPU"] == 6
    assert decisions(summary) == (2, 0, 1)
    assert summary["autonomic_prepending_time_total"] == 80


# The two readings that act on the trace and the site rather than on the policy: the queue
# filter (`queues-batch`; chapter 6's `haizea` / `all`) and the site sizes (`machine-*`,
# `procs-*`). The leases come from an SWF file through the sweeps' [tracefile] options (cloud
# paradigm, CPU:1 Memory:1024 per VM, rebased); without the thesis-workload annotator they
# stress nothing, so the autonomic queue holds none and the starts are FCFS with aggressive
# backfilling.

#: (job, submit, run time, processors, queue): A is in the interactive queue 0
SWF_JOBS = ((1, 100, 100, 1024, 0), (2, 110, 100, 256, 1), (3, 120, 50, 64, 2))


class _Leases:
    """Keeps every submitted lease, to read its start after the run."""

    def __init__(self) -> None:
        self.by_id: dict[int, object] = {}

    @lease_manager.hookimpl
    def lease_submitted(self, ctx, lease, now) -> None:
        self.by_id[lease.id] = lease


def swf_run(tmp_path, resources: str, *settings: str) -> list[tuple[float, float]]:
    """(start, end) of each replayed lease of ``SWF_JOBS`` on ``resources``, in arrival
    order."""
    path = tmp_path / "three.swf"
    path.write_text("".join(
        f"{n} {submit} 0 {run} {procs} -1 -1 {procs} {run} -1 1 7 -1 -1 {queue} -1 -1 -1\n"
        for n, submit, run, procs, queue in SWF_JOBS))
    seen = _Leases()
    config = load_config(None, plugins(seen).schema, [
        f"tracefile.tracefile={path}", "tracefile.paradigm=cloud", "tracefile.rebase=yes",
        "tracefile.vm-resources=CPU:1 Memory:1024", "tracefile.procs-per-vm=8",
        f"simulation.resources={resources}", "scheduling.policy-queue=autonomic",
        "scheduling.policy-host-selection=no-policy", "scheduling.backfilling=aggressive",
        "accounting.check-invariants=yes", *settings])
    summary = Run(config, plugins(seen)).run()
    assert summary["autonomic_prepending"] == 0
    return [(lease.start, lease.end) for _, lease in sorted(seen.by_id.items())]


BLUE_144 = "18 CPU:8 Memory:8192"


def test_queue_filter_reading(tmp_path):
    """``queues-batch`` (``[tracefile] queues = 1, 2, 3, 4``) against every queue, on the
    144-core site (18 nodes x 8 cores, one VM per 8 processors: A 128 VMs, B 32, C 8)::

        every queue (rebased: A, B, C arrive at 0, 10, 20)
            A |=============| 0-100 (128 of 144 cores)
            B   .............|=============| 100-200 (32 VMs: 16 cores free until A ends)
            C     |======|    20-70 (8 VMs fit in the 16 free; ends before B's reservation)
        queues-batch: A (queue 0) is not replayed; rebased, B and C arrive at 0 and 10
            B |=============| 0-100
            C   |======|      10-60 (8 + 32 <= 144)
    """
    assert swf_run(tmp_path, BLUE_144) == [(0, 100), (100, 200), (20, 70)]
    assert swf_run(tmp_path, BLUE_144, "tracefile.queues=1, 2, 3, 4") == [(0, 100), (10, 60)]


@pytest.mark.parametrize("resources, procs_per_vm, expected", [
    # 144 cores (the default): as above, B waits for A
    (BLUE_144, 8, [(0, 100), (100, 200), (20, 70)]),
    # machine-8cores: Blue's 144 nodes x 8 cores = 1,152 cores; 128 + 32 + 8 VMs all fit
    ("144 CPU:8 Memory:8192", 8, [(0, 100), (10, 110), (20, 70)]),
    # procs-8cores: one VM per processor on the same 1,152 cores: A 1,024 VMs leaves 128, so
    # B (256) waits for A and C (64) backfills, as on the 144-core site
    ("144 CPU:8 Memory:8192", 1, [(0, 100), (100, 200), (20, 70)]),
    # procs-16cores: 72 x 16 cores, the same 1,152
    ("72 CPU:16 Memory:16384", 1, [(0, 100), (100, 200), (20, 70)]),
])
def test_site_size_readings(tmp_path, resources, procs_per_vm, expected):
    """The same three leases on the 144-core site, a ``machine`` site and a ``procs`` site::

        144 cores (18 x 8), 8 procs per VM:   A 128 VMs 0-100 | B 32 VMs 100-200 | C 8 VMs 20-70
        machine (144 x 8),  8 procs per VM:   A 128 VMs 0-100 | B 32 VMs  10-110 | C 8 VMs 20-70
        procs   (144 x 8),  1 proc per VM:    A 1,024   0-100 | B 256     100-200 | C 64    20-70

    Only ``machine`` lets B start on arrival: its site is 8 times the 144-core one for the same
    leases, whereas ``procs`` multiplies both the site and the leases by 8."""
    assert swf_run(tmp_path, resources, f"tracefile.procs-per-vm={procs_per_vm}") == expected
