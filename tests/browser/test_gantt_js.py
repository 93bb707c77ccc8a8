"""``LMGantt.draw`` (lease_manager/web/static/gantt.js), the Gantt drawer the report and the
dashboard share, on a hand-made plan in headless Chromium.

Three nodes, "now" at 1800 s (seconds)::

    node 2 |                 [7 AR, reserved ahead .........]
    node 1 |[5 BE run ....][5 suspend][...][5 resume][5 run]
    node 0 |[5 BE run ....]                  [5 resume][5 run]   [6 BE run]
           0              1200      1500  2400  2700  3600  3600  4800
                           now = 1800

Lease 5 runs on nodes 0-1 (one rectangle a phase: nodes 0 and 1 merge), is suspended on node
1 only (a rectangle of its own), and resumes on both; lease 7 is an advance reservation ahead
of now; lease 6 runs alone on node 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from lease_manager.web.gantt_plan import gantt_js
from lease_manager.web.plotly_js import plotly_js


def bar(lease: int, node: int, start: float, end: float, kind: str = "run",
        lease_type: str = "best-effort", state: str = "active") -> dict[str, Any]:
    return {"lease": lease, "node": node, "start": start, "end": end, "kind": kind,
            "type": lease_type, "state": state, "hover": f"lease {lease} {kind}"}


PLAN = {
    "nodes": ["n0", "n1", "n2"], "now": 1800.0,
    "bars": [bar(5, 0, 0, 1200), bar(5, 1, 0, 1200), bar(5, 1, 1200, 1500, "suspend"),
             bar(5, 0, 2400, 2700, "resume"), bar(5, 1, 2400, 2700, "resume"),
             bar(5, 0, 2700, 3600), bar(5, 1, 2700, 3600),
             bar(6, 0, 3600, 4800, state="scheduled"),
             bar(7, 2, 2000, 4800, "reserved", "advance-reservation", "scheduled")],
}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gantt") / "gantt.html"
    path.write_text("<!doctype html><html><head><meta charset='utf-8'>"
                    f"<script>{plotly_js()}</script><script>{gantt_js()}</script></head>"
                    "<body><div id='g'></div><script>"
                    f"window.PLAN = {json.dumps(PLAN)}; window.clicked = [];"
                    "</script></body></html>", encoding="utf-8")
    return path


def draw(driver: Any, page: Path, options: str = "{}", colour_by: str = "type") -> Any:
    driver.get(page.as_uri())
    driver.execute_script(
        "window.PLAN.colour_by = arguments[0]; window.done = false;"
        f"LMGantt.draw('g', window.PLAN, {options}).then(() => window.done = true);",
        colour_by)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return window.done"))
    return driver.execute_script(
        "const g = document.getElementById('g');"
        "return {traces: g.data.filter(t => t.fill === 'toself').map(t => [t.name,"
        "          t.x.filter(v => v === null).length, t.fillcolor]),"
        "        blocks: g.__lmGantt.blocks.map(b => [b.bar.lease, b.bar.kind, b.first, b.last,"
        "          b.x0, b.x1]),"
        "        shapes: g.layout.shapes.map(s => [s.x0, s.x1]),"
        "        xtitle: g._fullLayout.xaxis.title.text, xtype: g._fullLayout.xaxis.type,"
        "        ticks: g._fullLayout.yaxis.ticktext};")


def test_one_rectangle_a_lease_phase_and_block_of_rows(chromium: Any, page: Path) -> None:
    got = draw(chromium, page)
    # minutes: the plan spans 80 minutes
    assert got["xtitle"] == "time (minutes)" and got["xtype"] == "linear"
    assert sorted(got["blocks"]) == sorted([
        [5, "run", 0, 1, 0, 20], [5, "suspend", 1, 1, 20, 25], [5, "resume", 0, 1, 40, 45],
        [5, "run", 0, 1, 45, 60], [6, "run", 0, 0, 60, 80], [7, "reserved", 2, 2, 2000 / 60, 80]])
    # a trace a colour: the type's for running and reserved time, the phase's for the others
    assert got["traces"] == [["best-effort", 3, "#56b4e9"],
                             ["advance-reservation, reserved ahead", 1, "#e69f00"],
                             ["suspend", 1, "#555555"], ["resume", 1, "#8c8c8c"]]
    assert got["shapes"] == [[30, 30]]   # now, at 1800 s
    assert got["ticks"] == ["n0", "n1", "n2"]


def test_colour_by_state(chromium: Any, page: Path) -> None:
    got = draw(chromium, page, colour_by="state")
    assert [t[0] for t in got["traces"]] == ["active", "scheduled",
                                             "scheduled, reserved ahead", "suspend", "resume"]


def hover_at(driver: Any, x: float, row: float, click: bool = False) -> str | None:
    """Move the pointer to (x in the axis' linear units, row) and maybe click; the hover box's
    text, or None when it is hidden."""
    return driver.execute_script(
        "const g = document.getElementById('g'), xa = g._fullLayout.xaxis,"
        "  ya = g._fullLayout.yaxis, box = g.getBoundingClientRect();"
        "const at = {clientX: box.left + xa._offset + xa.l2p(arguments[0]),"
        "            clientY: box.top + ya._offset + ya.l2p(arguments[1]), bubbles: true};"
        "g.dispatchEvent(new MouseEvent('mousemove', at));"
        "if (arguments[2]) { g.dispatchEvent(new MouseEvent('mousedown', at));"
        "                    g.dispatchEvent(new MouseEvent('click', at)); }"
        "const t = document.querySelector('.lm-gantt-tip');"
        "return t.style.display === 'block' ? t.textContent : null;", x, row, click)


def test_hover_and_click_anywhere_on_a_bar(chromium: Any, page: Path) -> None:
    draw(chromium, page, "{onClick: id => window.clicked.push(id)}")
    # near the left end of lease 7's reservation (node 2, 35 minutes), off its middle
    assert hover_at(chromium, 35, 2.3, click=True) == "lease 7 reserved"
    assert chromium.execute_script("return window.clicked") == [7]
    # between lease 5's rows 0 and 1 (one rectangle), and in the gap under row 2 (nothing)
    assert hover_at(chromium, 10, 0.5) == "lease 5 run"
    assert hover_at(chromium, 10, 1.5) is None


def test_a_date_axis_from_an_epoch(chromium: Any, page: Path) -> None:
    got = draw(chromium, page, "{epoch: 1764324000}")   # 2025-11-28 10:00:00 UTC
    assert got["xtype"] == "date" and got["xtitle"] == "time (UTC)"
    assert got["shapes"] == [[(1764324000 + 1800) * 1000] * 2]
    assert hover_at(chromium, (1764324000 + 4200) * 1000, 0) == "lease 6 run"   # 11:10 UTC
    got = draw(chromium, page, "{origin: '2025-11-28 10:00 UTC', unit: 'h'}")
    assert got["xtitle"] == "time (hours from 2025-11-28 10:00 UTC)"
