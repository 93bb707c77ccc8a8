"""An LWF trace whose leases are all alike (best-effort and immediate leases of one VM shape)
is counted (``placement = at-start``) under ``auto``, with the pinned placement's schedule where
the two agree, and so are its advance reservations when none may preempt or suspend a lease;
one with a deadline lease or another VM shape, or advance reservations that may preempt, keeps
``when-planned``, and naming ``at-start`` for it is refused in one line."""

from __future__ import annotations

import csv
from pathlib import Path

import attrs
import numpy as np
import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.kernel.lease import LeaseType
from lease_manager.kernel.resources import ResourceTypes
from lease_manager.plugins import Plugins
from lease_manager.run import Run
from lease_manager.workload.lwf_writer import write_lwf
from lease_manager.workload.swf import SWFConversion, SWFReader, swf_leases

from support import ROOT, lwf_request, write_lwf_requests


def request(lease_id: int, arrival: int, vms: int, seconds: int, *, start: str = "<start/>",
            memory: int = 512) -> str:
    return lwf_request(lease_id, arrival, vms, seconds, start=start, memory=memory)


lwf = write_lwf_requests


NOW = "<start><now/></start>"
#: EASY on 4 nodes of one VM each
ALIKE = (request(1, 0, 2, 600), request(2, 60, 4, 600), request(3, 120, 2, 300, start=NOW),
         request(4, 180, 1, 600, start=NOW), request(5, 450, 1, 100, start=NOW))


def run_of(trace, *settings: str) -> Run:
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [
        "simulation.resources=4 CPU:100 Memory:1024", f"tracefile.tracefile={trace}",
        "scheduling.backfilling=aggressive", *settings])
    return Run(config, plugins)


@pytest.mark.parametrize("placement", ["auto", "at-start", "when-planned"])
def test_best_effort_and_immediate_leases_of_one_shape(tmp_path, placement):
    """4 nodes, VMs of CPU 100 (one a node), EASY:

    n0 [1: 0-600          ][2: 600-1200]
    n1 [1: 0-600          ][2: 600-1200]
    n2    [3: 120-420] [5: 450-550]   [2: 600-1200]
    n3    [3: 120-420]                [2: 600-1200]

    2 (best-effort, 4 VMs, at 60) waits for 1 and holds the reservation at 600; 3 (immediate,
    2 VMs for 300 s, at 120) fits now on n2-n3 and ends before 600; 4 (immediate, 1 VM for
    600 s, at 180) finds no free node and is rejected; 5 (immediate, 1 VM for 100 s, at 450)
    fits on n2 before 600. auto counts: every lease is best-effort or immediate, of one
    shape (CPU 100, Memory 512), not [tracefile] vm-resources' (CPU 1).
    """
    run = run_of(lwf(tmp_path / "alike.lwf", *ALIKE), f"scheduling.placement={placement}")
    got = outcomes(run, placement, tmp_path / "out")
    assert got == {1: ("done", "0", "0", "600"), 2: ("done", "60", "600", "1200"),
                   3: ("done", "120", "120", "420"), 4: ("rejected", "180", "", ""),
                   5: ("done", "450", "450", "550")}


def outcomes(run, placement: str, out: Path) -> dict[int, tuple[str, ...]]:
    """Run ``run`` (its table checked, its placement the one asked, counted unless
    when-planned) and give each lease's (state, submit, start, end) from its leases.csv."""
    summary = run.run()
    run.table.check()
    expected = {"auto": "at-start (auto)"}.get(placement, placement)
    assert summary["placement"] == expected
    assert run.table.counted == (placement != "when-planned")
    run.write(out)
    rows = (out / "leases.csv").read_text().splitlines()[1:]
    return {int(r.split(",")[1]): tuple(r.split(",")[3:7]) for r in rows}


def at(t: int) -> str:
    """An advance reservation's ``<start>``: exactly at ``t`` seconds."""
    return f'<start><exact time="{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.00"/></start>'


#: EASY on 4 nodes of one VM each, with advance reservations (see the test below)
WITH_ARS = (request(1, 0, 2, 600), request(2, 30, 4, 300, start=at(900)),
            request(3, 60, 3, 300), request(4, 90, 2, 400), request(5, 120, 1, 500),
            request(6, 150, 2, 100, start=at(300)), request(7, 500, 1, 50, start=NOW),
            request(8, 1000, 1, 200, start=at(1300)))
NO_PREEMPTION = ("scheduling.policy-preemption=no-preemption", "scheduling.suspension=none")


@pytest.mark.parametrize("placement", ["auto", "at-start", "when-planned"])
def test_advance_reservations_of_one_shape_are_counted(tmp_path, placement):
    """4 nodes, VMs of CPU 100 (one a node), EASY, no preemption, no suspension (nodes as
    at-start's first free nodes give them; when-planned may pin others, same times):

             0    90     490 500 550 600       900         1200         1300     1500   1700
    n0      [1: 0-600                 ][3: 600-900][2: 900-1200][5: 1200-1700            ]
    n1      [1: 0-600                 ][3: 600-900][2: 900-1200]    [8: 1300-1500]
    n2           [4: 90-490][7: 500-550][3: 600-900][2: 900-1200]
    n3           [4: 90-490]                        [2: 900-1200]

    - 2 (AR, 4 VMs, asks at 30 for [900, 1200)): the whole site is free then: counted.
    - 3 (best-effort, 3 VMs, at 60): 2 nodes free; it holds EASY's reservation at 600 (when
      1 ends), for 300 s, ending exactly at 2's start.
    - 4 (best-effort, 2 VMs for 400 s, at 90) fits now and ends (490) before 600: backfilled.
    - 5 (best-effort, 1 VM for 500 s, at 120): no node is free. Once 3 has started (600) it
      heads the queue; from 490, 600 or 900 its 500 s would overlap 2, which takes every
      node, so it starts at 1200.
    - 6 (AR, 2 VMs, asks at 150 for [300, 400)): 1 and 4 hold all 4 nodes then; nothing
      may be preempted, so it is rejected.
    - 7 (immediate, 1 VM for 50 s, at 500): 2 nodes are free and it ends before 600, where
      3 needs 3 of the 4: accepted.
    - 8 (AR, 1 VM, asks at 1000 for [1300, 1500)): 5 holds 1 node then, 3 are free.

    auto counts: every lease is best-effort, immediate or an advance reservation of one
    shape, and no advance reservation can preempt or suspend a lease.
    """
    run = run_of(lwf(tmp_path / "ars.lwf", *WITH_ARS), f"scheduling.placement={placement}",
                 *NO_PREEMPTION)
    got = outcomes(run, placement, tmp_path / "out")
    assert got == {1: ("done", "0", "0", "600"), 2: ("done", "30", "900", "1200"),
                   3: ("done", "60", "600", "900"), 4: ("done", "90", "90", "490"),
                   5: ("done", "120", "1200", "1700"), 6: ("rejected", "150", "", ""),
                   7: ("done", "500", "500", "550"), 8: ("done", "1000", "1300", "1500")}


@pytest.mark.parametrize("settings, why", [
    ((), "advance reservations may preempt"),
    (("scheduling.policy-preemption=no-preemption",), "advance reservations may preempt"),
    (("scheduling.suspension=none",), "advance reservations may preempt"),
])
def test_advance_reservations_that_may_preempt_or_suspend_keep_when_planned(tmp_path,
                                                                          settings, why):
    """An advance reservation that may preempt a lease, or that a lease may run in front of
    and suspend for, moves memory images of particular nodes: when-planned, with its own
    reason; naming at-start is refused in one line."""
    trace = lwf(tmp_path / "ars.lwf", *WITH_ARS)
    with run_of(trace, *settings) as run:
        assert run.placement.label() == ("when-planned (auto: advance reservations that "
                                         "may preempt)")
    with pytest.raises(ConfigError) as err:
        run_of(trace, "scheduling.placement=at-start", *settings)
    assert (f"(advance reservations that may preempt: the lease request at {trace}:14 is an "
            f"advance reservation, and {why}") in str(err.value)
    assert "\n" not in str(err.value)


def blue_with_ars(path: Path, jobs: int, every: int, lead: float) -> int:
    """The 30-day Blue trace's first ``jobs`` jobs as LWF (one VM of CPU 1, Memory 1024 a
    processor), every ``every``-th made an advance reservation of its requested interval,
    asked ``lead`` seconds after its submit; returns how many are advance reservations."""
    conv = SWFConversion(vm_vector=np.array([1.0, 1024.0]), max_jobs=jobs)
    leases = list(swf_leases(SWFReader(ROOT / "traces" / "sdsc-blue-30days.swf"), conv))
    made = [attrs.evolve(lease, type=LeaseType.ADVANCE_RESERVATION,
                         start_request=lease.submit + lead)
            if i % every == every - 1 else lease for i, lease in enumerate(leases)]
    write_lwf(path, made, types=ResourceTypes(("CPU", "Memory")))
    return sum(lease.type is LeaseType.ADVANCE_RESERVATION for lease in made)


def test_advance_reservations_on_a_trace_give_the_same_fcfs_schedule(tmp_path):
    """The 30-day Blue trace's first 600 jobs, every 10th an advance reservation an hour
    ahead (60), FCFS on its 144 nodes, no preemption or suspension: auto counts, and both
    placements give the same state, start and end lease by lease (every AR at its asked
    start; 3 are rejected in both). Further on they need not: at lease 817 of the first
    1,000 jobs when-planned has pinned an AR on 6 of the 34 free nodes, so a 32-VM lease
    waits 17 s more than with counting, which lets the AR take other nodes at its start."""
    trace = tmp_path / "blue-ars.lwf"
    assert blue_with_ars(trace, 600, 10, 3600.0) == 60

    def replay(placement: str) -> tuple[str, list[tuple[str, ...]]]:
        plugins = Plugins()
        config = load_config(ROOT / "etc" / "sample.ini", plugins.schema, [
            f"tracefile.tracefile={trace}", "scheduling.backfilling=off",
            *NO_PREEMPTION, f"scheduling.placement={placement}"])
        run = Run(config, plugins)
        summary = run.run()
        run.write(tmp_path / placement)
        with (tmp_path / placement / "leases.csv").open() as fh:
            rows = [(r["lease_id"], r["type"], r["state"], r["start"], r["end"],
                     r["submit"]) for r in csv.DictReader(fh)]
        return summary["placement"], rows

    counted, counted_rows = replay("auto")
    pinned, pinned_rows = replay("when-planned")
    assert (counted, pinned) == ("at-start (auto)", "when-planned")
    assert counted_rows == pinned_rows and len(counted_rows) == 600
    ars = [r for r in counted_rows if r[1] == "advance-reservation"]
    done = [r for r in ars if r[2] == "done"]
    assert len(ars) == 60 and len(done) == 57   # 3 asked for an interval that was not free
    assert all(float(r[3]) == float(r[5]) + 3600 for r in done)


@pytest.mark.parametrize("odd, why", [
    (request(9, 90, 1, 60, start=at(1200), memory=256), "has VMs of another shape"),
    (request(9, 90, 1, 60, memory=256), "has VMs of another shape"),
])
def test_an_lwf_trace_that_is_not_all_alike_keeps_when_planned(tmp_path, odd, why):
    trace = lwf(tmp_path / "odd.lwf", *ALIKE[:2], odd)
    with run_of(trace) as run:
        assert run.placement.label() == "when-planned (auto: LWF trace)"
    with pytest.raises(ConfigError) as err:
        run_of(trace, "scheduling.placement=at-start")
    assert f"(LWF trace: the lease request at {trace}:25 {why}" in str(err.value)
    assert "\n" not in str(err.value)
