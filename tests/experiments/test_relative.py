"""NM (``lease-manager report``): the share of the leases' energy after the instance's best
makespan, on three hand-written runs of one instance (and one of another)."""

from __future__ import annotations

import csv
import json

import pytest

from lease_manager.experiments.relative import with_nm
from lease_manager.experiments.report import report_command
from lease_manager.experiments.results import collect

HEAD = ("lease_id", "state", "start", "end", "vms", "requested", "watts")


def run_folder(root, profile, seed, leases, settings):
    run_dir = root / profile / "tasks" / f"seed-{seed}"
    run_dir.mkdir(parents=True)
    meta = {"run_id": f"{profile}/tasks/seed-{seed}", "profile": profile, "trace": "tasks",
            "seed": seed, "settings": settings}
    (run_dir / "run.json").write_text(json.dumps(meta))
    ends = [row[2] for row in leases if row[0] == "done"]
    (run_dir / "summary.json").write_text(json.dumps({"makespan": max(ends)}))
    with (run_dir / "leases.csv").open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(HEAD)
        for i, row in enumerate(leases, start=1):
            out.writerow((i, *row))


def test_nm_of_three_planners_on_one_instance(tmp_path, capsys):
    """Three leases: A 4 s x 10 W, B 2 s x 20 W (2 VMs: 40 W), C 3 s x 10 W. Energy 40 + 80 +
    30 = 150 J.

    a:  A 0-4, B 0-2, C 2-5              last end 5  (the best: C* = 5)     NM 0
    b:  A 0-4, B 4-6, C 3-6              last end 6: B 5-6 (40 J) + C 5-6 (10 J)   NM 50/150
    c:  A 0-4, B 2-4, C rejected         C never ran: 30 J (c's last end, 4, is not C*: it
                                         did not run C)                     NM 30/150
    A run of another envelope (settings differ) is its own instance: NM 0.

    NM whole counts the whole energy of every lease that ends after C* = 5: b's B (ends 6:
    80 J) and C (ends 6: 30 J): 110/150; a 0; c 30/150 (C never ran).
    """
    settings = {"planning.policy-planner": "x", "power.power-cap-scale": "1"}
    rows = {
        "a": [("done", 0, 4, 1, 4, 10), ("done", 0, 2, 2, 2, 20), ("done", 2, 5, 1, 3, 10)],
        "b": [("done", 0, 4, 1, 4, 10), ("done", 4, 6, 2, 2, 20), ("done", 3, 6, 1, 3, 10)],
        "c": [("done", 0, 4, 1, 4, 10), ("done", 2, 4, 2, 2, 20),
              ("rejected", "", "", 1, 3, 10)],
    }
    for name, leases in rows.items():
        run_folder(tmp_path, name, 1, leases, {**settings, "planning.policy-planner": name})
    run_folder(tmp_path, "b", 2, rows["b"],
               {"planning.policy-planner": "b", "power.power-cap-scale": "2"})
    results = with_nm(collect(tmp_path), tmp_path)
    got = {(r["profile"], r["seed"]): r["nm"] for r in results.rows}
    assert got == {("a", 1): 0, ("b", 1): pytest.approx(50 / 150),
                   ("c", 1): pytest.approx(30 / 150), ("b", 2): 0}
    whole = {(r["profile"], r["seed"]): r["nm_whole"] for r in results.rows}
    assert whole == {("a", 1): 0, ("b", 1): pytest.approx(110 / 150),
                     ("c", 1): pytest.approx(30 / 150), ("b", 2): 0}
    assert report_command(str(tmp_path)) == 0
    text = capsys.readouterr().out
    assert "nm" in text
    header = (tmp_path / "results.csv").read_text().splitlines()[0].split(",")
    assert header[-3:] == ["nm", "nm_whole", "error"]


def test_no_nm_without_leases_of_their_own_power(tmp_path):
    run_folder(tmp_path, "a", 1, [("done", 0, 4, 1, 4, "")], {})
    results = collect(tmp_path)
    (tmp_path / "a" / "tasks" / "seed-1" / "leases.csv").write_text("lease_id,state\n1,done\n")
    assert with_nm(results, tmp_path) is results


def test_a_lease_no_run_of_the_instance_ran_is_left_out(tmp_path):
    """A 4 s x 10 W and B 2 s x 10 W ran; C (3 s x 10 W) was rejected by both runs.

    a: A 0-4, B 4-6 (C* = 6); b: A 0-4, B 6-8: B's 2 s x 10 W after C*: NM 20/60 (not 20/90).
    """
    rej = ("rejected", "", "", 1, 3, 10)
    run_folder(tmp_path, "a", 1, [("done", 0, 4, 1, 4, 10), ("done", 4, 6, 1, 2, 10), rej],
               {"planning.policy-planner": "a"})
    run_folder(tmp_path, "b", 1, [("done", 0, 4, 1, 4, 10), ("done", 6, 8, 1, 2, 10), rej],
               {"planning.policy-planner": "b"})
    results = with_nm(collect(tmp_path), tmp_path)
    assert {r["profile"]: r["nm"] for r in results.rows} == {"a": 0,
                                                              "b": pytest.approx(20 / 60)}


def test_without_a_run_that_ran_every_lease_the_run_that_ran_most_sets_c_star(tmp_path):
    """A 4 s x 10 W, B 2 s x 10 W, C 2 s x 10 W (80 J). Run a ran A and B (0-4, 4-6), run b
    A, B and C (0-4, 6-8, 8-10), run c A and C (0-4, 4-6). b ran the most: C* = 10.
    a: C never ran (20 J)                                   NM 20/80
    b: nothing after 10                                     NM 0
    c: B never ran (20 J)                                   NM 20/80
    (Taking the earliest end of any run, 6, would count most of b's work as late.)
    """
    rej = ("rejected", "", "", 1, 2, 10)
    run_folder(tmp_path, "a", 1, [("done", 0, 4, 1, 4, 10), ("done", 4, 6, 1, 2, 10), rej],
               {"planning.policy-planner": "a"})
    run_folder(tmp_path, "b", 1, [("done", 0, 4, 1, 4, 10), ("done", 6, 8, 1, 2, 10),
                                  ("done", 8, 10, 1, 2, 10)], {"planning.policy-planner": "b"})
    run_folder(tmp_path, "c", 1, [("done", 0, 4, 1, 4, 10), rej, ("done", 4, 6, 1, 2, 10)],
               {"planning.policy-planner": "c"})
    results = with_nm(collect(tmp_path), tmp_path)
    assert {r["profile"]: r["nm"] for r in results.rows} == {
        "a": pytest.approx(0.25), "b": 0, "c": pytest.approx(0.25)}
