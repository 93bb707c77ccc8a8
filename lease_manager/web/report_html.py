"""``lease-manager report DIR --html``: one self-contained HTML page of a run or a sweep.

The page holds everything it shows: Plotly's JavaScript (from the ``plotly`` package, once),
the Gantt drawer (``static/gantt.js``), the page's script (``static/report.js``) and the data
as JSON, so that it opens from disk with no network and can be mailed.

- One run (``simulate --out``'s folder): its summary (``summary.json``), its settings
  (``run.json``), its Gantt chart, the figures of ``report --plots`` as interactive charts
  (:mod:`lease_manager.web.figures`) and its leases (``leases.csv``) as a table that sorts and
  filters.
- A sweep's folder: the comparison of its profiles (the table ``report`` prints, and a chart a
  metric), the sweep's figures (per trace, for one seed), the Gantt chart of one run and the
  table of its runs.
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.gantt import number

#: leases.csv's columns that the page needs
LEASE_COLUMNS = ("lease_id", "type", "state", "submit", "start", "end", "wait", "nodes")
#: leases.csv's columns that hold numbers (sorted as numbers)
NUMERIC = frozenset({"lease_id", "source_id", "submit", "start", "end", "vms", "requested",
                     "actual", "wait", "price"})


def _static(name: str) -> str:
    from importlib import resources

    return resources.files("lease_manager.web").joinpath("static", name).read_text(
        encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element (no "</" to end it early)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``, or a one-line error naming the file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise LeaseManagerError(f"{path}: no such file") from None
    except OSError as err:
        raise LeaseManagerError(f"{path}: cannot read it ({err.strerror})") from None
    except ValueError as err:
        raise LeaseManagerError(f"{path}: not JSON ({err})") from None
    if not isinstance(data, dict):
        raise LeaseManagerError(f"{path}: expected a JSON object, not {type(data).__name__}")
    return data


def read_lease_rows(run_dir: Path) -> list[dict[str, str]]:
    """``leases.csv``'s rows, or a one-line error naming the file (and the line and field)."""
    path = Path(run_dir) / "leases.csv"
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in LEASE_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise LeaseManagerError(f"{path}: line 1: no column {missing[0]!r} (is it a "
                                        "leases.csv written by simulate?)")
            rows = list(reader)
    except FileNotFoundError:
        raise LeaseManagerError(f"{path}: no such file (a run's folder has leases.csv, "
                                "summary.json and run.json)") from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise LeaseManagerError(f"{path}: cannot read it ({err})") from None
    for line, row in enumerate(rows, start=2):
        for field in ("nodes",):
            if not all(n.isdigit() for n in (row.get(field) or "").split()):
                raise LeaseManagerError(f"{path}: line {line}: field {field}: expected node "
                                        f"numbers, not {row.get(field)!r}")
        if not (row.get("lease_id") or "").strip():
            raise LeaseManagerError(f"{path}: line {line}: field lease_id is empty")
    return rows


# ------------------------------------------------------------------------------- the page
def _fmt(value: float) -> str:
    from lease_manager.experiments.comparison import fmt

    return fmt(value)


def _value_cell(value: Any) -> str:
    """A summary value: the number formatted, the exact JSON value in ``data-value``."""
    exact = html.escape(json.dumps(value), quote=True)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = value if isinstance(value, str) else json.dumps(value)
        return f"<span class='v' data-value='{exact}'>{html.escape(str(text))}</span>"
    shown = f"{value:,}" if isinstance(value, int) else (
        _fmt(value) if math.isfinite(value) else str(value))
    return f"<span class='v num' data-value='{exact}'>{shown}</span>"


def summary_table(summary: Mapping[str, Any]) -> str:
    """``summary.json`` as a two-column table, nested fields as ``a.b``."""
    from lease_manager.experiments.results import flatten

    rows = []
    for key, value in flatten(dict(summary)).items():
        rows.append(f"<div class='lm-kv' data-key='{html.escape(key, quote=True)}'><span>"
                    f"{html.escape(key)}</span>{_value_cell(value)}</div>")
    return "<div class='lm-summary'>" + "".join(rows) + "</div>"


def settings_section(meta: Mapping[str, Any]) -> str:
    """``run.json``: how the run was made (command, configuration file, overrides, trace,
    seed, plugins), then every effective setting, a folding table a section."""
    facts = []
    for key, label in (("command", "command"), ("config", "configuration file"),
                       ("overrides", "overrides (--set)"), ("trace", "trace"),
                       ("seed", "seed"), ("placement", "placement"), ("run_id", "run"),
                       ("lease_manager", "lease-manager version"), ("plugins", "plugins")):
        if key in meta and meta[key] not in (None, "", [], {}):
            value = meta[key]
            if isinstance(value, dict):
                text = ", ".join(f"{k} {v}" for k, v in value.items())
            elif isinstance(value, list):
                text = "; ".join(map(str, value))
            else:
                text = str(value)
            facts.append(f"<tr><th>{html.escape(label)}</th><td><code>{html.escape(text)}"
                         "</code></td></tr>")
    parts = ["<table class='lm-facts'><tbody>" + "".join(facts) + "</tbody></table>"]
    effective = meta.get("effective") or meta.get("settings")
    if isinstance(effective, dict):
        flat_sections: dict[str, dict[str, Any]] = {}
        for key, value in effective.items():
            if isinstance(value, dict):
                flat_sections[key] = value
            else:   # a sweep's run.json: "section.option": value
                section, _, option = str(key).partition(".")
                flat_sections.setdefault(section if option else "", {})[option or section] = value
        for section, options in flat_sections.items():
            rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td><code>"
                           f"{html.escape(json.dumps(v) if not isinstance(v, str) else v)}"
                           "</code></td></tr>" for k, v in options.items())
            parts.append(f"<details><summary>[{html.escape(section)}] ({len(options)} "
                         f"options)</summary><table class='lm-facts'><tbody>{rows}</tbody>"
                         "</table></details>")
    return "".join(parts)


def table_spec(table_id: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
               numeric: Sequence[bool], links: Sequence[str | None] | None = None
               ) -> dict[str, Any]:
    """A table for ``report.js``: sortable by any column, filterable by a text."""
    return {"id": table_id, "columns": list(columns), "rows": [list(r) for r in rows],
            "numeric": list(numeric), "links": list(links) if links else None}


def table_holder(table_id: str, what: str) -> str:
    """The empty table, its filter box and its row count; ``report.js`` fills them."""
    return (f"<div class='lm-table' id='table-{table_id}'>"
            f"<p><input class='lm-filter' data-table='{table_id}' type='search' "
            f"placeholder='filter {html.escape(what)}: any cell containing this text' "
            f"size='48'> <span class='lm-count'></span></p>"
            "<div class='lm-scroll'><table><thead><tr></tr></thead><tbody></tbody></table>"
            "</div><p><button class='lm-more' type='button'>show more rows</button></p></div>")


def lease_table(rows: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """``leases.csv`` as a table: every column, numbers as numbers, and each finished
    lease's bounded slowdown."""
    from lease_manager.experiments.export import interval_set
    from lease_manager.experiments.plots import bounded_slowdowns

    columns = list(rows[0]) if rows else list(LEASE_COLUMNS)
    out = []
    for row in rows:
        cells: list[Any] = []
        for c in columns:
            text = row.get(c) or ""
            if c == "nodes":   # 0-63, not 64 numbers
                text = interval_set([int(n) for n in text.split()])
            value = number(text) if c in NUMERIC else None
            cells.append(int(value) if value is not None and value.is_integer()
                         and c == "lease_id" else value if value is not None else text)
        slow = bounded_slowdowns([row])
        cells.append(round(slow[0], 4) if slow else None)
        out.append(cells)
    columns.append("bounded_slowdown")
    return table_spec("leases", columns, out, [c in NUMERIC or c == "bounded_slowdown"
                                               for c in columns])




def page(title: str, subtitle: str, sections: Sequence[tuple[str, str, str]],
         data: Mapping[str, Any]) -> str:
    """The whole page: ``sections`` are (id, heading, inner HTML)."""
    from lease_manager.web.gantt_plan import gantt_js
    from lease_manager.web.plotly_js import plotly_js

    try:
        plotly = plotly_js()
    except (ImportError, OSError):
        raise LeaseManagerError("report --html needs the plotly package, whose plotly.min.js "
                                "it puts in the page: pip install 'plotly>=5.18'") from None
    nav = "".join(f"<a href='#s-{sid}'>{html.escape(heading)}</a>" for sid, heading, _ in sections)
    body = "".join(f"<section id='s-{sid}'><h2>{html.escape(heading)}</h2>{inner}</section>"
                   for sid, heading, inner in sections)
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<style>{_static('report.css')}</style><script>{plotly}</script>"
            f"<script>{gantt_js()}</script></head><body>"
            f"<header><h1>{html.escape(title)}</h1><p>{html.escape(subtitle)}</p></header>"
            f"<nav>{nav}</nav><main>{body}</main>"
            f"<script type='application/json' id='lm-data'>{_script_json(data)}</script>"
            f"<script>{_static('report.js')}</script></body></html>")


def _chart(chart_id: str) -> str:
    return f"<div class='lm-chart' id='{chart_id}'></div>"


def gantt_section(shown: int, total: int) -> str:
    """The Gantt chart's place on the page, saying which leases it holds."""
    what = (f"all {total:,} leases that ran" if shown == total
            else f"the first {shown:,} of the {total:,} leases that ran, in start order")
    return (f"<p class='lm-note'>{what}; one row a node. Drag to zoom, double-click to "
            "zoom out; hover over a bar for the lease, click it to find it in the table. "
            "Colour by <select id='gantt-colour'><option value='type'>type</option>"
            "<option value='state'>state</option></select></p>"
            "<div id='gantt-chart' class='lm-chart'></div>")


def figures_section(figures: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """A chart a figure, with the figure's ``note`` (if any) under it."""
    return "".join(_chart(fid) + (f"<p class='lm-note'>{html.escape(fig['note'])}</p>"
                                  if fig.get("note") else "") for fid, fig in figures)
