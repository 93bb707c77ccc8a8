"""The result table of a sweep: one row per run, from the run folders under a directory.

Every run folder has ``run.json`` (written first by
:func:`lease_manager.experiments.sweep.execute_run`) and either ``summary.json`` (done) or
``error.txt`` (failed). :func:`collect` scans them all, so the table can be rebuilt at any time
from the folders alone; :func:`write_results` writes it as ``results.csv`` and as the table
``runs`` of ``results.sqlite``.

A run's ``run_id`` is its folder relative to the directory collected, so it is unique there
and ``directory / run_id`` is the folder: for a sweep's own folder that is the sweep's
``PROFILE/TRACE/seed-N``. A directory that holds several sweeps (two copies of one sweep, or
``results/`` with a sweep in each subfolder) gives ids such as ``copy-1/PROFILE/TRACE/seed-N``,
and each profile is then named after its sweep's folder too (``copy-1/PROFILE``), so that the
sweeps' runs are compared side by side, not pooled.

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
from pathlib import Path
from typing import Any

import attrs

from lease_manager.errors import LeaseManagerError

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
    if not isinstance(plan, dict):
        return [], {}
    return list(plan.get("runs", [])), plan


def _sweep_root(rel: str, sweep_id: str) -> str:
    """The folder (relative, ``""`` for the collected directory itself) of the sweep that a
    run folder at ``rel`` belongs to, its sweep's run id being ``sweep_id``."""
    if rel.endswith("/" + sweep_id):
        return rel[:-len(sweep_id) - 1]
    return ""   # the run folder is where its sweep put it, or the directory is inside a sweep


# Longer than ~50 lines on purpose: one loop over run folders; each branch is a folder state (done,
# unreadable, failed, pending).
def _finished_run(meta_path: Path) -> tuple[dict[str, Any], dict[str, Any], str, str | None,
                                             Path] | None:
    """A sweep's run folder (of ``meta_path``, its run.json) that is done or failed: (meta,
    summary, status, error, folder); None for a run not run yet or interrupted, or a folder
    that is not a sweep's run."""
    run_dir = meta_path.parent
    if run_dir.name == ".partial":
        return None
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or "run_id" not in meta:
        return None   # not a sweep's run (a ``simulate`` folder's run.json)
    summary_path = run_dir / "summary.json"
    error_path = run_dir / "error.txt"
    error: str | None
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
        return None   # not run yet, or interrupted
    return meta, summary, status, error, run_dir


def collect(directory: str | Path) -> Results:
    """Every run folder under ``directory`` (done or failed), in the sweep's order."""
    directory = Path(directory)
    # (sweep root, meta, summary, status, error, run id)
    found: list[tuple[str, dict[str, Any], dict[str, Any], str, str | None, str]] = []
    for meta_path in sorted(directory.rglob("run.json")):
        run = _finished_run(meta_path)
        if run is not None:
            meta, summary, status, error, run_dir = run
            rel = run_dir.relative_to(directory).as_posix()
            found.append((_sweep_root(rel, str(meta["run_id"])), meta, summary, status, error,
                          rel))

    roots = sorted({f[0] for f in found})
    plans = {root: _run_order(directory / root) for root in roots}
    ranks = {root: {run_id: i for i, run_id in enumerate(order)}
             for root, (order, _) in plans.items()}
    several = len(roots) > 1

    def profile_of(root: str, profile: str) -> str:
        return f"{root}/{profile}" if several and root else profile

    found.sort(key=lambda f: (roots.index(f[0]),
                              ranks[f[0]].get(f[1]["run_id"], len(ranks[f[0]])),
                              f[1]["profile"], f[1]["trace"], f[1]["seed"], f[5]))

    settings: dict[str, None] = {}
    summary_cols: dict[str, None] = {}
    rows = []
    for root, meta, summary, status, error, rel in found:
        row: dict[str, Value] = {"run_id": rel, "profile": profile_of(root, meta["profile"]),
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

    def planned(key: str) -> list:
        return [profile_of(root, item) if key == "profiles" else item
                for root in roots for item in plans[root][1].get(key, [])]

    def ordered(key: str, column: str) -> tuple:
        present = {row[column] for row in rows}
        return tuple(dict.fromkeys([*(v for v in planned(key) if v in present),
                                    *(row[column] for row in rows)]))

    return Results(columns=columns, rows=tuple(rows), setting_columns=tuple(settings),
                   summary_columns=tuple(summary_cols),
                   profiles=ordered("profiles", "profile"), traces=ordered("traces", "trace"),
                   seeds=ordered("seeds", "seed"))


def _csv_value(value: Value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def write_csv(results: Results, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", newline="") as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(results.columns)
            for row in results.rows:
                out.writerow([_csv_value(row[c]) for c in results.columns])
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


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
    """``results`` as the table ``runs`` of ``path``; a run id that is not unique, or a table
    SQLite refuses, is a :class:`LeaseManagerError` and leaves no file behind."""
    seen: dict[Value, None] = {}
    for row in results.rows:
        if row["run_id"] in seen:
            raise LeaseManagerError(f"{path}: two runs have the id {row['run_id']!r}")
        seen[row["run_id"]] = None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
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
    except sqlite3.Error as exc:
        raise LeaseManagerError(f"{path}: cannot write the result table: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_tables(results: Results, directory: Path) -> None:
    """``results.sqlite`` (the one that can be refused), then ``results.csv``."""
    write_sqlite(results, directory / RESULTS_SQLITE)
    write_csv(results, directory / RESULTS_CSV)


def write_results(directory: str | Path) -> Results:
    """Collect the run folders under ``directory`` into ``results.csv`` and ``results.sqlite``."""
    directory = Path(directory)
    results = collect(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_tables(results, directory)
    return results
