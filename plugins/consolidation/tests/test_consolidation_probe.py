"""The probe ``resource-contention`` in runs: RC at every scheduling cycle, its integral, and
agreement with the slot table at every cycle of a real trace."""

from __future__ import annotations

import csv

import pytest

import lease_manager
from lease_manager import LeaseType
from lease_manager.characteristics import Contributions
from lm_consolidation.contention import resource_contention_at

from lmc_helpers import lease, make_run, trace_run


def test_probe_series_integral_and_summary(tmp_path):
    """Two nodes of 4 CPUs, host selection in node order::

        time       0             50            100
        node 0  L1 [CPU,Memory] 2 VMs ..........)
                L2 [Memory] 1 VM ..)
                L3 [CPU] 1 VM ..........................)
        node 1  L3 (its other VM) ..............)

    RC(0) = CPU (L1 2 + L3 1) + Memory (L1 2048 + L2 1024) = 3075; RC(50) = 3 (Memory: L1
    alone); RC(100) = 0. Integral 3075 x 50 + 3 x 50 = 153,900 over 100 s.
    """
    leases = [lease(1, 2, 100, stress="CPU,Memory"), lease(2, 1, 50, stress="Memory"),
              lease(3, 2, 100, stress="CPU")]
    run = make_run("scheduling.policy-host-selection=no-policy",
                   "accounting.probes=resource-contention", leases=leases,
                   resources="2 CPU:4 Memory:4096")
    summary = run.run()
    assert [l.allocations[-1].vm_nodes for l in leases] == \
        [(0, 0), (0,), (0, 1)]
    assert summary["resource_contention_integral"] == 153_900
    assert summary["resource_contention_mean"] == 1539
    assert summary["resource_contention_max"] == 3075
    assert summary["resource_contention_cycle_sum"] == 3078
    assert summary["resource_contention_cycles"] == 3
    assert summary["resource_contention_integral_by_resource"] == {
        "CPU": 300, "Memory": 153_600, "IO": 0, "Net-in": 0, "Net-out": 0}
    run.write(tmp_path)
    with (tmp_path / "series" / "resource_contention.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows == [["time", "value"], ["0.0", "3075.0"], ["50.0", "3.0"], ["100.0", "0.0"]]


def test_leases_without_annotations_never_contend():
    leases = [lease(i, 2, 100) for i in range(1, 5)]
    run = make_run("accounting.probes=resource-contention", leases=leases,
                   resources="1 CPU:8 Memory:8192")
    summary = run.run()
    assert summary["resource_contention_integral"] == 0
    assert summary["resource_contention_max"] == 0


def integral_from_allocations(leases, site_types) -> float:
    """The RC integral recomputed from what the leases' VMs actually held, segment by segment
    (independent of the probe's bookkeeping)."""
    contributions = Contributions(site_types)
    pieces = []
    for l in leases:
        for res in l.allocations:
            hit = contributions.contribution(res)
            if hit is not None and res.end > res.start:
                pieces.append((res.start, res.end, hit))
    times = sorted({t for a, b, _ in pieces for t in (a, b)})
    total = 0.0
    for a, b in zip(times, times[1:]):
        count, amount = {}, {}
        for start, end, (nodes, amounts, mask, *_) in pieces:
            if start <= a < end:
                for i, node in enumerate(nodes.tolist()):
                    count[node] = count.get(node, 0) + mask
                    amount[node] = amount.get(node, 0) + amounts[i]
        rc = sum(float(amount[n][count[n] > 1].sum()) for n in count)
        total += rc * (b - a)
    return total


def test_a_preempted_lease_counts_until_its_suspension_starts():
    """Two nodes of 2 CPUs; B1 and B2 (1 VM each, stress Memory) share node 0 from 0:00. At
    0:15 an advance reservation for 0:30-1:00 of the whole site arrives and preempts both: they
    run on until their suspension starts (1024 MB at 32 MB/s: 32 s before 0:30) and resume
    after 1:00. RC is 2048 while both run on one node, and 0 while they are suspended, and the
    integral equals what their VM segments give."""
    b1 = lease(1, 1, 3600, stress="Memory")
    b2 = lease(2, 1, 3600, stress="Memory")
    a = lease(3, 4, 1800, submit=900, stress="Memory")
    a.type, a.start_request = LeaseType.ADVANCE_RESERVATION, 1800
    run = make_run("scheduling.policy-host-selection=no-policy",
                   "accounting.probes=resource-contention", leases=[b1, b2, a],
                   resources="2 CPU:2 Memory:2048")
    summary = run.run()
    assert b1.suspensions == b2.suspensions == 1
    assert [(r.kind, r.start, r.end) for r in b1.allocations][:2] == \
        [("vm", 0, 1768), ("suspend", 1768, 1800)]
    times, values = run.metrics.series["resource_contention"]
    series = dict(zip(times, values))
    assert series[0] == 2048 and series[900] == 2048      # preempted at 0:15, still running
    assert series[1768] == 0                              # suspended
    expected = integral_from_allocations([b1, b2, a], run.nodes.types.names)
    assert summary["resource_contention_integral"] == pytest.approx(expected)
    assert expected >= 2048 * 1768


class _Checker:
    """After the probe, compare its RC with the slot table's at every cycle; keep the leases."""

    def __init__(self) -> None:
        self.contributions: Contributions | None = None
        self.cycles = 0
        self.mismatches: list[tuple[float, float, float]] = []
        self.leases: list = []

    @lease_manager.hookimpl
    def lease_submitted(self, ctx, lease, now):
        self.leases.append(lease)

    @lease_manager.hookimpl(trylast=True)
    def scheduling_cycle_end(self, ctx, now):
        if self.contributions is None:
            self.contributions = Contributions(ctx.site.types.names)
        probe = self.run.probes[0]   # the test hands the checker its run, to look inside
        expected = resource_contention_at(ctx.table, now, self.contributions)
        self.cycles += 1
        if abs(expected - probe.rc) > 1e-6 * max(1.0, expected):
            self.mismatches.append((now, expected, probe.rc))


def test_incremental_rc_equals_the_slot_table_at_every_cycle():
    """The probe keeps per-node sums from lease starts and ends; at every cycle of 300 real
    leases they equal RC recomputed from the table's reservations, and its integral equals the
    one recomputed from the leases' VM segments (invariants are checked at the end of the run
    by the core)."""
    checker = _Checker()
    run = trace_run("scheduling.policy-host-selection=ea-time-horizon", max_jobs=300,
                    observers=[checker])
    checker.run = run
    summary = run.run()
    assert checker.cycles > 300
    assert checker.mismatches == []
    assert len(checker.leases) == 300
    expected = integral_from_allocations(checker.leases, run.nodes.types.names)
    assert expected > 0
    assert summary["resource_contention_integral"] == pytest.approx(expected, rel=1e-9)
