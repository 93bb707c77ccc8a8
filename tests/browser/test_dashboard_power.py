"""The dashboard of a daemon with ``[power]`` in headless Chromium: nodes off and booting,
the power chart against the cap, the power now and the energy so far.

Two nodes start off; booting takes 600 s at 150 W (off: 0 W), so that a lease submitted now
leaves node-1 booting and node-2 off for the whole test (it ends long before the boot).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from daemon_support import ProcessDaemon, write_config


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("dashboard-power")
    config = write_config(folder, extra="[power]\npstates = 1.0:100:200\n"
                                        "switch-on = 600:150\nswitch-off = 5:50\n"
                                        "initial-state = off\npower-cap = 900\n"
                                        "policy-node-power = switch-off-idle")
    daemon = ProcessDaemon(config, "--set", "scheduling.policy-host-selection=no-policy")
    try:
        yield daemon
    finally:
        daemon.terminate_and_clean()


def test_power_nodes_and_energy_are_shown(site: Any, chromium: Any) -> None:
    site.client.submit({"duration": 60})
    chromium.get(site.client.dashboard_url())
    wait = WebDriverWait(chromium, 60, poll_frequency=0.2,
                         ignored_exceptions=(StaleElementReferenceException,))
    wait.until(lambda d: d.find_element(By.ID, "status").text == "live")
    squares = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#node-grid .node"))
    assert [s.get_attribute("class") for s in squares] == ["node booting", "node off"]
    assert chromium.find_element(By.ID, "node-count").text == \
        "0 on, 1 off, 1 booting, 0 shutting down"
    texts = chromium.execute_script(   # read at once: the page redraws its counters
        "return ['#power-now', '#use-cpu', '#energy'].map("
        "id => document.querySelector(id + ' .value').textContent)")
    assert texts[:2] == ["0.15 kW", "0.0 %"] and texts[2].endswith(" kWh"), texts
    names = chromium.execute_script(
        "return document.getElementById('power').data.map(t => t.name)")
    assert names == ["IT power", "power cap"]
    assert len(chromium.find_elements(By.CSS_SELECTOR, "#power .scatterlayer .trace")) == 2
    drawn = chromium.execute_script(
        "return document.getElementById('gantt').__lmGantt.blocks.map(b => b.bar.kind)")
    assert sorted(set(drawn)) == ["boot", "off", "reserved"]
    chromium.save_screenshot(str(Path(tempfile.gettempdir()) / "lm-dashboard-power.png"))
    panel = chromium.find_element(By.ID, "power-panel")
    chromium.execute_script("arguments[0].scrollIntoView()", panel)
    panel.screenshot(
        str(Path(tempfile.gettempdir()) / "lm-dashboard-power-chart.png"))


def test_polling_outlives_the_reaping_of_idle_connections(tmp_path: Any, chromium: Any) -> None:
    """With ``request-timeout = 0.3`` s the daemon shuts every kept-alive connection that
    waits longer than that for its next request: each poll (a second apart) finds its
    connection gone. The page goes on updating and never says the connection was lost."""
    config = write_config(tmp_path, extra="request-timeout = 0.3")
    daemon = ProcessDaemon(config)
    try:
        chromium.get(daemon.client.dashboard_url())
        wait = WebDriverWait(chromium, 60, poll_frequency=0.2,
                             ignored_exceptions=(StaleElementReferenceException,))
        wait.until(lambda d: d.find_element(By.ID, "status").text == "live")
        chromium.execute_script("""
            window.lmStatuses = [];
            new MutationObserver(() => window.lmStatuses.push(
                document.getElementById('status').textContent)).observe(
                document.getElementById('status'), {childList: true, subtree: true});
            window.lmClocks = new Set();
            new MutationObserver(() => window.lmClocks.add(
                document.getElementById('clock').textContent)).observe(
                document.getElementById('clock'), {childList: true, subtree: true});""")
        wait.until(lambda d: d.execute_script("return window.lmClocks.size") >= 4)
        statuses = chromium.execute_script("return window.lmStatuses")
        assert set(statuses) <= {"live"}, statuses
        # the polls did come on new connections: the old ones had been shut
        fresh = chromium.execute_script(
            "return performance.getEntriesByType('resource').filter(e => "
            "e.name.includes('/dashboard/state') && e.connectEnd > e.connectStart).length")
        assert fresh >= 3, fresh
    finally:
        daemon.terminate_and_clean()
