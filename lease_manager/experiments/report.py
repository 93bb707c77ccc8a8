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

import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.comparison import (
    CORE_FIELDS,
    CORE_METRICS,
    UNITS,
    Stat,
    _plural,
    compare,
    default_metrics,
    fmt,
    format_tables,
    write_comparison,
)
from lease_manager.experiments.relative import with_nm
from lease_manager.experiments.results import Results, collect, write_tables

#: the comparison's tables live in :mod:`lease_manager.experiments.comparison`; their names
#: stay importable from here
__all__ = ["CORE_FIELDS", "CORE_METRICS", "UNITS", "Stat", "compare", "default_metrics", "fmt",
           "format_tables", "report_command", "write_comparison"]


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
    results, chosen = _sweep_results(path, directory, metrics, html)
    written = _print_comparison(results, chosen, path)
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
        page = _sweep_page(path, results, chosen, Path(html_out) if html_out else None,
                           gantt=gantt, gantt_hours=gantt_hours, seed=seed,
                           states_run=states_run, states_window=states_window)
        print(f"page: {page}")
    print("written: " + ", ".join(p.name for p in written[:3])
          + (f" and {len(written) - 3} plots" if len(written) > 3 else ""))
    return 0


def _sweep_results(path: Path, directory: str, metrics: Iterable[str],
                   html: bool) -> tuple[Results, list[str]]:
    """The sweep's result table (with NM) and the metrics to compare (``metrics``, else the
    default ones), checked."""
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
    chosen = list(metrics) or default_metrics(results)
    unknown = [m for m in chosen if m not in results.summary_columns]
    if unknown:
        raise LeaseManagerError(f"--metric {unknown[0]}: no run's summary has this field")
    return results, chosen


def _print_comparison(results: Results, metrics: Sequence[str], path: Path) -> list[Path]:
    """Write the result tables and ``comparison.csv``, print the comparison; returns the
    files written."""
    write_tables(results, path)
    done = len(results.done())
    print(f"{len(results.rows)} runs in {path}/ ({done} done, {len(results.rows) - done} "
          f"failed): {_plural(len(results.profiles), 'profile')}, "
          f"{_plural(len(results.traces), 'trace')}, {_plural(len(results.seeds), 'seed')}")
    print()
    width = max(80, shutil.get_terminal_size((120, 24)).columns)
    print(format_tables(results, metrics, width), end="")
    write_comparison(results, metrics, path / "comparison.csv")
    return [path / "results.csv", path / "results.sqlite", path / "comparison.csv"]


def _sweep_page(path: Path, results: Results, metrics: Sequence[str], out: Path | None, *,
                gantt: str | None, gantt_hours: float | None, seed: int | None,
                states_run: str | None, states_window: tuple[float, float] | None) -> Path:
    """The sweep's HTML page (or, for one run of a sweep, the run's own page)."""
    from lease_manager.web.report_pages import write_run_report, write_sweep_report

    if [r["run_id"] for r in results.rows] == ["."] and results.rows[0]["status"] == "done":
        # one run of a sweep (the page a sweep's page links to): the run's own page
        return write_run_report(path, out, gantt_hours=gantt_hours, states_window=states_window)
    return write_sweep_report(path, results, list(metrics), out, gantt_run=gantt,
                              gantt_hours=gantt_hours, seed=seed, states_run=states_run,
                              states_window=states_window)


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
