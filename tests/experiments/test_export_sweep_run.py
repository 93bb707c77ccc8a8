"""``lease-manager export`` on a sweep's run folder.

A sweep's ``run.json`` names its trace (``"trace": "NAME"``, ``"trace_path"``) and records no
checksum of it, where a ``simulate`` folder's records ``{"path", "sha256"}``. The export read
the latter shape only and stopped with a traceback (``'str' object has no attribute 'get'``),
in both formats.
Without a checksum the original trace cannot be trusted to be the one replayed, so its fields
are not reused: the schedule is the hand run's of ``test_export`` (leases.csv alone).
"""

from __future__ import annotations

import csv
import json

from test_run_plots import HEADER, ROWS

from lease_manager import cli
from lease_manager.workload.swf import SWFReader


def sweep_run(tmp_path):
    run = tmp_path / "sweep" / "off" / "blue" / "seed-1"
    run.mkdir(parents=True)
    (run / "leases.csv").write_text("\n".join([HEADER, *ROWS]) + "\n")
    trace = tmp_path / "blue.swf"
    trace.write_text("1 0 0 3600 2 -1 -1 2 3600 -1 1 1 1 -1 1 -1 -1 -1\n")
    (run / "run.json").write_text(json.dumps({
        "run_id": "off/blue/seed-1", "profile": "off", "trace": "blue",
        "trace_path": str(trace), "seed": 1, "base": None, "settings": {}, "overrides": []}))
    return run


def test_batsim_export_of_a_sweep_run_names_its_trace(tmp_path, capsys):
    run = sweep_run(tmp_path)
    out = tmp_path / "jobs.csv"
    assert cli.main(["export", str(run), "--format", "batsim", "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["job_id"] for r in rows] == ["1", "2", "3", "4", "5"]
    assert {r["workload_name"] for r in rows} == {"blue"}   # the trace file's name


def test_swf_export_of_a_sweep_run_uses_its_leases_alone(tmp_path, capsys):
    run = sweep_run(tmp_path)
    out = tmp_path / "x.swf"
    assert cli.main(["export", str(run), "--format", "swf", "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    jobs = list(SWFReader(out).jobs())
    assert [(j.job, j.submit, j.wait, j.run_time, j.allocated_procs, j.requested_procs,
             j.requested_time, j.status) for j in jobs] == [
        (1, 0, 0, 3600, 2, 2, 3600, 1), (2, 0, 1800, 3600, 1, 1, 3600, 1),
        (3, 600, 4800, 1800, 2, 2, 1800, 1), (4, 900, -1, -1, -1, 1, 600, 5),
        (5, 1200, 2400, 400, 1, 1, 900, 0)]
