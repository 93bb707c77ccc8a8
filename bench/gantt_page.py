"""How fast the shared Gantt drawer (``lease_manager/web/static/gantt.js``) draws a big plan.

Builds a plan of N leases (default 10,000) on M nodes (default 1,000), packed as a list
scheduler would pack them: each lease takes 1 to 64 consecutive nodes (most take few) at the
earliest time they are all free, for 10 minutes to 6 hours; a quarter are advance reservations,
a few are suspended and resumed, "now" is a third of the way in, leases before it are done,
across it active, after it scheduled. Writes a page that holds Plotly and gantt.js inline,
opens it from disk in headless Chromium and times, with ``performance.now()`` in the page:

- the reference: ``Plotly.newPlot`` of a three-point line chart, on the same page;
- the first draw: ``LMGantt.draw`` into an empty element, until Plotly's promise resolves
  and the next frame is painted;
- a redraw: ``LMGantt.draw`` of the same plan into the drawn element (what a dashboard's
  update costs).

Prints each median (of ``--repeat`` runs) in ms and the draws as ratios to the reference.
The issue's target: the page draws in under 2 s. With ``--page FILE`` (a page of ``report
--html``), also the time from opening that page to every chart drawn, median of ``--repeat``
loads. Usage: ``python bench/gantt_page.py [-n 10000] [--nodes 1000] [--repeat 5]
[--screenshot FILE] [--page results/sample/report.html]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lease_manager.web.gantt_plan import gantt_js  # noqa: E402
from lease_manager.web.plotly_js import plotly_js  # noqa: E402

from browser_support import open_chromium  # noqa: E402

TYPES = ("best-effort", "advance-reservation", "immediate", "deadline")


def make_plan(leases: int, nodes: int, seed: int = 1) -> dict[str, Any]:
    """A plan of ``leases`` packed on ``nodes`` (see the module's docstring)."""
    rng = random.Random(seed)
    free = [0.0] * nodes
    made = []
    for lease in range(leases):
        width = min(nodes, int(2 ** rng.uniform(0, 6)))
        first = rng.randrange(0, nodes - width + 1)
        start = max(free[first:first + width]) + rng.uniform(0, 300)
        end = start + rng.uniform(600, 6 * 3600)
        for n in range(first, first + width):
            free[n] = end
        kind = "reserved" if rng.random() < 0.25 else "run"
        made.append((lease, first, width, start, end, kind))
    now = max(free) / 3
    bars = []
    for lease, first, width, start, end, kind in made:
        lease_type = "advance-reservation" if kind == "reserved" else rng.choice(TYPES[::2])
        state = "done" if end <= now else "active" if start <= now else "scheduled"
        phases = [(start, end, kind if state == "scheduled" else "run")]
        if lease % 50 == 0 and end - start > 1800:   # suspended for a while in the middle
            middle = (start + end) / 2
            phases = [(start, middle - 300, "run"), (middle - 300, middle, "suspend"),
                      (middle + 600, middle + 900, "resume"), (middle + 900, end + 900, "run")]
        for s, e, k in phases:
            for n in range(first, first + width):
                bars.append({"lease": lease, "node": n, "start": s, "end": e, "kind": k,
                             "type": lease_type, "state": state,
                             "hover": f"lease {lease} ({lease_type}, {state})\n"
                                      f"{width} nodes from node {first}"})
    return {"nodes": [f"node{i}" for i in range(nodes)], "now": now, "bars": bars,
            "colour_by": "type"}


SCRIPT = """
function frame() { return new Promise(r => requestAnimationFrame(() => r())); }
async function bench(repeat) {
  const out = {reference: [], first: [], redraw: []};
  const ref = document.getElementById('ref'), g = document.getElementById('gantt');
  for (let i = 0; i < repeat; i++) {
    Plotly.purge(ref);
    let t = performance.now();
    await Plotly.newPlot(ref, [{type: 'scatter', x: [1, 2, 3], y: [1, 3, 2]}], {height: 300});
    await frame();
    out.reference.push(performance.now() - t);
    Plotly.purge(g);
    t = performance.now();
    await LMGantt.draw(g, PLAN);
    await frame();
    out.first.push(performance.now() - t);
    t = performance.now();
    await LMGantt.draw(g, PLAN);
    await frame();
    out.redraw.push(performance.now() - t);
  }
  window.result = out;
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="leases (default 10,000)")
    parser.add_argument("--nodes", type=int, default=1_000, help="nodes (default 1,000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument("--screenshot", help="save a screenshot of the chart to this PNG")
    parser.add_argument("--page", help="also time opening this report --html page")
    args = parser.parse_args()
    from selenium.webdriver.support.ui import WebDriverWait

    plan = make_plan(args.n, args.nodes)
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "bench.html"
        page.write_text(
            "<!doctype html><html><head><meta charset='utf-8'>"
            f"<script>{plotly_js()}</script><script>{gantt_js()}</script></head><body>"
            "<div id='ref'></div><div id='gantt'></div><script>"
            f"const PLAN = {json.dumps(plan)};{SCRIPT}"
            f"window.addEventListener('load', () => setTimeout(() => bench({args.repeat}), 0));"
            "</script></body></html>", encoding="utf-8")
        driver_gen = open_chromium(1400, 900)
        driver = next(driver_gen)
        try:
            driver.get(page.as_uri())
            WebDriverWait(driver, 60 * args.repeat).until(
                lambda d: d.execute_script("return window.result !== undefined"))
            result = driver.execute_script("return window.result")
            blocks = driver.execute_script(
                "return document.getElementById('gantt').__lmGantt.blocks.length")
            if args.screenshot:
                driver.execute_script("document.getElementById('gantt').scrollIntoView()")
                driver.save_screenshot(args.screenshot)
            page_ms = [open_report(driver, Path(args.page)) for _ in range(args.repeat)] \
                if args.page else []
        finally:
            driver_gen.close()
    med = {k: statistics.median(v) for k, v in result.items()}
    print(f"plan: {args.n:,} leases on {args.nodes:,} nodes, {len(plan['bars']):,} bars "
          f"(a lease and node), drawn as {blocks:,} rectangles; median of {args.repeat} runs")
    print(f"reference (Plotly.newPlot of a 3-point line): {med['reference']:8.1f} ms")
    for key, what in (("first", "first draw"), ("redraw", "redraw of the drawn chart")):
        runs = ", ".join(f"{v:.0f}" for v in result[key])
        print(f"gantt {what:<26} {med[key]:8.1f} ms = {med[key] / med['reference']:6.1f} x "
              f"the reference  (runs: {runs} ms)")
    verdict = "met" if med["first"] < 2000 else "NOT met"
    print(f"target: the page draws in under 2,000 ms: {verdict} ({med['first']:,.0f} ms)")
    if page_ms:
        size = Path(args.page).stat().st_size / 1e6
        drawn = statistics.median(page_ms)
        print(f"page {args.page} ({size:.1f} MB): every chart drawn {drawn:,.0f} ms after it "
              f"began to load = {drawn / med['reference']:.1f} x the reference (loads: "
              f"{', '.join(f'{v:.0f}' for v in page_ms)} ms)")


def open_report(driver: Any, page: Path) -> float:
    """Open a report page from disk; ms from the start of its load to every chart drawn."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(page.resolve().as_uri())
    return float(WebDriverWait(driver, 300).until(lambda d: d.execute_script(
        "return document.body && document.body.getAttribute('data-drawn-ms')")))


if __name__ == "__main__":
    main()
