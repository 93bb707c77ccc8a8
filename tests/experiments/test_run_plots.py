"""The figures of one run (``report RUN-DIR --plots``), from a hand-written ``leases.csv``.

Six leases on 4 nodes (times in seconds; the chart shows hours)::

    node 3 |      [2 AR ...........][3 BE ........]     lease 3 runs on nodes 0 and 3,
    node 2 |                  [6 deadline, unfinished ->    drawn as two bars joined
    node 1 |[1 BE ........][5 failed]                      by a dotted line
    node 0 |[1 BE ........]         [3 BE ........]
           0     1800    3600  4000  5400          7200

    lease  type                 state      submit  start  end    wait  bounded slowdown
    1      best-effort          done       0       0      3600   0     1
    2      advance-reservation  done       0       1800   5400   0     1
    3      best-effort          done       600     5400   7200   4800  (4800+1800)/1800 = 3.67
    4      immediate            rejected   900     -      -      -     -
    5      best-effort          failed     1200    3600   4000   2400  - (not finished)
    6      deadline             active     2000    4000   -      2000  - (still running)

Leases waiting (submitted, not started): 1 at 0 (lease 2), 2 at 600, 3 at 1200, 2 at 1800,
3 at 2000, 2 at 3600, 1 at 4000, 0 at 5400. Leases running: 1 at 0, 2 at 1800, 3600, 4000 and
5400 (one ends as one starts), 1 at 7200 (lease 6, unfinished).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from lease_manager import cli
from lease_manager.observers.metrics import Metrics, read_units

mpl = pytest.importorskip("matplotlib")
from matplotlib.collections import LineCollection, PatchCollection  # noqa: E402

from lease_manager.experiments import plots  # noqa: E402
from lease_manager.experiments.gantt import gantt  # noqa: E402

HEADER = "lease_id,source_id,type,state,submit,start,end,vms,requested,actual,wait,price," \
         "reason,nodes"
ROWS = [
    "1,,best-effort,done,0,0,3600,2,3600,3600,0,0,,0 1",
    "2,,advance-reservation,done,0,1800,5400,1,3600,3600,0,0,,3",
    "3,,best-effort,done,600,5400,7200,2,1800,1800,4800,0,,0 3",
    "4,,immediate,rejected,900,,,1,600,600,,0,no room,",
    "5,,best-effort,failed,1200,3600,4000,1,900,400,2400,0,,1",
    "6,,deadline,active,2000,4000,,1,9000,9000,2000,0,,2",
]


@pytest.fixture
def run_dir(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "leases.csv").write_text("\n".join([HEADER, *ROWS]) + "\n")
    (d / "summary.json").write_text(json.dumps({"leases_total": 6}))
    return d


def test_gantt_colours_by_type_hatches_by_state_and_joins_split_leases(run_dir):
    ax = gantt(run_dir).axes[0]
    styles = {}
    for c in ax.collections:
        if isinstance(c, PatchCollection):
            colour = tuple(np.round(c.get_facecolor()[0][:3], 3))
            styles[(colour, c.get_hatch())] = len(c.get_paths())
    blue = tuple(np.round(mpl.colors.to_rgb("#56b4e9"), 3))
    orange = tuple(np.round(mpl.colors.to_rgb("#e69f00"), 3))
    pink = tuple(np.round(mpl.colors.to_rgb("#cc79a7"), 3))
    assert styles == {(blue, None): 3,          # leases 1 and 3 (two blocks)
                      (orange, None): 1,        # lease 2
                      (blue, "xxx"): 1,         # lease 5 failed
                      (pink, "..."): 1}         # lease 6 unfinished
    (joins,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(joins.get_segments()) == 1       # lease 3's two blocks
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "best-effort", "advance-reservation", "deadline", "done", "failed", "unfinished"]
    assert ax.get_xlim()[1] >= 2.0              # lease 6 drawn to the last end, 7200 s
    assert sorted(t.get_text() for t in ax.texts) == ["1", "2", "3", "5", "6"]


def test_queue_and_running_leases_rebuilt_from_the_lease_table(run_dir):
    rebuilt = plots.usage_from_leases(plots.read_leases(run_dir))
    times, values = rebuilt["queue_length"]
    assert times.tolist() == [0, 600, 1200, 1800, 2000, 3600, 4000, 5400, 7200]
    assert values.tolist() == [1, 2, 3, 2, 3, 2, 1, 0, 0]
    times, values = rebuilt["running_leases"]
    assert times.tolist() == [0, 1800, 3600, 4000, 5400, 7200]
    assert values.tolist() == [1, 2, 2, 2, 2, 1]


def test_bounded_slowdowns_of_finished_leases(run_dir):
    assert plots.bounded_slowdowns(plots.read_leases(run_dir)) == pytest.approx(
        [1.0, 1.0, 6600 / 1800])


def test_report_on_one_run_draws_gantt_usage_and_distributions(run_dir, capsys):
    assert cli.main(["report", str(run_dir), "--plots"]) == 0
    assert "plots: 4 PNG files" in capsys.readouterr().out
    assert sorted(p.name for p in (run_dir / "plots").glob("*.png")) == [
        "gantt.png", "slowdowns.png", "usage.png", "waits.png"]
    fig = plots.usage({"run": run_dir}, from_leases=True)
    top, bottom = fig.axes
    assert top.get_ylabel() == "leases running" and bottom.get_ylabel() == "leases waiting"
    assert all(float(t).is_integer() for t in bottom.get_yticks())   # counts
    fig = plots.slowdowns({"run": plots.bounded_slowdowns(plots.read_leases(run_dir))})
    line = fig.axes[0].get_lines()[0]
    assert line.get_xdata().tolist() == pytest.approx([1.0, 1.0, 1.0, 6600 / 1800])
    assert line.get_ydata().tolist() == pytest.approx([0, 1 / 3, 2 / 3, 1])


def test_series_carry_their_declared_unit_and_integer_ticks_for_counts(tmp_path):
    metrics = Metrics()
    metrics.describe("held", "leases", "leases held")
    metrics.describe("watts", "W")
    for t, v in ((0, 0), (100, 3), (250, 1)):
        metrics.record("held", t, v)
        metrics.record("watts", t, v * 0.5)
    metrics.record("plain", 0, 1)
    metrics.write(tmp_path / "series")
    assert read_units(tmp_path / "series") == {"held": ("leases", "leases held"),
                                               "watts": ("W", "")}
    runs = {"run": tmp_path}
    ax = plots.series("held", runs).axes[0]
    assert ax.get_ylabel() == "leases held"
    assert all(float(t).is_integer() for t in ax.get_yticks())
    ax = plots.series("watts", runs).axes[0]
    assert ax.get_ylabel() == "watts (W)"
    assert not all(float(t).is_integer() for t in ax.get_yticks())
    assert plots.series("plain", runs).axes[0].get_ylabel() == "plain"
