"""An injection file (``[tracefile] injectionfile``) whose requests are all of the trace's one
VM shape is counted (``placement = at-start``) under ``auto``, as an LWF trace of one shape
is: its advance reservations too when none may preempt or suspend a lease. One with another
VM shape, a deadline lease, or advance reservations that may preempt keeps ``when-planned``,
with a reason naming the first such request; naming ``at-start`` for it is refused in one
line."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from test_lwf_placement import NO_PREEMPTION, NOW, at, lwf, request

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.resources import ResourceTypes
from lease_manager.plugins import Plugins
from lease_manager.run import Run
from lease_manager.workload.lwf_writer import write_lwf

from support import ROOT


def outcomes(run: Run, placement: str, out: Path) -> dict[int, tuple[str, ...]]:
    """Run ``run`` (its table checked, its placement the one asked, counted unless
    when-planned) and give each lease's (state, submit, start, end) by its id."""
    summary = run.run()
    run.table.check()
    assert summary["placement"] == {"auto": "at-start (auto)"}.get(placement, placement)
    assert run.table.counted == (placement != "when-planned")
    run.write(out)
    with (out / "leases.csv").open() as fh:
        return {int(r["lease_id"]): (r["state"], r["submit"], r["start"], r["end"])
                for r in csv.DictReader(fh)}


def swf(path: Path, *jobs: tuple[int, int, int, int, int]) -> Path:
    """An SWF file of ``(id, submit, runtime, processors, requested time)`` jobs."""
    path.write_text("".join(f"{i} {submit} 0 {run} {procs} -1 -1 {procs} {asked} -1 1 1 1 -1 "
                            f"1 -1 -1 -1\n" for i, submit, run, procs, asked in jobs))
    return path


#: SWF jobs (id, submit, runtime, processors, requested time) of the test below
JOBS = ((1, 0, 500, 2, 600), (2, 60, 300, 4, 300), (3, 120, 200, 1, 200),
        (4, 200, 500, 1, 500), (5, 700, 300, 2, 300))
#: injected requests (VMs of CPU 100, Memory 1024: the trace's one VM shape)
INJECTED = (request(1, 30, 2, 200, start=at(900), memory=1024),
            request(2, 330, 1, 100, start=NOW, memory=1024),
            request(3, 400, 3, 100, start=at(700), memory=1024),
            request(4, 950, 2, 50, start=NOW, memory=1024))


def run_of(trace: Path, injection: Path, *settings: str) -> Run:
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [
        "simulation.resources=4 CPU:100 Memory:1024", "tracefile.vm-resources=CPU:100 Memory:1024",
        "tracefile.paradigm=hpc", f"tracefile.tracefile={trace}",
        f"tracefile.injectionfile={injection}", "scheduling.backfilling=aggressive", *settings])
    return Run(config, plugins)


@pytest.mark.parametrize("placement", ["auto", "at-start", "when-planned"])
def test_an_injection_file_of_the_traces_shape_is_counted(tmp_path, placement):
    """4 nodes, one VM of CPU 100 a node, EASY, no preemption, no suspension. Lease ids are
    the merged order (by arrival): SWF jobs 1-5 are leases 1, 3, 4, 5, 8; the injected
    requests are leases 2 (AR), 6 (immediate), 7 (AR), 9 (immediate). Nodes as at-start's
    first free nodes give them (when-planned may pin others, same times):

             0   120  320 330 430 500       800  900     1100    1300    1400
    n0      [1: 0-500        ]      [3: 500-800][5: 800-1300     ]
    n1      [1: 0-500        ]      [3: 500-800][2: 900-1100][8: 1100-1400]
    n2          [4: 120-320][6: 330-430][3: 500-800][2: 900-1100][8: 1100-1400]
    n3                              [3: 500-800]

    - 1 (job 1, 2 VMs, asks 600 s, runs 500) starts at 0 and ends early at 500.
    - 2 (AR, 2 VMs, asks at 30 for [900, 1100)): nothing is planned then: accepted.
    - 3 (job 2, 4 VMs for 300 s, at 60) holds EASY's reservation at 600 (1's planned end),
      ending before 2 at 900; when 1 ends early at 500 it moves to 500.
    - 4 (job 3, 1 VM for 200 s, at 120) fits now and ends before 600: backfilled.
    - 5 (job 4, 1 VM for 500 s, at 200): one node is free, but 500 s from now overlap 3's
      reservation, which takes the whole site. Once 3 starts (500) it heads the queue; at
      800 two nodes are left beside 2: [800, 1300).
    - 6 (immediate, 1 VM for 100 s, at 330): 2 nodes are free: [330, 430).
    - 7 (AR, 3 VMs, asks at 400 for [700, 800)): 3 holds every node then; nothing may be
      preempted: rejected.
    - 8 (job 5, 2 VMs for 300 s, at 700): at 800 only one node is left through [900, 1100)
      beside 2 and 5; it starts when 2 ends, at 1100.
    - 9 (immediate, 2 VMs for 50 s, at 950): 2 and 5 hold 3 nodes: rejected.

    auto counts: every injected request is an advance reservation or an immediate lease of
    the trace's VM shape (``[tracefile] vm-resources``), and no reservation can preempt or
    suspend a lease.
    """
    trace = swf(tmp_path / "jobs.swf", *JOBS)
    injection = lwf(tmp_path / "injected.lwf", *INJECTED)
    run = run_of(trace, injection, f"scheduling.placement={placement}", *NO_PREEMPTION)
    got = outcomes(run, placement, tmp_path / "out")
    assert got == {1: ("done", "0", "0", "500"), 2: ("done", "30", "900", "1100"),
                   3: ("done", "60", "500", "800"), 4: ("done", "120", "120", "320"),
                   5: ("done", "200", "800", "1300"), 6: ("done", "330", "330", "430"),
                   7: ("rejected", "400", "", ""), 8: ("done", "700", "1100", "1400"),
                   9: ("rejected", "950", "", "")}


@pytest.mark.parametrize("odd, settings, name, why", [
    (request(5, 500, 1, 60, start=NOW, memory=512), NO_PREEMPTION, "injection file",
     "has VMs of another shape than the trace's"),
    (request(5, 500, 1, 60, memory=512), NO_PREEMPTION, "injection file",
     "has VMs of another shape than the trace's"),
    (request(5, 500, 1, 60, start=NOW, memory=1024), (), "advance reservations that may preempt",
     "is an advance reservation, and advance reservations may preempt or suspend leases"),
])
def test_an_injection_file_that_is_not_countable_keeps_when_planned(tmp_path, odd, settings,
                                                                    name, why):
    """Another VM shape than the trace's (an immediate or a best-effort request of 512 MB),
    or advance reservations with the default preemption and suspension: when-planned, the
    reason naming the first such request (line 14 is the odd request; line 3 the first AR);
    naming at-start is refused in one line."""
    trace = swf(tmp_path / "jobs.swf", *JOBS)
    injection = lwf(tmp_path / "injected.lwf", *INJECTED[:1], odd)
    with run_of(trace, injection, *settings) as run:
        assert run.placement.label() == f"when-planned (auto: {name})"
    with pytest.raises(ConfigError) as err:
        run_of(trace, injection, "scheduling.placement=at-start", *settings)
    line = 3 if name.startswith("advance") else 14
    assert f"({name}: the lease request at {injection}:{line} {why}" in str(err.value)
    assert "\n" not in str(err.value)


def test_an_injected_deadline_lease_keeps_when_planned(tmp_path):
    trace = swf(tmp_path / "jobs.swf", *JOBS)
    deadline = request(5, 500, 1, 60, memory=1024).replace(
        "<start/>", '<start/><deadline time="01:00:00.00"/>')
    injection = lwf(tmp_path / "injected.lwf", deadline)
    with run_of(trace, injection, *NO_PREEMPTION) as run:
        assert run.placement.label() == "when-planned (auto: injection file)"


def blue_injection(path: Path, seed: int, ars: int, immediate: int,
                   span: float) -> dict[str, float]:
    """``ars`` advance reservations and ``immediate`` immediate leases arriving over the first
    ``span`` seconds, of the VM shape ``etc/sample.ini`` gives the 30-day Blue trace's jobs
    (CPU 1, Memory 1024): each asks for 1-16 VMs for 10 minutes to 4 hours; an AR asks 1 to
    6 hours ahead. Returns each AR's asked start by its id in the file."""
    rng = np.random.default_rng(seed)
    leases = []
    for i in range(ars + immediate):
        submit = float(np.round(rng.uniform(0, span)))
        vms = int(rng.integers(1, 17))
        seconds = float(np.round(rng.uniform(600, 4 * 3600)))
        lead = float(np.round(rng.uniform(3600, 6 * 3600)))
        ar = i < ars
        leases.append(Lease(
            id=i + 1, submit=submit, vms=VMRequest.uniform(vms, np.array([1.0, 1024.0])),
            requested_duration=seconds, actual_duration=seconds,
            type=LeaseType.ADVANCE_RESERVATION if ar else LeaseType.IMMEDIATE,
            start_request=submit + lead if ar else None, source_id=str(i + 1)))
    leases.sort(key=lambda lease: lease.submit)
    write_lwf(path, leases, types=ResourceTypes(("CPU", "Memory")))
    return {str(lease.source_id): lease.start_request for lease in leases
            if lease.start_request is not None}


def replay_blue(out: Path, injection: Path, placement: str) -> tuple[str, list[dict]]:
    """The 30-day Blue trace's first 600 jobs (their arrivals span 4 days) with
    ``injection``, FCFS on its 144 nodes, no preemption or suspension: the placement that
    ran, and leases.csv's rows."""
    plugins = Plugins()
    config = load_config(ROOT / "etc" / "sample.ini", plugins.schema, [
        "tracefile.max-jobs=600", f"tracefile.injectionfile={injection}",
        "scheduling.backfilling=off", *NO_PREEMPTION, f"scheduling.placement={placement}"])
    run = Run(config, plugins)
    summary = run.run()
    run.write(out / placement)
    with (out / placement / "leases.csv").open() as fh:
        return summary["placement"], list(csv.DictReader(fh))


def schedule(rows: list[dict]) -> list[tuple[str, ...]]:
    return [(r["lease_id"], r["source_id"], r["type"], r["state"], r["start"], r["end"])
            for r in rows]


def test_injected_immediate_leases_on_the_blue_trace_give_the_same_fcfs_schedule(tmp_path):
    """40 immediate leases injected over the first 600 jobs' 4 days (seed 1): auto counts,
    and both placements give the same state, start and end lease by lease."""
    injection = tmp_path / "injected.lwf"
    blue_injection(injection, 1, 0, 40, 4 * 86400.0)
    counted, counted_rows = replay_blue(tmp_path, injection, "auto")
    pinned, pinned_rows = replay_blue(tmp_path, injection, "when-planned")
    assert (counted, pinned) == ("at-start (auto)", "when-planned")
    assert schedule(counted_rows) == schedule(pinned_rows) and len(counted_rows) == 640
    assert sum(r["type"] == "immediate" and r["state"] == "done" for r in counted_rows) > 0


def test_injected_ars_on_the_blue_trace_differ_only_where_when_planned_pinned_one(tmp_path):
    """20 ARs and 20 immediate leases injected over the first 600 jobs' 4 days (seed 1): auto
    counts; every AR done starts at its asked start in both placements; the schedules agree
    lease by lease up to the first lease that starts later when planned (lease 196, 32 VMs,
    asking 60,000 s), and there the nodes free at its counted start, less those
    when-planned had pinned for an AR whose interval its request overlaps, are fewer than
    its VMs (AR 353's 13 nodes hold 5 of the 35 free). Counting lets the AR take other
    nodes when it starts."""
    injection = tmp_path / "injected.lwf"
    asked = blue_injection(injection, 1, 20, 20, 4 * 86400.0)
    counted, counted_rows = replay_blue(tmp_path, injection, "auto")
    pinned, pinned_rows = replay_blue(tmp_path, injection, "when-planned")
    assert (counted, pinned) == ("at-start (auto)", "when-planned")
    for rows in (counted_rows, pinned_rows):
        ars = [r for r in rows if r["type"] == "advance-reservation"]
        assert len(ars) == 20 and sum(r["state"] == "done" for r in ars) > 0
        assert all(float(r["start"]) == asked[r["source_id"]] for r in ars
                   if r["state"] == "done")
    first = next(i for i, (a, b) in enumerate(zip(schedule(counted_rows),
                                                  schedule(pinned_rows))) if a != b)
    lease, pinned_lease = counted_rows[first], pinned_rows[first]
    assert lease["lease_id"] == "196"
    start, end = float(lease["start"]), float(lease["start"]) + float(lease["requested"])
    assert float(pinned_lease["start"]) > start
    busy: set[str] = set()
    held: set[str] = set()
    for r in pinned_rows:
        if r["state"] != "done":
            continue
        if float(r["start"]) <= start < float(r["end"]):
            busy |= set(r["nodes"].split())
        elif (r["type"] == "advance-reservation" and start < float(r["start"]) < end
              and float(r["submit"]) <= start):
            held |= set(r["nodes"].split())
    free = {str(n) for n in range(144)} - busy
    assert len(free) >= int(lease["vms"]) > len(free - held)


def test_the_shipped_injection_file_is_blue_injection_seed_1(tmp_path):
    """``etc/blue-30days-injected.lwf`` (``etc/injection-placement-sweep.ini``'s) is what
    ``blue_injection`` writes for seed 1: 100 ARs and 100 immediate leases over 30 days."""
    made = tmp_path / "blue-30days-injected.lwf"
    asked = blue_injection(made, 1, 100, 100, 30 * 86400.0)
    assert len(asked) == 100
    assert made.read_bytes() == (ROOT / "etc" / "blue-30days-injected.lwf").read_bytes()
