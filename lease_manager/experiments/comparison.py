"""The comparison of a sweep's profiles over its seeds: per trace and profile, each metric's
mean, standard deviation, minimum and maximum, as tables (``lease-manager report``) and as
``comparison.csv``."""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from lease_manager.experiments.results import Results


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
