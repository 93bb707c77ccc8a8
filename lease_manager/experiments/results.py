"""The result table of a sweep: one row per run, from the run folders under a directory.

Every run folder has ``run.json`` (written first by
:func:`lease_manager.experiments.sweep.execute_run`) and either ``summary.json`` (done) or
``error.txt`` (failed). :func:`collect` scans them all, so the table can be rebuilt at any time
from the folders alone; :func:`write_results` writes it as ``results.csv`` and as the table
``runs`` of ``results.sqlite``.

Columns: ``run_id, profile, trace, seed, status``, every setting of the sweep file
(``scheduling.backfilling``, ...), ``trace_path``, then the summary's fields flattened with dots
(``trace.jobs_read``, ``simulation.cpu_seconds``; lists are JSON-encoded), then ``error``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

META_COLUMNS = ("run_id", "profile", "trace", "seed", "status")
#: columns that measure the machine, not the schedule: they differ between identical runs
TIMING_COLUMNS = ("simulation.wall_seconds", "simulation.cpu_seconds", "simulation.peak_rss_mb")
RESULTS_CSV = "results.csv"
RESULTS_SQLITE = "results.sqlite"
TABLE = "runs"

Value = Any   # int | float | str | None


@attrs.frozen
class Results:
    """The rows of a result table and what their columns are."""

    columns: tuple[str, ...]
    rows: tuple[dict[str, Value], ...]
    setting_columns: tuple[str, ...]
    summary_columns: tuple[str, ...]
    profiles: tuple[str, ...]                 #: in sweep order
    traces: tuple[str, ...]
    seeds: tuple[int, ...]

    def done(self) -> list[dict[str, Value]]:
        return [row for row in self.rows if row["status"] == "done"]


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Value]:
    """``{"a": {"b": 1}, "c": [1]}`` -> ``{"a.b": 1, "c": "[1]"}``."""
    out: dict[str, Value] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, bool):
            out[name] = int(value)
        elif value is None or isinstance(value, (int, float, str)):
            out[name] = value
        else:
            out[name] = json.dumps(value, sort_keys=True)
    return out


def _run_order(directory: Path) -> tuple[list[str], dict[str, list]]:
    plan_path = directory / "sweep.json"
    try:
        plan = json.loads(plan_path.read_text())
    except (OSError, ValueError):
        return [], {}
    return list(plan.get("runs", [])), plan


# Longer than ~50 lines on purpose: one loop over run folders; each branch is a folder state (done,
# unreadable, failed, pending).
def collect(directory: str | Path) -> Results:
    """Every run folder under ``directory`` (done or failed), in the sweep's order."""
    directory = Path(directory)
    order, plan = _run_order(directory)
    rank = {run_id: i for i, run_id in enumerate(order)}
    found: list[tuple[dict[str, Any], dict[str, Any], str, str | None]] = []
    error: str | None
    for meta_path in directory.rglob("run.json"):
        run_dir = meta_path.parent
        if run_dir.name == ".partial":
            continue
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(meta, dict) or "run_id" not in meta:
            continue   # not a sweep's run (a ``simulate`` folder's run.json)
        summary_path = run_dir / "summary.json"
        error_path = run_dir / "error.txt"
        if summary_path.is_file():
            try:
                summary = json.loads(summary_path.read_text())
            except (OSError, ValueError) as exc:
                summary, status, error = {}, "failed", f"unreadable summary.json: {exc}"
            else:
                status, error = "done", None
        elif error_path.is_file():
            summary, status = {}, "failed"
            lines = error_path.read_text().strip().splitlines()
            error = lines[0] if lines else "failed"
        else:
            continue   # not run yet, or interrupted
        found.append((meta, summary, status, error))
    found.sort(key=lambda f: (rank.get(f[0]["run_id"], len(rank)), f[0]["profile"],
                              f[0]["trace"], f[0]["seed"]))

    settings: dict[str, None] = {}
    summary_cols: dict[str, None] = {}
    rows = []
    for meta, summary, status, error in found:
        row: dict[str, Value] = {"run_id": meta["run_id"], "profile": meta["profile"],
                                 "trace": meta["trace"], "seed": meta["seed"], "status": status}
        for key, value in meta.get("settings", {}).items():
            settings.setdefault(key)
            row[key] = value
        row["trace_path"] = meta.get("trace_path")
        for key, value in flatten(summary).items():
            if key in row or key in settings:   # a summary field named like a setting
                key = f"summary.{key}"
            summary_cols.setdefault(key)
            row[key] = value
        row["error"] = error
        rows.append(row)
    columns = (*META_COLUMNS, *settings, "trace_path", *summary_cols, "error")
    rows = [{c: row.get(c) for c in columns} for row in rows]

    def ordered(key: str, planned: Iterable) -> tuple:
        return tuple(dict.fromkeys([*planned, *(row[key] for row in rows)]))

    return Results(columns=columns, rows=tuple(rows), setting_columns=tuple(settings),
                   summary_columns=tuple(summary_cols),
                   profiles=ordered("profile", [p for p in plan.get("profiles", [])
                                                if any(r["profile"] == p for r in rows)]),
                   traces=ordered("trace", [t for t in plan.get("traces", [])
                                            if any(r["trace"] == t for r in rows)]),
                   seeds=ordered("seed", [s for s in plan.get("seeds", [])
                                          if any(r["seed"] == s for r in rows)]))


def _csv_value(value: Value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def write_csv(results: Results, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(results.columns)
        for row in results.rows:
            out.writerow([_csv_value(row[c]) for c in results.columns])
    os.replace(tmp, path)


def _sql_type(values: list[Value]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, int) for v in present):
        return "INTEGER"
    if present and all(isinstance(v, (int, float)) for v in present):
        return "REAL"
    return "TEXT"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def write_sqlite(results: Results, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    try:
        cols = ", ".join(f"{_quote(c)} {_sql_type([r[c] for r in results.rows])}"
                         + (" PRIMARY KEY" if c == "run_id" else "")
                         for c in results.columns)
        con.execute(f"CREATE TABLE {TABLE} ({cols})")
        marks = ", ".join("?" for _ in results.columns)
        con.executemany(f"INSERT INTO {TABLE} VALUES ({marks})",
                        [[r[c] for c in results.columns] for r in results.rows])
        con.commit()
    finally:
        con.close()
    os.replace(tmp, path)


def write_results(directory: str | Path) -> Results:
    """Collect the run folders under ``directory`` into ``results.csv`` and ``results.sqlite``."""
    directory = Path(directory)
    results = collect(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_csv(results, directory / RESULTS_CSV)
    write_sqlite(results, directory / RESULTS_SQLITE)
    return results
