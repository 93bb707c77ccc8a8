"""``lease-manager report DIR``: compare the profiles of a sweep over its seeds.

For every trace, one table with a row per profile: the number of finished runs and, for each
metric, the mean and the sample standard deviation over the seeds. The metrics are the core's
``avg_wait``, ``makespan``, ``utilization`` and ``avg_bounded_slowdown`` and every other numeric
field that plugins add to ``summary.json`` (``resource_contention_integral``, energy...), and,
when leases have their own power, ``nm``, which compares each run with the other runs of the
same instance (:mod:`lease_manager.experiments.relative`). The
same numbers go to ``DIR/comparison.csv``; ``--plots`` draws the figures of
:mod:`lease_manager.experiments.plots`.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.relative import with_nm
from lease_manager.experiments.results import Results, collect, write_tables

CORE_METRICS = ("avg_wait", "makespan", "utilization", "avg_bounded_slowdown")
#: summary fields of the core that are not compared by default
CORE_FIELDS = frozenset({
    "leases_total", "leases_completed", "leases_rejected", "leases_cancelled", "leases_failed",
    "leases_unfinished", "max_wait", "avg_slowdown", "revenue", "held_leases_force_released",
    "avg_slowdown_requested", "avg_bounded_slowdown_requested",
    *CORE_METRICS})
UNITS = {"avg_wait": "s", "makespan": "s", "max_wait": "s"}


@attrs.frozen
class Stat:
    """A metric over the seeds of one profile and trace."""

    n: int
    mean: float
    std: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(len(values), statistics.fmean(values), std, min(values), max(values))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def default_metrics(results: Results) -> list[str]:
    """The core metrics, then every other top-level numeric summary field that is not zero in
    some run (plugins' fields such as ``resource_contention_integral``; nested ones, such as
    ``x_by_resource.CPU``, only with ``--metric``)."""
    done = results.done()
    metrics = [m for m in CORE_METRICS if m in results.summary_columns]
    for col in results.summary_columns:
        if col in CORE_FIELDS or "." in col:
            continue
        if any(_number(row[col]) for row in done):   # present and non-zero
            metrics.append(col)
    return metrics


def compare(results: Results, metrics: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(trace, profile): {"runs": n, "failed": k, metric: Stat | None}}``."""
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for trace in results.traces:
        for profile in results.profiles:
            rows = [r for r in results.rows if r["trace"] == trace and r["profile"] == profile]
            if not rows:
                continue
            done = [r for r in rows if r["status"] == "done"]
            cell: dict[str, Any] = {"runs": len(done), "failed": len(rows) - len(done)}
            for metric in metrics:
                values = [v for v in (_number(r.get(metric)) for r in done) if v is not None]
                cell[metric] = Stat.of(values) if values else None
            table[(trace, profile)] = cell
    return table


def fmt(x: float) -> str:
    """A compact, readable number: 33,855.5  4.21  0.491."""
    ax = abs(x)
    if ax >= 1e7:
        return f"{x:.4g}"
    if ax >= 100:
        return f"{x:,.1f}"
    if ax >= 1:
        return f"{x:.3f}"
    if ax == 0:
        return "0"
    if ax >= 1e-3:
        return f"{x:.4f}"
    return f"{x:.3g}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _chunks(widths: Sequence[int], width: int) -> list[list[int]]:
    """Column indices (after the first two) in groups whose lines fit in ``width``."""
    fixed = widths[0] + 2 + widths[1]
    groups: list[list[int]] = [[]]
    used = fixed
    for i in range(2, len(widths)):
        if groups[-1] and used + 2 + widths[i] > width:
            groups.append([])
            used = fixed
        groups[-1].append(i)
        used += 2 + widths[i]
    return groups


def format_tables(results: Results, metrics: Sequence[str], width: int = 120) -> str:
    """The comparison tables, one per trace (split into several when wider than ``width``)."""
    table = compare(results, metrics)
    out: list[str] = []
    for trace in results.traces:
        profiles = [p for p in results.profiles if (trace, p) in table]
        if not profiles:
            continue
        seeds = sorted({r["seed"] for r in results.rows if r["trace"] == trace})
        out.append(f"trace {trace}: {_plural(len(profiles), 'profile')} x "
                   f"{_plural(len(seeds), 'seed')} (mean ± standard deviation over seeds)")
        header = ["profile", "runs"] + [f"{m} ({UNITS[m]})" if m in UNITS else m
                                        for m in metrics]
        lines = [header]
        for profile in profiles:
            cell = table[(trace, profile)]
            runs = str(cell["runs"]) + (f" ({cell['failed']} failed)" if cell["failed"] else "")
            row = [profile, runs]
            for metric in metrics:
                stat = cell[metric]
                if stat is None:
                    row.append("-")
                elif stat.n > 1:
                    row.append(f"{fmt(stat.mean)} ± {fmt(stat.std)}")
                else:
                    row.append(fmt(stat.mean))
            lines.append(row)
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        for k, group in enumerate(_chunks(widths, width)):
            if k:
                out.append("")
            columns = [0, 1, *group]
            for j, line in enumerate(lines):
                cells = [line[0].ljust(widths[0])] + [line[i].rjust(widths[i])
                                                      for i in columns[1:]]
                out.append("  ".join(cells).rstrip())
                if j == 0:
                    out.append("  ".join("-" * widths[i] for i in columns))
        out.append("")
    return "\n".join(out)


def write_comparison(results: Results, metrics: Sequence[str], path: Path) -> None:
    """``comparison.csv``: trace, profile, metric, n, mean, std, min, max."""
    table = compare(results, metrics)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["trace", "profile", "metric", "n", "mean", "std", "min", "max"])
        for (trace, profile), cell in table.items():
            for metric in metrics:
                stat = cell[metric]
                if stat is not None:
                    out.writerow([trace, profile, metric, stat.n, repr(stat.mean),
                                  repr(stat.std), repr(stat.min), repr(stat.max)])


def _sweep_run(path: Path) -> bool:
    """Is ``path`` a sweep's run folder (its run.json has a run id), not a ``simulate`` one?"""
    try:
        meta = json.loads((path / "run.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and "run_id" in meta


def report_command(directory: str, *, plots: bool = False, metrics: Iterable[str] = (),
                   gantt: str | None = None, gantt_leases: int | None = 200,
                   gantt_hours: float | None = None, seed: int | None = None,
                   colour_by: str = "auto", time_plot: str = "panels",
                   states_run: str | None = None,
                   states_window: tuple[float, float] | None = None, html: bool = False,
                   html_out: str | None = None) -> int:
    """Rebuild the result table of ``directory``, print the comparison, draw the plots;
    with ``html``, write the page of :mod:`lease_manager.web.report_pages` too."""
    path = Path(directory)
    if not path.is_dir():
        raise LeaseManagerError(f"{directory}: " + ("is a file, not a sweep's or a run's folder"
                                                    if path.exists() else "no such directory"))
    if plots:
        from lease_manager.experiments.plots import require_matplotlib

        require_matplotlib()
    if (path / "summary.json").is_file() and (path / "leases.csv").is_file() \
            and not _sweep_run(path):
        code = _report_one_run(path, plots=plots, gantt_leases=gantt_leases,
                               gantt_hours=gantt_hours, colour_by=colour_by,
                               time_plot=time_plot, states_window=states_window)
        if html:
            from lease_manager.web.report_pages import write_run_report

            page = write_run_report(path, Path(html_out) if html_out else None,
                                    gantt_hours=gantt_hours, states_window=states_window)
            print(f"page: {page}")
        return code
    results = collect(path)
    if not results.rows:   # nothing to tabulate: write no empty result files either
        if html:   # say which file a run's folder lacks
            missing = [name for name in ("summary.json", "leases.csv")
                       if not (path / name).is_file()]
            raise LeaseManagerError(f"{path / missing[0]}: no such file (a run's folder has "
                                    "summary.json and leases.csv; a sweep's has run folders)")
        raise LeaseManagerError(f"{directory}: no finished or failed runs found (a run folder "
                                "has run.json and summary.json or error.txt)")
    results = with_nm(results, path)
    metrics = list(metrics) or default_metrics(results)
    unknown = [m for m in metrics if m not in results.summary_columns]
    if unknown:
        raise LeaseManagerError(f"--metric {unknown[0]}: no run's summary has this field")
    write_tables(results, path)
    done = len(results.done())
    print(f"{len(results.rows)} runs in {path}/ ({done} done, {len(results.rows) - done} "
          f"failed): {_plural(len(results.profiles), 'profile')}, "
          f"{_plural(len(results.traces), 'trace')}, {_plural(len(results.seeds), 'seed')}")
    print()
    width = max(80, shutil.get_terminal_size((120, 24)).columns)
    print(format_tables(results, metrics, width), end="")
    write_comparison(results, metrics, path / "comparison.csv")
    written = [path / "results.csv", path / "results.sqlite", path / "comparison.csv"]
    if plots:
        from lease_manager.experiments.plots import make_plots

        pngs, notes, line = make_plots(results, path, gantt_run=gantt,
                                       gantt_leases=gantt_leases, gantt_hours=gantt_hours,
                                       seed=seed, colour_by=colour_by, time_plot=time_plot,
                                       states_run=states_run, states_window=states_window)
        for note in notes:
            print(f"note: {note}")
        written += pngs
        print(line)
    if html:
        from lease_manager.web.report_pages import write_run_report, write_sweep_report

        out = Path(html_out) if html_out else None
        if [r["run_id"] for r in results.rows] == ["."] and results.rows[0]["status"] == "done":
            # one run of a sweep (the page a sweep's page links to): the run's own page
            page = write_run_report(path, out, gantt_hours=gantt_hours,
                                    states_window=states_window)
        else:
            page = write_sweep_report(path, results, metrics, out, gantt_run=gantt,
                                      gantt_hours=gantt_hours, seed=seed,
                                      states_run=states_run, states_window=states_window)
        print(f"page: {page}")
    print("written: " + ", ".join(p.name for p in written[:3])
          + (f" and {len(written) - 3} plots" if len(written) > 3 else ""))
    return 0


def _report_one_run(path: Path, *, plots: bool, gantt_leases: int | None,
                    gantt_hours: float | None, colour_by: str, time_plot: str,
                    states_window: tuple[float, float] | None) -> int:
    """``report`` on one ``simulate`` output folder: its summary, and with ``plots`` its
    figures in ``path/plots``."""
    try:
        summary = json.loads((path / "summary.json").read_text())
    except ValueError as err:
        raise LeaseManagerError(f"{path / 'summary.json'}: not JSON ({err})") from None
    if not isinstance(summary, dict):
        raise LeaseManagerError(f"{path / 'summary.json'}: expected a JSON object")
    print(f"one run in {path}/:")
    for key, value in summary.items():
        if isinstance(value, int) and not isinstance(value, bool):
            print(f"  {key:<28} {value:,}")
        elif isinstance(value, float):
            print(f"  {key:<28} {fmt(value)}")
    if plots:
        from lease_manager.experiments.plots import make_run_plots

        _, line = make_run_plots(path, gantt_leases=gantt_leases, gantt_hours=gantt_hours,
                                 colour_by=colour_by, time_plot=time_plot,
                                 states_window=states_window)
        print(line)
    return 0
