"""``report --html`` without a browser: the Gantt plan of a run, the page's contents, and bad
input (one line naming the file, never a traceback).

The leases are those of tests/experiments/test_run_plots.py, on 4 nodes (seconds)::

    node 3 |      [2 AR ...........][3 BE ........]     lease 3 runs on nodes 0 and 3:
    node 2 |                  [6 deadline, unfinished ->    two rectangles
    node 1 |[1 BE ........][5 failed]
    node 0 |[1 BE ........]         [3 BE ........]
           0     1800    3600  4000  5400          7200

Lease 4 (immediate) was rejected and never ran: it has no bar. Lease 6 is still running when
the run stops: it ends at the table's last time, 7,200 s, as ``unfinished``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lease_manager import cli
from lease_manager.web.gantt_plan import COMPACT_KEYS, compact, plan_of_run

from support import LEASES_CSV_HEADER, MIXED_LEASE_ROWS

HEADER, ROWS = LEASES_CSV_HEADER, MIXED_LEASE_ROWS


def write_run(d: Path, rows: list[str] = ROWS, resources: str | None = "6 CPU:1 Memory:1024",
              header: str = HEADER) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "leases.csv").write_text("\n".join([header, *rows]) + "\n")
    (d / "summary.json").write_text(json.dumps({"leases_total": len(rows), "avg_wait": 1840.0}))
    if resources is not None:
        (d / "run.json").write_text(json.dumps(
            {"effective": {"simulation": {"resources": resources}}, "seed": 0}))
    return d


def test_plan_has_a_bar_a_lease_and_node_and_every_node_of_run_json(tmp_path: Path) -> None:
    plan = plan_of_run(write_run(tmp_path / "run"))
    # six nodes from run.json, two of which no lease used
    assert plan["nodes"] == [f"node {i}" for i in range(6)]
    bars = [(b["lease"], b["node"], b["start"], b["end"], b["state"], b["type"])
            for b in plan["bars"]]
    assert bars == [(1, 0, 0, 3600, "done", "best-effort"), (1, 1, 0, 3600, "done", "best-effort"),
                    (2, 3, 1800, 5400, "done", "advance-reservation"),
                    (5, 1, 3600, 4000, "failed", "best-effort"),
                    (6, 2, 4000, 7200, "unfinished", "deadline"),
                    (3, 0, 5400, 7200, "done", "best-effort"),
                    (3, 3, 5400, 7200, "done", "best-effort")]
    assert {b["kind"] for b in plan["bars"]} == {"run"}
    assert plan["now"] is None and plan["colour_by"] == "type"
    hover = next(b["hover"] for b in plan["bars"] if b["lease"] == 3)
    assert hover.splitlines() == ["lease 3 (best-effort, done)",
                                  "submitted 600 s, waited 4,800 s",
                                  "start 5,400 s, end 7,200 s (ran 1,800 s)",
                                  "2 VMs on node 0, node 3"]


def test_plan_without_run_json_has_the_nodes_leases_used(tmp_path: Path) -> None:
    plan = plan_of_run(write_run(tmp_path / "run", resources=None))
    assert plan["nodes"] == [f"node {i}" for i in range(4)]


def test_plan_of_several_sites_names_each_sites_nodes(tmp_path: Path) -> None:
    rows = ["1,,best-effort,done,0,0,60,1,60,60,0,0,,1,east",
            "2,,best-effort,done,0,0,60,1,60,60,0,0,,0,west"]
    plan = plan_of_run(write_run(tmp_path / "run", rows, resources=None,
                                 header=HEADER + ",site"))
    assert plan["nodes"] == ["east node 0", "east node 1", "west node 0"]
    assert [(b["lease"], b["node"]) for b in plan["bars"]] == [(1, 1), (2, 2)]


def test_compact_plan_writes_a_lease_once_with_its_rows(tmp_path: Path) -> None:
    plan = plan_of_run(write_run(tmp_path / "run"))
    small = compact(plan)
    assert small["keys"] == list(COMPACT_KEYS)
    assert [(item[0], item[-1]) for item in small["items"]] == [(1, [0, 1]), (2, [3]), (5, [1]),
                                                                  (6, [2]), (3, [0, 3])]
    # expanded as LMGantt.expand does, it is the plan again
    bars = [{"node": row, **dict(zip(small["keys"], item))}
            for item in small["items"] for row in item[-1]]
    assert sorted(bars, key=lambda b: (b["lease"], b["node"])) == \
        sorted(plan["bars"], key=lambda b: (b["lease"], b["node"]))


def page_data(page: Path) -> dict:
    text = page.read_text()
    found = re.search(r"<script type='application/json' id='lm-data'>(.*?)</script>", text, re.S)
    assert found
    return json.loads(found.group(1))


def test_run_page_holds_plotly_the_plan_and_every_lease(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path / "run")
    out = tmp_path / "elsewhere" / "page.html"
    assert cli.main(["report", str(run), "--html", "--html-out", str(out)]) == 0
    assert f"page: {out}" in capsys.readouterr().out
    assert not (run / "report.html").exists()
    text = out.read_text()
    assert text.count("Plotly.newPlot") >= 1 and "LMGantt" in text
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=['\"]?https?:", text)
    data = page_data(out)
    table = data["tables"][0]
    assert [row[0] for row in table["rows"]] == [1, 2, 3, 4, 5, 6]
    assert table["columns"][-1] == "bounded_slowdown"
    # lease 3: (4800 + 1800) / 1800; lease 5 failed and 6 still runs: none
    assert [row[-1] for row in table["rows"]] == [1, 1, pytest.approx(3.6667, abs=1e-4), None,
                                                  None, None]
    assert [row[table["columns"].index("nodes")] for row in table["rows"]] == \
        ["0-1", "3", "0 3", "", "1", "2"]
    assert len(data["gantt"]["plan"]["items"]) == 5   # the five leases that ran
    ids = [f["id"] for f in data["figures"]]
    assert ids == ["fig-usage", "fig-waits", "fig-slowdowns"]


@pytest.mark.parametrize(("files", "named", "says"), [
    ({}, "summary.json", "no such file"),
    ({"summary.json": "{}"}, "leases.csv", "no such file"),
    ({"summary.json": "{not json", "leases.csv": HEADER + "\n"}, "summary.json", "not JSON"),
    ({"summary.json": "{}", "leases.csv": "lease_id,state\n1,done\n"}, "leases.csv",
     "line 1: no column 'type'"),
    ({"summary.json": "{}", "leases.csv": HEADER + "\n1,,best-effort,done,0,0,60,1,60,60,0,0,,"
      "0 x\n"}, "leases.csv", "line 2: field nodes"),
])
def test_bad_folder_is_one_line_naming_the_file(tmp_path: Path, capsys, files, named,
                                                says) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name, text in files.items():
        (run / name).write_text(text)
    assert cli.main(["report", str(run), "--html"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert f"{run / named}: " in err and says in err and "Traceback" not in err
    assert not (run / "report.html").exists()


def test_without_plotly_it_says_what_to_install(tmp_path: Path, capsys, monkeypatch) -> None:
    from lease_manager.web import plotly_js

    def missing() -> str:
        raise ModuleNotFoundError("No module named 'plotly'")

    monkeypatch.setattr(plotly_js, "plotly_js", missing)
    run = write_run(tmp_path / "run")
    assert cli.main(["report", str(run), "--html"]) == 2
    err = capsys.readouterr().err
    assert "needs the plotly package" in err and "pip install" in err
    assert not (run / "report.html").exists()
