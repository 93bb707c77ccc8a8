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

Nodes busy (running a lease; lease 6 runs to 7200, the table's last time): 2 from 0 (nodes 0
1), 3 from 1800 (+3), 2 from 3600 (lease 1 ends, lease 5 takes node 1), 2 from 4000 (lease 5
ends, lease 6 takes node 2), 3 from 5400 (lease 2 ends, lease 3 takes nodes 0 and 3), 0 at
7200. Node-seconds: 2x1800 + 3x1800 + 2x400 + 2x1400 + 3x1800 = 18,000; on 4 nodes over
7,200 s the mean utilisation is 18,000 / 28,800 = 62.5 %.

Waits: leases 1 and 2 none, 5 and 6 (2400 s, 2000 s) in the class 10 min-1 h, 3 (4800 s)
in 1-4 h. Sizes: leases 1 and 3 two VMs, the others one.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lease_manager import cli
from lease_manager.observers.metrics import Metrics, read_units

mpl = pytest.importorskip("matplotlib")
from matplotlib.collections import LineCollection, PatchCollection  # noqa: E402

from lease_manager.experiments import plots  # noqa: E402
from lease_manager.experiments.gantt import (  # noqa: E402
    WAIT_CLASSES,
    gantt,
    size_classes,
    wait_class,
)

from support import LEASES_CSV_HEADER, MIXED_LEASE_ROWS  # noqa: E402

HEADER, ROWS = LEASES_CSV_HEADER, MIXED_LEASE_ROWS


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


def test_busy_nodes_rebuilt_from_the_lease_table(run_dir):
    rows = plots.read_leases(run_dir)
    times, busy = plots.busy_nodes_from_leases(rows)
    assert times.tolist() == [0, 1800, 3600, 4000, 5400, 7200]
    assert busy.tolist() == [2, 3, 2, 2, 3, 0]
    assert plots.time_mean(times, busy / 4) == pytest.approx(0.625)
    # without run.json, the highest node index in leases.csv: a lower bound
    assert plots.site_node_count(run_dir, rows) == (4, False)
    (run_dir / "run.json").write_text(json.dumps(
        {"effective": {"simulation": {"resources": "6 CPU:1 Memory:1024"}}}))
    assert plots.site_node_count(run_dir, rows) == (6, True)
    (run_dir / "run.json").write_text(json.dumps(   # a sweep's run.json, two groups
        {"run_id": "p/t/seed-1", "settings": {"simulation.resources": "2 CPU:4; 3 CPU:8"}}))
    assert plots.site_node_count(run_dir, rows) == (5, True)


def test_a_shared_node_counts_once_and_sites_apart():
    """Node 0 of site a hosts leases 1 (0-100) and 2 (50-150); lease 3 runs on node 1 of site
    a (100-200) and lease 4 on node 0 of site b (0-100)::

        a/1 |          [3 ......]      busy: 2 from 0 (a/0, b/0), 2 at 50 (a/0 already busy),
        a/0 |[1 ....]                        2 from 100 (b/0 and a/0 free, a/1 and a/0 held
            |     [2 ....]                   by lease 2), 1 from 150, 0 at 200
        b/0 |[4 ....]
            0    50  100  150  200
    """
    header = "lease_id,state,submit,start,end,nodes,site"
    rows = [dict(zip(header.split(","), line.split(","))) for line in (
        "1,done,0,0,100,0,a", "2,done,0,50,150,0,a", "3,done,0,100,200,1,a",
        "4,done,0,0,100,0,b")]
    times, busy = plots.busy_nodes_from_leases(rows)
    assert times.tolist() == [0, 50, 100, 150, 200]
    assert busy.tolist() == [2, 2, 2, 1, 0]
    assert plots.site_node_count(Path("/nonexistent"), rows) == (3, False)


def test_report_on_one_run_draws_gantt_usage_and_distributions(run_dir, capsys):
    assert cli.main(["report", str(run_dir), "--plots"]) == 0
    assert f"plots: 4 PNG files in {run_dir / 'plots'}/\n" in capsys.readouterr().out
    assert sorted(p.name for p in (run_dir / "plots").glob("*.png")) == [
        "gantt.png", "slowdowns.png", "usage.png", "waits.png"]
    fig = plots.usage({"run": run_dir}, from_leases=True)
    top, bottom = fig.axes
    assert top.get_ylabel() == "utilisation (% of nodes busy)"
    assert bottom.get_ylabel() == "leases waiting"
    (line,) = top.get_lines()
    assert line.get_xdata().tolist() == [0, 0.5, 1, 4000 / 3600, 1.5, 2]
    assert line.get_ydata().tolist() == [50, 75, 50, 50, 75, 0]
    assert line.get_label() == "run (mean 62.5%)"
    assert "share of the site's at least 4 nodes" in fig.get_supxlabel()
    assert all(float(t).is_integer() for t in bottom.get_yticks())   # counts
    fig = plots.slowdowns({"run": plots.bounded_slowdowns(plots.read_leases(run_dir))})
    line = fig.axes[0].get_lines()[0]
    assert line.get_xdata().tolist() == pytest.approx([1.0, 1.0, 1.0, 6600 / 1800])
    assert line.get_ydata().tolist() == pytest.approx([0, 1 / 3, 2 / 3, 1])
    # (1 + 1 + 3.67) / 3 = 1.89; two of three at 1
    assert line.get_label() == "run (mean 1.89; 67% not slowed)"
    # waits 0, 0, 4800, 2400, 2000 s (lease 4 never started): mean 9200 / 5 s = 0.51 h
    fig = plots.waits({"run": [float(r["wait"]) for r in plots.read_leases(run_dir)
                               if r["wait"]]})
    assert fig.axes[0].get_lines()[0].get_label() == "run (mean 0.51 h; 40% without wait)"


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


def _face_groups(ax) -> dict[tuple, int]:
    """{(RGB of the bars, hatch): number of bars} of a Gantt chart."""
    out: dict[tuple, int] = {}
    for c in ax.collections:
        if isinstance(c, PatchCollection):
            colour = tuple(np.round(c.get_facecolor()[0][:3], 3))
            out[(colour, c.get_hatch())] = out.get((colour, c.get_hatch()), 0) + len(c.get_paths())
    return out


def test_wait_and_size_classes():
    assert [wait_class(w) for w in (0, 1, 59, 60, 599, 600, 3599, 3600, 86399, 86400, 1e9)] \
        == [0, 1, 1, 2, 2, 3, 3, 4, 6, 7, 7]
    assert [label for _, label in WAIT_CLASSES][:3] == ["0", "< 1 min", "1-10 min"]
    assert [label for _, label in size_classes(1)] == ["1"]
    assert [label for _, label in size_classes(5)] == ["1", "2", "3-4", "5"]
    assert [label for _, label in size_classes(144)][-2:] == ["65-128", "129-144"]


def test_gantt_coloured_by_wait_has_a_colour_bar_of_the_classes_drawn(run_dir):
    fig = gantt(run_dir, colour_by="wait")
    ax, bar = fig.axes
    assert ax.get_title().endswith("coloured by wait")
    assert [t.get_text() for t in bar.get_yticklabels()] == [
        "0", "< 1 min", "1-10 min", "10 min-1 h", "1-4 h"]
    assert bar.get_ylabel() == "wait before start"
    groups = _face_groups(ax)
    none = next(c for (c, h), n in groups.items() if h is None and n == 2 and
                (c, "xxx") not in groups)
    failed = next(c for c, h in groups if h == "xxx")
    long = next(c for c, h in groups if h is None and c != none)
    assert groups == {(none, None): 2,       # leases 1 and 2: no wait
                      (long, None): 2,       # lease 3's two blocks: 1-4 h
                      (failed, "xxx"): 1,    # lease 5 failed: 10 min-1 h
                      (failed, "..."): 1}    # lease 6 unfinished: 10 min-1 h, as lease 5
    # darker as the wait grows
    luminance = [0.3 * r + 0.6 * g + 0.1 * b for r, g, b in (none, failed, long)]
    assert luminance == sorted(luminance, reverse=True)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["done", "failed",
                                                                  "unfinished"]


def test_gantt_coloured_by_size_and_auto(run_dir, tmp_path):
    fig = gantt(run_dir, colour_by="size")
    ax, bar = fig.axes
    assert [t.get_text() for t in bar.get_yticklabels()] == ["1", "2"]
    assert sum(_face_groups(ax).values()) == 6
    assert len({c for c, _ in _face_groups(ax)}) == 2
    # auto: several types here, so by type (a legend, no colour bar)
    assert len(gantt(run_dir).axes) == 1
    assert gantt(run_dir).axes[0].get_title().endswith("coloured by type")
    # a trace replay: every lease best-effort, so by wait
    one_type = tmp_path / "one"
    one_type.mkdir()
    (one_type / "leases.csv").write_text("\n".join(
        [HEADER] + [r.replace("advance-reservation", "best-effort")
                    .replace("deadline", "best-effort") for r in ROWS]) + "\n")
    assert gantt(one_type).axes[0].get_title().endswith("coloured by wait")
    with pytest.raises(ValueError, match="colour_by must be one of"):
        gantt(run_dir, colour_by="price")


def test_report_replaces_the_plots_it_wrote_and_only_those(run_dir, capsys):
    assert cli.main(["report", str(run_dir), "--plots"]) == 0
    capsys.readouterr()
    plots_dir = run_dir / "plots"
    manifest = (plots_dir / plots.MANIFEST).read_text().splitlines()
    assert manifest[1:] == ["gantt.png", "usage.png", "waits.png", "slowdowns.png"]
    # a figure an older report drew and this one no longer draws, and another tool's figure
    (plots_dir / "series-gone.png").write_bytes(b"old")
    (plots_dir / plots.MANIFEST).write_text("\n".join(manifest + ["series-gone.png"]) + "\n")
    (plots_dir / "mine.png").write_bytes(b"not report's")
    before = (plots_dir / "gantt.png").stat().st_mtime_ns
    assert cli.main(["report", str(run_dir), "--plots", "--gantt-colour", "size"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line == (f"plots: 4 PNG files in {plots_dir}/, replacing the 5 the previous report "
                    "wrote (1 no longer drawn: removed); 1 other PNG file there, not in its "
                    "report-plots.txt, left alone")
    assert sorted(p.name for p in plots_dir.glob("*.png")) == [
        "gantt.png", "mine.png", "slowdowns.png", "usage.png", "waits.png"]
    assert (plots_dir / "mine.png").read_bytes() == b"not report's"
    assert (plots_dir / "gantt.png").stat().st_mtime_ns >= before
    assert (plots_dir / plots.MANIFEST).read_text().splitlines()[1:] == manifest[1:]


def test_daily_usage_of_one_run(run_dir):
    """The run spans 2 hours of day 0: one point, the mean of the whole run (62.5 % of nodes
    busy, see the module's docstring)."""
    top, _ = plots.usage({"run": run_dir}, from_leases=True, mode="daily").axes
    (line,) = top.get_lines()
    assert line.get_xdata().tolist() == [0.5]
    assert line.get_ydata().tolist() == pytest.approx([62.5])
    assert top.get_ylabel() == "utilisation (% of nodes busy)\n(daily mean)"
