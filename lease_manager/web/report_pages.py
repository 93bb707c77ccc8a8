"""The two pages of ``report DIR --html``: one run's and a sweep's (:mod:`.report_html`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lease_manager.errors import LeaseManagerError
from lease_manager.web import figures
from lease_manager.web.report_html import (
    figures_section,
    gantt_section,
    lease_table,
    page,
    read_json,
    read_lease_rows,
    settings_section,
    summary_table,
    table_holder,
    table_spec,
)

REPORT_HTML = "report.html"


def _gantt(run_dir: Path, rows: list[dict[str, str]], *, hours: float | None,
           title: str) -> tuple[dict[str, Any], str]:
    """The page data of a run's Gantt chart and its section."""
    from lease_manager.web.gantt_plan import compact, plan_from_leases

    plan = plan_from_leases(rows, run_dir=run_dir, max_hours=hours)
    ran = sum(1 for r in rows if (r.get("start") or "") and (r.get("nodes") or "").split())
    shown = len({bar["lease"] for bar in plan["bars"]})
    return ({"plan": compact(plan), "title": title},
            gantt_section(shown, ran))


def _run_figures(run_dir: Path, name: str, rows: list[dict[str, str]],
                 states_window: tuple[float, float] | None = None
                 ) -> list[tuple[str, dict[str, Any]]]:
    """One run's figures, those of ``report RUN --plots`` (make_run_plots), in its order."""
    from lease_manager.experiments.gantt import number
    from lease_manager.experiments.plots import bounded_slowdowns

    runs = {name: run_dir}
    out: list[tuple[str, dict[str, Any] | None]] = [
        ("fig-usage", figures.usage(runs, title=f"utilisation and queue length: {name}")),
        ("fig-waits", figures.waits({name: [v for r in rows
                                            if (v := number(r.get("wait"))) is not None]},
                                    title=f"wait-time distribution: {name}")),
        ("fig-slowdowns", figures.slowdowns({name: bounded_slowdowns(rows)},
                                            title=f"bounded-slowdown distribution: {name}")),
        ("fig-power", figures.power(runs, title=f"site power: {name}")),
        ("fig-node-states", figures.node_states(run_dir, title=f"node power states: {name}",
                                                window=states_window)),
    ]
    for series_name in figures.series_names(runs):
        out.append((f"fig-series-{_slug(series_name)}",
                    figures.series(series_name, runs, title=f"{series_name}: {name}")))
    return [(fid, fig) for fid, fig in out if fig is not None]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")


def run_page(run_dir: Path, *, gantt_hours: float | None = None,
             states_window: tuple[float, float] | None = None) -> str:
    """The page of one run's folder."""
    summary = read_json(run_dir / "summary.json")
    rows = read_lease_rows(run_dir)
    meta = read_json(run_dir / "run.json") if (run_dir / "run.json").is_file() else {}
    name = run_dir.resolve().name
    gantt_data, gantt_html = _gantt(run_dir, rows, hours=gantt_hours, title=f"Gantt: {name}")
    figs = _run_figures(run_dir, name, rows, states_window)
    leases = lease_table(rows)
    sections = [
        ("summary", "Summary", "<p class='lm-note'>summary.json</p>" + summary_table(summary)),
        ("settings", "Settings", "<p class='lm-note'>run.json: how to make this run "
                                 "again</p>" + (settings_section(meta) if meta else
                                                "<p>no run.json in this folder</p>")),
        ("gantt", "Gantt chart", gantt_html),
        ("plots", "Plots", figures_section(figs)),
        ("leases", "Leases", "<p class='lm-note'>leases.csv, one row a lease; click a "
                             "column's name to sort by it</p>" + table_holder("leases",
                                                                              "leases")),
    ]
    subtitle = f"{len(rows):,} leases; lease-manager report {run_dir} --html"
    return page(f"{name}: one run", subtitle, sections,
                {"figures": [{"id": fid, "figure": fig} for fid, fig in figs],
                 "gantt": gantt_data, "tables": [leases]})


def _metric_label(metric: str) -> str:
    from lease_manager.experiments.comparison import UNITS

    return f"{metric} ({UNITS[metric]})" if metric in UNITS else metric


def sweep_page(directory: Path, results: Any, metrics: list[str], *,
               gantt_run: str | None = None, gantt_hours: float | None = None,
               seed: int | None = None, states_run: str | None = None,
               states_window: tuple[float, float] | None = None) -> str:
    """The page of a sweep's folder: the comparison, the sweep's figures, one run's Gantt
    chart and the table of runs."""
    done = results.done()
    seeds = sorted({r["seed"] for r in done})
    if seed is not None and seed not in seeds:
        raise LeaseManagerError(f"--seed {seed}: no finished run has this seed "
                                f"(seeds: {', '.join(map(str, seeds))})")
    comparison_html, figs, tables = _comparison(results, metrics)
    plot_parts, trace_figs = _trace_plots(directory, results, done, seed)
    figs += trace_figs
    if done:   # the node states of the run the PNG report picks (the most switch-ons)
        from lease_manager.experiments.plots import _states_run

        states_id, why = _states_run(done, states_run, seed)
        states = figures.node_states(directory / states_id, window=states_window,
                                     title=f"node power states: {states_id} ({why})")
        if states is not None:
            figs.append(("fig-node-states", states))
            plot_parts.append("<h3>node power states</h3>"
                              + figures_section([("fig-node-states", states)]))
    sections = [("comparison", "Comparison", comparison_html),
                ("plots", "Plots", "".join(plot_parts))]
    data: dict[str, Any] = {}
    if done:
        data["gantt"], gantt = _sweep_gantt(directory, done, gantt_run, gantt_hours)
        sections.insert(1, gantt)
    run_columns = ["run_id", "profile", "trace", "seed", "status"] + metrics
    run_rows = [[r.get(c) for c in run_columns] for r in results.rows]
    tables.append(table_spec("runs", run_columns, run_rows,
                             [c == "seed" or c in metrics for c in run_columns],
                             links=["{}/report.html"] + [None] * (len(run_columns) - 1)))
    sections.append(("runs", "Runs", "<p class='lm-note'>results.csv, one row a run; a "
                     "run's id links to its own page, written by <code>lease-manager report "
                     f"{directory}/RUN_ID --html</code></p>" + table_holder("runs", "runs")))
    data["figures"] = [{"id": fid, "figure": fig} for fid, fig in figs]
    data["tables"] = tables
    done_n = len(done)
    subtitle = (f"{len(results.rows)} runs ({done_n} done, {len(results.rows) - done_n} "
                f"failed): {len(results.profiles)} profiles, {len(results.traces)} traces, "
                f"{len(results.seeds)} seeds; lease-manager report {directory} --html")
    return page(f"{directory.resolve().name}: a sweep", subtitle, sections, data)


def _comparison(results: Any, metrics: list[str]) -> tuple[str, list[tuple[str, dict[str, Any]]],
                                                           list[Any]]:
    """The comparison section: per trace, the table of profiles and its chart (the HTML,
    the charts and the tables' data)."""
    from lease_manager.experiments.comparison import compare

    table = compare(results, metrics)
    parts: list[str] = []
    figs: list[tuple[str, dict[str, Any]]] = []
    tables = []
    for t, trace in enumerate(results.traces):
        profiles = [p for p in results.profiles if (trace, p) in table]
        if not profiles:
            continue
        seeds = sorted({r["seed"] for r in results.rows if r["trace"] == trace})
        columns = ["profile", "runs", "failed"] + [
            label for m in metrics for label in (_metric_label(m), f"± {m}")]
        rows = []
        for profile in profiles:
            cell = table[(trace, profile)]
            row: list[Any] = [profile, cell["runs"], cell["failed"]]
            for m in metrics:
                stat = cell[m]
                row += [stat.mean, stat.std] if stat is not None else [None, None]
            rows.append(row)
        tid = f"comparison-{t}"
        tables.append(table_spec(tid, columns, rows, [c != "profile" for c in columns]))
        parts.append(f"<h3>trace {trace}: {len(profiles)} profiles x {len(seeds)} seeds "
                     "(mean and standard deviation over the seeds)</h3>"
                     + table_holder(tid, "profiles"))
        fig = figures.comparison({p: {m: table[(trace, p)][m] for m in metrics}
                                  for p in profiles}, metrics,
                                 title=f"{trace}: mean over the seeds, ± one standard deviation")
        figs.append((f"fig-comparison-{t}", fig))
        parts.append(f"<div class='lm-chart' id='fig-comparison-{t}'></div>")
    return "".join(parts), figs, tables


def _trace_plots(directory: Path, results: Any, done: list[dict[str, Any]], seed: int | None
                 ) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    """Each trace's figures (those of ``report --plots``, without its Gantt chart): the
    HTML parts and the figures."""
    from lease_manager.experiments.gantt import number
    from lease_manager.experiments.plots import bounded_slowdowns, runs_at_one_seed

    plot_parts = []
    figs: list[tuple[str, dict[str, Any]]] = []
    for t, trace in enumerate(results.traces):
        one_seed = runs_at_one_seed(results, done, directory, trace, seed)
        if one_seed is None:
            continue
        runs, trace_seed = one_seed
        trace_rows = [r for r in done if r["trace"] == trace]
        label = f"{trace}, seed {trace_seed}"
        waits: dict[str, list[float]] = {}
        slowed: dict[str, list[float]] = {}
        for r in trace_rows:
            leases = read_lease_rows(directory / r["run_id"])
            waits.setdefault(r["profile"], []).extend(
                v for x in leases if (v := number(x.get("wait"))) is not None)
            slowed.setdefault(r["profile"], []).extend(bounded_slowdowns(leases))
        trace_figs: list[tuple[str, dict[str, Any] | None]] = [
            (f"fig-usage-{t}", figures.usage(runs, title=f"utilisation and queue length: "
                                                         f"{label}")),
            (f"fig-waits-{t}", figures.waits({p: waits[p] for p in results.profiles
                                              if p in waits},
                                             title=f"wait-time distribution: {trace} (all "
                                                   "seeds)")),
            (f"fig-slowdowns-{t}", figures.slowdowns(
                {p: slowed[p] for p in results.profiles if p in slowed},
                title=f"bounded-slowdown distribution: {trace} (all seeds)")),
            (f"fig-power-{t}", figures.power(runs, title=f"site power: {label}")),
        ]
        for name in figures.series_names(runs):
            trace_figs.append((f"fig-series-{_slug(name)}-{t}",
                               figures.series(name, runs, title=f"{name}: {label}")))
        drawn = [(fid, fig) for fid, fig in trace_figs if fig is not None]
        figs += drawn
        plot_parts.append(f"<h3>trace {trace}</h3>" + figures_section(drawn))
    return plot_parts, figs


def _sweep_gantt(directory: Path, done: list[dict[str, Any]], gantt_run: str | None,
                 gantt_hours: float | None) -> tuple[dict[str, Any], tuple[str, str, str]]:
    """The Gantt chart of one finished run of the sweep (``--gantt``, else the first): its
    page data and its section."""
    run_ids = [r["run_id"] for r in done]
    if gantt_run is not None and gantt_run not in run_ids:
        raise LeaseManagerError(f"--gantt {gantt_run}: no finished run with this id "
                                f"(e.g. {run_ids[0]})")
    gantt_id = gantt_run or run_ids[0]
    run_dir = directory / gantt_id
    data, gantt_html = _gantt(run_dir, read_lease_rows(run_dir), hours=gantt_hours,
                              title=f"Gantt: {gantt_id}")
    return data, ("gantt", f"Gantt chart of {gantt_id}",
                  "<p class='lm-note'>one run of the sweep (--gantt RUN_ID for another)</p>"
                  + gantt_html)


def write_page(text: str, out: Path) -> Path:
    """Write the page, or say in one line why it cannot be written."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as err:
        raise LeaseManagerError(f"{out}: cannot write the page ({err.strerror})") from None
    return out


def write_run_report(run_dir: Path, out: Path | None = None, **options: Any) -> Path:
    """Write one run's page (default ``run_dir/report.html``)."""
    return write_page(run_page(run_dir, **options), out or run_dir / REPORT_HTML)


def write_sweep_report(directory: Path, results: Any, metrics: list[str],
                       out: Path | None = None, **options: Any) -> Path:
    """Write a sweep's page (default ``directory/report.html``)."""
    return write_page(sweep_page(directory, results, metrics, **options),
                      out or directory / REPORT_HTML)
