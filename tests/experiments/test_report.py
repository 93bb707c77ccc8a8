"""``lease-manager report``: the comparison tables, the result files and the PNG plots.

One small sweep (2 profiles x 2 traces x 2 seeds, in this process) is shared by the module; a
plugin's outputs are imitated by adding a ``resource_contention_integral`` summary field and a
``series/resource_contention.csv`` file to its runs.
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path

import pytest
from test_sweep import make_sweep, read_csv

from lease_manager import cli
from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.report import default_metrics, report_command
from lease_manager.experiments.results import collect
from lease_manager.experiments.sweep import load_sweep, run_sweep

mpl = pytest.importorskip("matplotlib")
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.image import imread  # noqa: E402

from lease_manager.experiments import plots  # noqa: E402

PROFILES = ("off", "conservative")


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """The tables wrap to the terminal's width (``COLUMNS``, 80 in pytest-xdist's workers and
    in many terminals): the tests read them at one fixed width that holds every column."""
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("report")
    path = make_sweep(d, profiles=PROFILES, seeds="1-2", max_jobs=120)
    out = d / "out"
    outcome = run_sweep(load_sweep(path), out, jobs=1)
    assert outcome.done == 8 and not outcome.failed
    # what a resource-contention plugin would add: a summary field and a time series
    for i, run_json in enumerate(sorted(out.rglob("run.json"))):
        run_dir = run_json.parent
        summary = json.loads((run_dir / "summary.json").read_text())
        summary["resource_contention_integral"] = 1000.0 + 10 * i
        (run_dir / "summary.json").write_text(json.dumps(summary))
        with (run_dir / "series" / "resource_contention.csv").open("w") as fh:
            fh.write("time,value\n0,0\n3600,5\n7200,2.5\n10800,0\n")
    return out


def test_report_prints_mean_and_spread_per_profile(sweep_dir, capsys):
    assert cli.main(["report", str(sweep_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"8 runs in {sweep_dir}/ (8 done, 0 failed): 2 profiles, 2 traces, "
                          "2 seeds\n")
    assert "trace sdsc-blue-600requests: 2 profiles x 2 seeds" in out
    assert "trace later: 2 profiles x 2 seeds" in out
    header = next(line for line in out.splitlines() if line.startswith("profile"))
    assert header.split() == ["profile", "runs", "avg_wait", "(s)", "makespan", "(s)",
                              "utilization", "avg_bounded_slowdown",
                              "resource_contention_integral"]
    rows = read_csv(sweep_dir / "results.csv")
    # the plugin field of profile "conservative" on trace "later": mean and stdev of 2 seeds
    values = [float(r["resource_contention_integral"]) for r in rows
              if r["profile"] == "conservative" and r["trace"] == "later"]
    mean, std = statistics.fmean(values), statistics.stdev(values)
    block = out.split("trace later:")[1]
    line = next(li for li in block.splitlines() if li.startswith("conservative"))
    assert f"{mean:,.1f} ± {std:.3f}" in line, line
    assert line.split()[1] == "2"


def test_report_rebuilds_the_tables_and_writes_the_comparison(sweep_dir):
    (sweep_dir / "results.csv").unlink()
    (sweep_dir / "results.sqlite").unlink()
    assert report_command(str(sweep_dir)) == 0
    rows = read_csv(sweep_dir / "results.csv")
    assert len(rows) == 8 and len({r["run_id"] for r in rows}) == 8
    with (sweep_dir / "comparison.csv").open(newline="") as fh:
        comparison = list(csv.DictReader(fh))
    assert len(comparison) == 2 * 2 * 5   # traces x profiles x metrics
    cell = next(c for c in comparison if c["trace"] == "later" and c["profile"] == "off"
                and c["metric"] == "avg_wait")
    waits = [float(r["avg_wait"]) for r in rows if r["trace"] == "later"
             and r["profile"] == "off"]
    assert int(cell["n"]) == 2 and float(cell["mean"]) == pytest.approx(statistics.fmean(waits))


def test_default_metrics_are_the_core_ones_and_plugin_fields(sweep_dir):
    assert default_metrics(collect(sweep_dir)) == [
        "avg_wait", "makespan", "utilization", "avg_bounded_slowdown",
        "resource_contention_integral"]


def test_chosen_metric_and_unknown_metric(sweep_dir, capsys):
    assert cli.main(["report", str(sweep_dir), "--metric", "max_wait"]) == 0
    header = next(li for li in capsys.readouterr().out.splitlines() if li.startswith("profile"))
    assert header.split() == ["profile", "runs", "max_wait", "(s)"]
    assert cli.main(["report", str(sweep_dir), "--metric", "max_wiat"]) == 2
    assert "--metric max_wiat: no run's summary has this field" in capsys.readouterr().err


def test_report_on_a_directory_without_runs(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "no finished or failed runs found" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []          # no empty result files left behind


# ---------------------------------------------------------------------------------- plots
def assert_png_has_content(path: Path, min_kb: float = 15) -> None:
    assert path.is_file(), path
    assert path.stat().st_size > min_kb * 1024, (path, path.stat().st_size)
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 600
    pixels = image[..., :3].reshape(-1, 3)
    assert pixels.std() > 0.05, path                        # not blank
    colours = {tuple(p) for p in (pixels[::7] * 255).astype(int).tolist()}
    assert len(colours) > 50, (path, len(colours))          # lines, bars, text in colour


def test_report_plots_are_png_files_with_content(sweep_dir, capsys):
    assert cli.main(["report", str(sweep_dir), "--plots"]) == 0
    out = capsys.readouterr().out
    names = sorted(p.name for p in (sweep_dir / "plots").glob("*.png"))
    assert names == sorted([
        "gantt-off_sdsc-blue-600requests_seed-1.png",
        *(f"usage-{t}-seed-1.png" for t in ("sdsc-blue-600requests", "later")),
        *(f"{k}-{t}.png" for t in ("sdsc-blue-600requests", "later")
          for k in ("waits", "slowdowns")),
        *(f"series-{n}-{t}-seed-1.png" for n in ("resource_contention", "running_leases")
          for t in ("sdsc-blue-600requests", "later"))])
    assert f"plots: 11 PNG files in {sweep_dir / 'plots'}/" in out
    for name in names:
        assert_png_has_content(sweep_dir / "plots" / name)


def test_gantt_of_a_chosen_run_and_window(sweep_dir, capsys):
    run_id = "conservative/later/seed-2"
    assert cli.main(["report", str(sweep_dir), "--plots", "--gantt", run_id,
                     "--gantt-leases", "40", "--gantt-hours", "12", "--seed", "2"]) == 0
    capsys.readouterr()
    assert_png_has_content(sweep_dir / "plots" / "gantt-conservative_later_seed-2.png")
    assert (sweep_dir / "plots" / "usage-later-seed-2.png").is_file()
    assert cli.main(["report", str(sweep_dir), "--plots", "--gantt", "nope/x/seed-1"]) == 2
    assert "--gantt nope/x/seed-1: no finished run with this id" in capsys.readouterr().err


def test_gantt_draws_one_bar_per_block_of_nodes_of_each_lease(sweep_dir):
    run_dir = sweep_dir / "off" / "later" / "seed-1"
    fig = plots.gantt(run_dir, max_leases=30)
    ax = fig.axes[0]
    assert ax.has_data()
    bars = [c for c in ax.collections if isinstance(c, PatchCollection)]
    leases = sorted((r for r in plots.read_leases(run_dir) if r["nodes"]),
                    key=lambda r: (float(r["start"]), int(r["lease_id"])))[:30]
    blocks = [b for r in leases for b in plots._blocks(int(n) for n in r["nodes"].split())]
    assert sum(len(b.get_paths()) for b in bars) == len(blocks) > 30 // 2
    # bars span the leases' times (hours) and nodes
    x0, x1 = ax.get_xlim()
    assert x0 <= float(leases[0]["start"]) / 3600 and \
        x1 >= max(float(r["end"]) for r in leases) / 3600
    assert ax.get_ylim()[1] >= max(b[0] + b[1] - 1 for b in blocks)
    assert len(ax.texts) == 30   # lease ids on the bars


def test_usage_waits_and_series_figures_carry_the_data(sweep_dir):
    runs = {p: sweep_dir / p / "sdsc-blue-600requests" / "seed-1" for p in PROFILES}
    util = plots.read_series(runs["off"] / "series" / "utilization.csv")
    # panels: a row per profile, utilisation on the left, queue length on the right
    fig = plots.usage(runs, title="t")
    assert len(fig.axes) == 4
    off_util, off_queue, cons_util, cons_queue = fig.axes
    assert all(ax.has_data() for ax in fig.axes)
    assert off_util.get_title(loc="left") == f"off: mean {100 * plots.time_mean(*util):,.1f}%"
    assert cons_util.get_title(loc="left").startswith("conservative: mean ")
    (line,) = off_util.get_lines()
    assert len(line.get_xdata()) == len(util[0]) > 50
    assert max(line.get_ydata()) == pytest.approx(100 * util[1].max())
    assert off_util.get_ylim() == cons_util.get_ylim()      # shared axes
    assert off_queue.get_ylabel() == "leases waiting"
    # daily: one axis per quantity, a line per profile
    top, bottom = plots.usage(runs, mode="daily").axes
    assert [line.get_label().split(" (mean ")[0] for line in top.get_lines()] == list(PROFILES)
    assert list(top.get_lines()[0].get_ydata()) == pytest.approx(
        list(100 * plots.daily(*util)[1]))
    assert len(bottom.get_lines()) == 2

    waits = {p: [float(r["wait"]) for r in plots.read_leases(d)] for p, d in runs.items()}
    fig = plots.waits(waits)
    ax = fig.axes[0]
    assert ax.has_data() and len(ax.get_lines()) == 2
    assert len(ax.get_lines()[0].get_xdata()) == len(waits["off"]) + 1

    fig = plots.series("resource_contention", runs)
    assert [list(line.get_ydata()) for ax in fig.axes for line in ax.get_lines()] == \
        [[0, 5, 2.5, 0]] * 2


def test_usage_plot_needs_the_usage_probe(tmp_path, sweep_dir):
    empty = tmp_path / "run"
    empty.mkdir()
    assert plots.usage({"off": empty}) is None


def test_plots_without_matplotlib_say_how_to_install_it(sweep_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(LeaseManagerError, match=r"pip install 'lease-manager\[plots\]'"):
        report_command(str(sweep_dir), plots=True)


# ------------------------------------------------------------- a folder of several sweeps
def copy_sweep(sweep_dir: Path, to: Path) -> Path:
    """``sweep_dir``'s runs and plan, without the files ``report`` wrote into it."""
    import shutil

    shutil.copytree(sweep_dir, to, ignore=shutil.ignore_patterns(
        "results.*", "comparison.csv", "plots"))
    return to


def test_a_folder_of_two_copies_of_one_sweep_compares_them_side_by_side(sweep_dir, tmp_path,
                                                                         capsys):
    both = tmp_path / "both"
    for name in ("a", "b"):
        copy_sweep(sweep_dir, both / name)
    assert cli.main(["report", str(both)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"16 runs in {both}/ (16 done, 0 failed): 4 profiles, 2 traces, "
                          "2 seeds\n")
    rows = read_csv(both / "results.csv")
    # each run's id is its folder in the reported one: unique, and it finds the run
    assert [r["run_id"] for r in rows][:2] == ["a/off/sdsc-blue-600requests/seed-1",
                                               "a/off/sdsc-blue-600requests/seed-2"]
    assert len({r["run_id"] for r in rows}) == 16
    assert all((both / r["run_id"] / "summary.json").is_file() for r in rows)
    # each sweep's profiles keep their own rows, in the sweep's order
    block = out.split("trace later:")[1]
    table = [li.split()[:2] for li in block.splitlines()[3:7]]
    assert table == [["a/off", "2"], ["a/conservative", "2"], ["b/off", "2"],
                     ["b/conservative", "2"]]
    import sqlite3
    con = sqlite3.connect(both / "results.sqlite")
    assert con.execute("SELECT count(DISTINCT run_id) FROM runs").fetchone() == (16,)
    con.close()
    assert sorted(p.name for p in both.iterdir()) == ["a", "b", "comparison.csv",
                                                      "results.csv", "results.sqlite"]
    # one sweep below the reported folder, or part of a sweep: the sweep's own profile names
    only = copy_sweep(sweep_dir, tmp_path / "only" / "sweep")
    assert [r["run_id"] for r in collect(only.parent).rows] == [
        f"sweep/{r['run_id']}" for r in collect(sweep_dir).rows]
    assert collect(only.parent).profiles == PROFILES
    part = collect(only / "off")
    assert part.profiles == ("off",)
    assert {r["run_id"] for r in part.rows} == {f"{t}/seed-{s}" for s in (1, 2)
                                                for t in ("sdsc-blue-600requests", "later")}


def test_a_result_table_sqlite_refuses_is_one_line_and_leaves_no_file(sweep_dir, tmp_path,
                                                                      capsys):
    copy = copy_sweep(sweep_dir, tmp_path / "copy")
    # SQLite's column names ignore case: two summary fields that differ only in case
    summary_path = copy / "off" / "later" / "seed-1" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary_path.write_text(json.dumps({**summary, "Extra": 1, "extra": 2}))
    before = sorted(p.name for p in copy.iterdir())
    assert cli.main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "results.sqlite: cannot write the result table" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in copy.iterdir()) == before   # no results.csv, no .tmp


def test_run_ids_that_are_not_unique_are_refused_before_any_file(sweep_dir, tmp_path):
    import attrs

    from lease_manager.experiments.results import write_tables

    results = collect(sweep_dir)
    twice = attrs.evolve(results, rows=results.rows + results.rows[:1])
    with pytest.raises(LeaseManagerError, match="two runs have the id "
                                                "'off/sdsc-blue-600requests/seed-1'"):
        write_tables(twice, tmp_path)
    assert list(tmp_path.iterdir()) == []
