"""``lease-manager report DIR --html`` opened from disk in headless Chromium.

The run: four jobs (``TINY``) on four one-CPU nodes with EASY backfilling (etc/sample.ini),
a schedule known by hand (times in seconds)::

    node 3 |[2 ..........][4 ..........]      [3 ..]
    node 2 |[2 ..........][4 ..........]      [3 ..]
    node 1 |[1 .............................][3 ..]
    node 0 |[1 .............................][3 ..]
           0             1800          3000 3600  4200

    lease  submit  start  end   nodes  wait
    1      0       0      3600  0-1    0
    2      0       0      1800  2-3    0
    3      60      3600   4200  0-3    3540   (all four nodes: waits for lease 1)
    4      120     1800   3000  2-3    1680   (backfilled: ends before lease 3's start)

Average wait (0 + 0 + 3540 + 1680) / 4 = 1,305 s; node-seconds 7,200 + 3,600 + 2,400 +
2,400 = 15,600 of 4 x 4,200 = 16,800: utilisation 92.9 %. The Gantt chart draws one
rectangle a lease here (each lease's nodes are consecutive): 4 rectangles for 10 node-bars.

The sweep: backfilling off and aggressive x the first 40 jobs of the SDSC Blue excerpt on 64
nodes (where the two differ: 5,982 s against 4,855 s of average wait) x seeds 1 and 2, with
a power model (nodes switched off when idle) and the usage probe, so that its page has every
kind of figure: comparison, usage, waits, slowdowns, power, node states and a series.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from lease_manager import cli
from lease_manager.experiments.gantt import blocks
from lease_manager.experiments.results import flatten

from support import TRACES

ROOT = Path(__file__).resolve().parents[2]
TINY = """\
; four jobs on four one-CPU nodes (id submit wait run procs ... requested-procs requested-time)
1 0 0 3600 2 -1 -1 2 3600 -1 1 1 1 -1 1 -1 -1 -1
2 0 0 1800 2 -1 -1 2 1800 -1 1 1 1 -1 1 -1 -1 -1
3 60 0 600 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1
4 120 0 1200 2 -1 -1 2 1200 -1 1 1 1 -1 1 -1 -1 -1
"""
SCREENSHOTS = Path("/tmp")


def open_page(driver: Any, page: Path) -> None:
    """Open ``page`` from disk and wait until its charts, Gantt chart and tables are drawn."""
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script(
        "return document.body.getAttribute('data-ready') === '1' && "
        "document.getElementById('gantt-chart').getAttribute('data-drawn') === '1'"))


def console_errors(driver: Any) -> list[str]:
    """The page's JavaScript errors (the browser log's SEVERE entries)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def network_requests(driver: Any) -> list[str]:
    names = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    return [n for n in names if not n.startswith(("file:", "data:", "blob:"))]


def table_column(driver: Any, table: str, column: str) -> list[str]:
    return driver.execute_script(
        "const h = document.getElementById('table-' + arguments[0]);"
        "const names = [...h.querySelectorAll('thead th')].map(th => th.dataset.col);"
        "const i = names.indexOf(arguments[1]);"
        "return [...h.querySelectorAll('tbody tr')].map(tr => tr.children[i].textContent);",
        table, column)


@pytest.fixture(scope="module")
def run_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("html-run")
    (d / "tiny.swf").write_text(TINY)
    run = d / "run"
    assert cli.main(["simulate", str(ROOT / "etc" / "sample.ini"), "--quiet",
                     "--set", f"tracefile.tracefile={d / 'tiny.swf'}",
                     "--set", "simulation.resources=4 CPU:1 Memory:1024",
                     "--out", str(run)]) == 0
    assert cli.main(["report", str(run), "--html"]) == 0
    return run


def test_the_run_has_the_schedule_drawn_above(run_page: Path) -> None:
    with (run_page / "leases.csv").open(newline="") as fh:
        rows = {r["lease_id"]: (r["start"], r["end"], r["nodes"], r["wait"])
                for r in csv.DictReader(fh)}
    assert rows == {"1": ("0", "3600", "0 1", "0"), "2": ("0", "1800", "2 3", "0"),
                    "3": ("3600", "4200", "0 1 2 3", "3540"),
                    "4": ("1800", "3000", "2 3", "1680")}


def test_run_page_draws_every_chart_offline(chromium: Any, run_page: Path) -> None:
    page = run_page / "report.html"
    open_page(chromium, page)
    charts = chromium.execute_script(
        "return [...document.querySelectorAll('.js-plotly-plot')].map(d => d.id)")
    assert charts == ["gantt-chart", "fig-usage", "fig-waits", "fig-slowdowns"]
    # every chart drew its traces: the Gantt chart its bars (one colour) and their lease ids,
    # the usage chart its utilisation and queue, the CDFs one line each
    lines = chromium.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('.lm-chart.js-plotly-plot')]"
        ".map(d => [d.id, d.querySelectorAll('.scatterlayer .trace').length]))")
    assert lines == {"gantt-chart": 2, "fig-usage": 2, "fig-waits": 1, "fig-slowdowns": 1}
    assert network_requests(chromium) == []
    assert console_errors(chromium) == []
    chromium.save_screenshot(str(SCREENSHOTS / "lm-report-run-top.png"))


def test_gantt_draws_one_rectangle_a_block_of_nodes_of_each_lease(chromium: Any,
                                                                   run_page: Path) -> None:
    open_page(chromium, run_page / "report.html")
    drawn = chromium.execute_script(
        "const g = document.getElementById('gantt-chart');"
        "const rects = g.data.filter(t => t.fill === 'toself')"
        "  .reduce((n, t) => n + t.x.filter(v => v === null).length, 0);"
        "return [rects, g.__lmGantt.blocks.map(b => [b.bar.lease, b.first, b.last, b.x0, b.x1]),"
        "        g.querySelectorAll('.scatterlayer .js-fill').length];")
    rects, blocks_drawn, fills = drawn
    with (run_page / "leases.csv").open(newline="") as fh:
        expected = sorted((int(r["lease_id"]), first, first + count - 1)
                          for r in csv.DictReader(fh)
                          for first, count in blocks(int(n) for n in r["nodes"].split()))
    assert rects == len(expected) == 4
    assert sorted((b[0], b[1], b[2]) for b in blocks_drawn) == expected
    # the axis is in minutes for a run of 70 minutes: lease 3 from 60 to 70
    assert [b[3:] for b in blocks_drawn if b[0] == 3] == [[60, 70]]
    assert fills == 1   # one filled path for the one colour (all best-effort)
    Select(chromium.find_element(By.ID, "gantt-colour")).select_by_value("state")
    WebDriverWait(chromium, 10).until(lambda d: d.execute_script(
        "return document.getElementById('gantt-chart').data.filter(t => t.fill === 'toself')"
        ".map(t => t.name)") == ["done"])
    chromium.execute_script("document.getElementById('s-gantt').scrollIntoView()")
    chromium.save_screenshot(str(SCREENSHOTS / "lm-report-run-gantt.png"))


def test_hover_tells_a_lease_and_a_click_finds_it_in_the_table(chromium: Any,
                                                               run_page: Path) -> None:
    open_page(chromium, run_page / "report.html")
    div = chromium.find_element(By.ID, "gantt-chart")
    chromium.execute_script("arguments[0].scrollIntoView({block: 'center'})", div)
    # the middle of lease 3's rectangle (from 60 to 70 minutes, rows 0 to 3), in pixels from
    # the middle of the chart's element
    dx, dy = chromium.execute_script(
        "const g = arguments[0], xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis;"
        "const box = g.getBoundingClientRect();"
        "return [xa._offset + xa.d2p(65) - box.width / 2, ya._offset + ya.d2p(1.5)"
        "        - box.height / 2];", div)
    ActionChains(chromium).move_to_element_with_offset(div, int(dx), int(dy)).perform()
    tip = chromium.find_element(By.CSS_SELECTOR, ".lm-gantt-tip")
    WebDriverWait(chromium, 10).until(lambda d: tip.is_displayed())
    assert tip.text.splitlines()[0] == "lease 3 (best-effort, done)"
    assert "waited 3,540 s" in tip.text and "4 VMs on node 0, node 1, node 2, node 3" in tip.text
    ActionChains(chromium).click().perform()
    WebDriverWait(chromium, 10).until(
        lambda d: table_column(d, "leases", "lease_id") == ["3"])
    assert chromium.find_element(By.CSS_SELECTOR, "#table-leases .lm-filter").get_attribute(
        "value") == "^3$"


def test_summary_numbers_are_summary_json(chromium: Any, run_page: Path) -> None:
    open_page(chromium, run_page / "report.html")
    summary = flatten(json.loads((run_page / "summary.json").read_text()))
    shown = chromium.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('.lm-kv')].map(e =>"
        " [e.dataset.key, [e.querySelector('.v').dataset.value, e.querySelector('.v')"
        "  .textContent]]))")
    assert {k: json.loads(v) for k, (v, _) in shown.items()} == summary
    assert shown["avg_wait"][1] == "1,305.0" and shown["leases_total"][1] == "4"
    assert shown["utilization"][1] == "0.9286"   # 15,600 / 16,800


def test_lease_table_sorts_and_filters(chromium: Any, run_page: Path) -> None:
    open_page(chromium, run_page / "report.html")
    assert table_column(chromium, "leases", "lease_id") == ["1", "2", "3", "4"]
    assert "4 rows" in chromium.find_element(By.CSS_SELECTOR, "#table-leases .lm-count").text
    wait_header = chromium.find_element(By.CSS_SELECTOR, "#table-leases th[data-col='wait']")
    wait_header.click()   # ascending, ties in file order
    assert table_column(chromium, "leases", "lease_id") == ["1", "2", "4", "3"]
    assert table_column(chromium, "leases", "wait") == ["0", "0", "1,680", "3,540"]
    wait_header.click()   # descending
    assert table_column(chromium, "leases", "lease_id") == ["3", "4", "1", "2"]
    box = chromium.find_element(By.CSS_SELECTOR, "#table-leases .lm-filter")
    box.clear()
    box.send_keys("1680")
    WebDriverWait(chromium, 10).until(
        lambda d: table_column(d, "leases", "lease_id") == ["4"])
    assert chromium.find_element(By.CSS_SELECTOR, "#table-leases .lm-count").text \
        == "1 of 4 rows match"
    box.clear()
    box.send_keys("best-effort")
    WebDriverWait(chromium, 10).until(
        lambda d: len(table_column(d, "leases", "lease_id")) == 4)
    chromium.execute_script("document.getElementById('s-leases').scrollIntoView()")
    chromium.save_screenshot(str(SCREENSHOTS / "lm-report-run-leases.png"))


SWEEP = f"""\
[sweep]
profiles = off, aggressive
traces = {TRACES / 'sdsc-blue-600requests.swf'}
seeds = 1-2

[common:simulation]
resources = 64 CPU:1 Memory:1024

[common:tracefile]
vm-resources = CPU:1 Memory:1024
max-jobs = 40

[common:accounting]
probes = usage

[common:power]
pstates = 2.4:100:200
off-watts = 5
switch-on = 120:150
switch-off = 30:120
policy-node-power = switch-off-idle
idle-timeout = 300

[off:scheduling]
backfilling = off

[aggressive:scheduling]
backfilling = aggressive
"""


@pytest.fixture(scope="module")
def sweep_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("html-sweep")
    (d / "sweep.ini").write_text(SWEEP)
    out = d / "out"
    assert cli.main(["sweep", str(d / "sweep.ini"), "--out", str(out), "--jobs", "1",
                     "--quiet"]) == 0
    assert cli.main(["report", str(out), "--html", "--metric", "avg_wait",
                     "--metric", "energy_joules"]) == 0
    return out


def test_sweep_page_compares_the_profiles_and_draws_the_sweeps_plots(
        chromium: Any, sweep_page: Path) -> None:
    open_page(chromium, sweep_page / "report.html")
    charts = chromium.execute_script(
        "return [...document.querySelectorAll('.js-plotly-plot')].map(d => d.id)")
    assert charts == ["fig-comparison-0", "gantt-chart", "fig-usage-0", "fig-waits-0",
                      "fig-slowdowns-0", "fig-power-0", "fig-series-running_leases-0",
                      "fig-node-states"]
    assert network_requests(chromium) == []
    assert console_errors(chromium) == []
    # the comparison table: a row a profile, the mean of comparison.csv
    with (sweep_page / "comparison.csv").open(newline="") as fh:
        means = {(r["profile"], r["metric"]): float(r["mean"]) for r in csv.DictReader(fh)}
    shown = chromium.execute_script(
        "const h = document.getElementById('table-comparison-0');"
        "const names = [...h.querySelectorAll('thead th')].map(th => th.dataset.col);"
        "return [...h.querySelectorAll('tbody tr')].map(tr => Object.fromEntries("
        "  names.map((n, i) => [n, tr.children[i].dataset.value ?? tr.children[i]"
        "  .textContent])));")
    assert [row["profile"] for row in shown] == ["off", "aggressive"]
    for row in shown:
        assert float(row["avg_wait (s)"]) == pytest.approx(means[(row["profile"], "avg_wait")],
                                                           rel=1e-12)
        assert float(row["energy_joules"]) == pytest.approx(
            means[(row["profile"], "energy_joules")], rel=1e-12)
    # the comparison chart: a bar a profile for each metric, at the same means
    bars = chromium.execute_script(
        "return document.getElementById('fig-comparison-0').data.map(t => [t.name, t.y])")
    assert bars == [[m, [pytest.approx(means[(p, m)], rel=1e-12) for p in ("off", "aggressive")]]
                    for m in ("avg_wait", "energy_joules")]
    # the node states: of the run with the most node switch-ons, as the PNG report picks it
    with (sweep_page / "results.csv").open(newline="") as fh:
        runs = list(csv.DictReader(fh))
    most = max(runs, key=lambda r: float(r["node_switch_ons"]))
    title = chromium.execute_script(
        "return document.getElementById('fig-node-states').layout.title.text")
    assert title.startswith(f"node power states: {most['run_id']} (")
    with (sweep_page / most["run_id"] / "node_states.csv").open(newline="") as fh:
        intervals = sum(1 for _ in csv.DictReader(fh))
    assert chromium.execute_script(   # a rectangle a row of node_states.csv
        "return document.getElementById('fig-node-states').data"
        ".reduce((n, t) => n + t.x.filter(v => v === null).length, 0)") == intervals
    # the power chart: each profile's total power (seed 1), the runs: one row each
    power = chromium.execute_script(
        "return document.getElementById('fig-power-0').data.map(t => t.name)")
    assert [n.split(":")[0] for n in power] == ["off", "aggressive"]
    assert len(table_column(chromium, "runs", "run_id")) == 4
    link = chromium.find_element(By.CSS_SELECTOR, "#table-runs tbody a")
    assert link.get_attribute("href").endswith("/off/sdsc-blue-600requests/seed-1/report.html")
    # the page it links to, once written, is that run's own page
    run = sweep_page / "off" / "sdsc-blue-600requests" / "seed-1"
    assert cli.main(["report", str(run), "--html"]) == 0
    assert "<title>seed-1: one run</title>" in (run / "report.html").read_text()
    chromium.save_screenshot(str(SCREENSHOTS / "lm-report-sweep-top.png"))
    chromium.execute_script("document.getElementById('fig-power-0').scrollIntoView()")
    chromium.save_screenshot(str(SCREENSHOTS / "lm-report-sweep-power.png"))
    chromium.execute_script("document.getElementById('fig-node-states').scrollIntoView()")
    chromium.save_screenshot(str(SCREENSHOTS / "lm-report-sweep-states.png"))
