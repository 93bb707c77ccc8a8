"""``lease-manager export``: Batsim's ``jobs.csv`` and the schedule as SWF.

The hand-written run of ``test_run_plots`` (six leases on four nodes; see its docstring for the
Gantt chart) exports as::

    lease  final_state             start  execution  finish  wait  turnaround  stretch  nodes
    1      COMPLETED_SUCCESSFULLY  0      3600       3600    0     3600        1        0-1
    2      COMPLETED_SUCCESSFULLY  1800   3600       5400    1800  5400        1.5      3
    3      COMPLETED_SUCCESSFULLY  5400   1800       7200    4800  6600        3.67     0 3
    4      REJECTED                (empty: it never started)
    5      COMPLETED_FAILED        3600   400        4000    2400  2800        7        1
    6      (still running when the run stopped: left out, as Batsim writes no such job)

Lease 2 is an advance reservation submitted at 0 for 1800: Batsim's waiting time is the
time from submission to start, so 1800 here although the lease started when it asked.
"""

from __future__ import annotations

import csv
import json

import pytest
from test_run_plots import HEADER, ROWS

from lease_manager import cli
from lease_manager.workload.swf import SWFReader

from support import ROOT


@pytest.fixture
def hand_run(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "leases.csv").write_text("\n".join([HEADER, *ROWS]) + "\n")
    return d


def read_rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_batsim_jobs_of_the_hand_run(hand_run, capsys):
    assert cli.main(["export", str(hand_run), "--format", "batsim"]) == 0
    assert capsys.readouterr().out == (f"wrote {hand_run / 'jobs.csv'}: 5 leases; left out 1 "
                                       "still running or waiting when the run stopped (no "
                                       "final state)\n")
    rows = read_rows(hand_run / "jobs.csv")
    assert list(rows[0]) == ["job_id", "workload_name", "profile", "submission_time",
                             "requested_number_of_resources", "requested_time", "success",
                             "final_state", "starting_time", "execution_time", "finish_time",
                             "waiting_time", "turnaround_time", "stretch",
                             "allocated_resources", "consumed_energy", "metadata"]
    got = [(r["job_id"], r["final_state"], r["success"], r["starting_time"],
            r["execution_time"], r["finish_time"], r["waiting_time"], r["turnaround_time"],
            r["stretch"], r["allocated_resources"]) for r in rows]
    assert got == [
        ("1", "COMPLETED_SUCCESSFULLY", "1", "0", "3600", "3600", "0", "3600", "1", "0-1"),
        ("2", "COMPLETED_SUCCESSFULLY", "1", "1800", "3600", "5400", "1800", "5400", "1.5",
         "3"),
        ("3", "COMPLETED_SUCCESSFULLY", "1", "5400", "1800", "7200", "4800", "6600",
         repr(6600 / 1800), "0 3"),
        ("4", "REJECTED", "0", "", "", "", "", "", "", ""),
        ("5", "COMPLETED_FAILED", "0", "3600", "400", "4000", "2400", "2800", "7", "1")]
    assert [r["profile"] for r in rows] == ["best-effort", "advance-reservation",
                                           "best-effort", "immediate", "best-effort"]
    assert rows[0]["requested_number_of_resources"] == "2"


def test_swf_schedule_of_the_hand_run(hand_run, capsys):
    out = hand_run / "x.swf"
    assert cli.main(["export", str(hand_run), "--format", "swf", "--out", str(out)]) == 0
    capsys.readouterr()
    jobs = list(SWFReader(out).jobs())
    assert [(j.job, j.submit, j.wait, j.run_time, j.allocated_procs, j.requested_procs,
             j.requested_time, j.status) for j in jobs] == [
        (1, 0, 0, 3600, 2, 2, 3600, 1), (2, 0, 1800, 3600, 1, 1, 3600, 1),
        (3, 600, 4800, 1800, 2, 2, 1800, 1), (4, 900, -1, -1, -1, 1, 600, 5),
        (5, 1200, 2400, 400, 1, 1, 900, 0)]


@pytest.fixture(scope="module")
def blue_run(tmp_path_factory):
    """The first 600 jobs of the 30-day Blue Horizon trace, replayed as the README does."""
    out = tmp_path_factory.mktemp("export") / "run"
    assert cli.main(["simulate", str(ROOT / "etc" / "sample.ini"), "--out", str(out), "-q",
                     "--set", "tracefile.max-jobs=600"]) == 0
    return out


@pytest.mark.filterwarnings("ignore:The inplace keyword")   # evalys' own use of pandas
def test_evalys_reads_our_jobs_csv_and_finds_our_utilisation(blue_run, capsys):
    evalys = pytest.importorskip("evalys.jobset")
    from evalys.metrics import load_mean

    assert cli.main(["export", str(blue_run), "--format", "batsim"]) == 0
    capsys.readouterr()
    summary = json.loads((blue_run / "summary.json").read_text())
    jobs = evalys.JobSet.from_csv(str(blue_run / "jobs.csv"))
    assert len(jobs.df) == summary["leases_total"] == 600
    # the site's 144 nodes, one CPU each and one VM per node: evalys' busy nodes over the
    # makespan are our CPU utilisation
    busy = load_mean(jobs.utilisation, begin=0, end=summary["makespan"])
    assert busy / 144 == pytest.approx(summary["utilization"], rel=1e-9)
    assert jobs.df["waiting_time"].mean() == pytest.approx(summary["avg_wait"], rel=1e-9)


def test_swf_export_keeps_the_original_jobs_fields(blue_run, capsys):
    assert cli.main(["export", str(blue_run), "--format", "swf"]) == 0
    capsys.readouterr()
    reader = SWFReader(blue_run / "schedule.swf")
    exported = list(reader.jobs())
    leases = read_rows(blue_run / "leases.csv")
    assert len(exported) == len(leases) == 600
    original = {j.job: j for j in SWFReader(ROOT / "traces" / "sdsc-blue-30days.swf").jobs()}
    for job, lease in zip(exported, leases):
        assert job.job == int(lease["lease_id"])
        assert job.wait == float(lease["start"]) - float(lease["submit"])
        assert job.run_time == float(lease["end"]) - float(lease["start"])
        source = original[int(lease["source_id"])]
        assert (job.user, job.group, job.queue, job.requested_procs, job.status) == (
            source.user, source.group, source.queue, source.requested_procs, 1)
    assert reader.directive("MaxJobs") == 600 and reader.directive("MaxNodes") == 144


def test_export_errors_are_one_line(hand_run, tmp_path, capsys):
    assert cli.main(["export", str(tmp_path), "--format", "swf"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"{tmp_path}: not a run folder (it has no leases.csv)")
    assert cli.main(["export", str(hand_run), "--format", "batsim",
                     "--out", str(tmp_path / "missing" / "jobs.csv")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err and len(err.splitlines()) == 1
