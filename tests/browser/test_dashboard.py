"""The daemon's dashboard in headless Chromium, against a real ``lease-manager serve``.

The site has two nodes of one VM each. Lease 1 runs for a day; lease 2 runs until the test
creates a file (its command waits for it: its end is the test's to decide, not a clock's);
lease 3 (two VMs) gets the one reservation ahead that aggressive backfilling allows, after
lease 1; lease 4 (two VMs) waits in the queue. Screenshots go to the system's temporary
folder.
"""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from daemon_support import ProcessDaemon, write_config

SHOTS = Path(tempfile.gettempdir())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("dashboard")
    config = write_config(folder, resources="2 CPU:1 Memory:1024", enactment="process",
                          extra="[process]\ncgroups = none\nstop-grace = 1\n"
                                "[accounting]\ndecision-log = yes")
    daemon = ProcessDaemon(config)
    daemon.folder = folder
    try:
        yield daemon
    finally:
        daemon.terminate_and_clean()


def _link(site: Any) -> str:
    url = site.cli("dashboard").stdout.strip().splitlines()[-1]
    assert url.startswith(site.url + "/dashboard?code="), url
    return url


def _gantt_leases(driver: Any) -> dict[int, set[str]]:
    """Lease id -> the (type, state) of its bars, as drawn in the Gantt chart (the rectangles
    LMGantt drew, with their hover texts)."""
    data = driver.execute_script(
        "const g = document.getElementById('gantt').__lmGantt;"
        "return g ? g.blocks.map(b => [b.bar.lease, b.bar.hover]) : [];")
    out: dict[int, set[str]] = {}
    for lease, text in data:
        if lease not in (None, ""):                # ("": a node's power state)
            out.setdefault(lease, set()).add(text.split("(")[1].split(")")[0])
    return out


def _point_at(driver: Any, lease: int) -> tuple[int, int]:
    """Where, from the Gantt chart's centre, the middle of ``lease``'s first bar is drawn."""
    return tuple(driver.execute_script("""
        const div = document.getElementById('gantt'), box = div.getBoundingClientRect();
        const b = div.__lmGantt.blocks.find(b => b.bar.lease === arguments[0]);
        const xa = div._fullLayout.xaxis, ya = div._fullLayout.yaxis;
        const x = box.left + xa._offset + xa.d2p((b.x0 + b.x1) / 2);
        const y = box.top + ya._offset + ya.d2p((b.first + b.last) / 2);
        return [Math.round(x - box.left - box.width / 2),
                Math.round(y - box.top - box.height / 2)];""", lease))


def _wait(driver: Any, what: Any, timeout: float = 60) -> Any:
    # (the page redraws a panel when its data change: an element found may go stale)
    return WebDriverWait(driver, timeout, poll_frequency=0.2,
                         ignored_exceptions=(StaleElementReferenceException,)).until(what)


def _text(driver: Any, css: str) -> str | None:
    """The text of the element ``css`` selects, read at once (None: there is none)."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
        css)


def _click(driver: Any, css: str) -> None:
    """Click the element ``css`` selects, found again if the page redrew it meanwhile."""
    _wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, css).click() or True)


def test_the_dashboard_shows_the_plan_the_queue_and_an_end(site: Any, chromium: Any) -> None:
    link = _link(site)
    chromium.get(link)
    assert chromium.current_url == site.url + "/dashboard"        # the code is gone
    _wait(chromium, lambda d: d.find_element(By.ID, "status").text == "live")
    client, folder = site.client, site.folder
    release = folder / "release"
    first = client.submit({"duration": 86400, "command": "sleep 100000", "name": "long",
                           "workdir": str(folder)})
    second = client.submit({"duration": 3600, "name": "until-released",
                            "command": f"while [ ! -e {release} ]; do sleep 0.05; done",
                            "workdir": str(folder)})
    third = client.submit({"duration": 3600, "nodes": 2, "name": "reserved",
                           "command": "true", "workdir": str(folder)})
    fourth = client.submit({"duration": 600, "nodes": 2, "name": "waiting",
                            "command": "true", "workdir": str(folder)})
    assert [v["state"] for v in (first, second, third, fourth)] == \
        ["active", "active", "scheduled", "queued"]

    drawn = _wait(chromium, lambda d: (lambda g: g if {1, 2, 3} <= set(g) else None)(
        _gantt_leases(d)))
    assert drawn[1] == {"best-effort, active"} and drawn[3] == {"best-effort, scheduled"}
    assert 4 not in drawn                                      # queued: no reservation
    assert chromium.find_elements(By.CSS_SELECTOR, "#gantt .scatterlayer .trace path")
    assert _text(chromium, "#gantt .xtitle") == "time (UTC)"      # a date axis
    reason = _wait(chromium, lambda d: _text(d, "#queue tr[data-lease='4'] td.reason"))
    assert "needs 2 VMs, the site has room for 0" in reason, reason
    assert "held by lease 3" in reason, reason
    planned = _text(chromium, "#queue tr[data-lease='3'] td.reason")
    assert planned and planned.startswith("reserved: starts at"), planned
    assert _text(chromium, "#count-running .value") == "2"
    chromium.save_screenshot(str(SHOTS / "lm-dashboard-plan.png"))

    _click(chromium, "#queue tr[data-lease='4']")   # the lease's history (decision log)
    history = _wait(chromium, lambda d: d.find_elements(By.CSS_SELECTOR,
                                                         "#lease-history tbody tr"))
    texts = [h.text for h in history]
    assert chromium.find_element(By.ID, "lease-title").text.startswith("Lease 4")
    assert any("submitted (best-effort, 2 VMs)" in t for t in texts), texts

    release.touch()                               # lease 2's command ends: the lease is done
    _wait(chromium, lambda d: d.find_element(By.CSS_SELECTOR, "#count-done .value").text
          == "1")
    _wait(chromium, lambda d: _gantt_leases(d).get(2) == {"best-effort, done"})
    assert client.lease(2)["state"] == "done"
    chromium.save_screenshot(str(SHOTS / "lm-dashboard-ended.png"))

    # a bar of the Gantt chart: hovered, it tells its lease; clicked, it shows its history
    chromium.find_element(By.ID, "lease-close").click()
    gantt = chromium.find_element(By.ID, "gantt")
    dx, dy = _point_at(chromium, 1)
    ActionChains(chromium).move_to_element_with_offset(gantt, dx, dy).perform()
    tip = _wait(chromium, lambda d: [t for t in d.find_elements(By.CLASS_NAME, "lm-gantt-tip")
                                     if t.is_displayed()])[0]
    assert tip.text.startswith("lease 1 \u201clong\u201d (best-effort, active)"), tip.text
    chromium.save_screenshot(str(SHOTS / "lm-dashboard-hover.png"))
    ActionChains(chromium).click().perform()
    _wait(chromium, lambda d: d.find_element(By.ID, "lease-title").text.startswith("Lease 1"))


def test_without_a_session_the_page_shows_nothing(site: Any, chromium: Any) -> None:
    link = _link(site)
    chromium.get(link)
    _wait(chromium, lambda d: d.find_element(By.ID, "status").text == "live")
    chromium.delete_all_cookies()                 # a browser without the session
    chromium.get(site.url + "/dashboard")
    assert chromium.find_element(By.TAG_NAME, "h1").text == "lease-manager dashboard: sign in"
    assert "lease-manager dashboard" in chromium.find_element(By.TAG_NAME, "body").text
    assert not chromium.find_elements(By.ID, "gantt")
    chromium.save_screenshot(str(SHOTS / "lm-dashboard-signed-out.png"))
    chromium.get(site.url + "/dashboard/state")
    assert json.loads(chromium.find_element(By.TAG_NAME, "body").text) == {
        "error": "no dashboard session: run `lease-manager dashboard` for a link"}
    for path in ("/dashboard/state", "/dashboard/lease/1", "/dashboard/static/dashboard.js"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(site.url + path, timeout=10)
        assert refused.value.code == 401

    chromium.get(link)                            # the code was spent: no second session
    assert chromium.find_element(By.TAG_NAME, "h1").text == "This link cannot be used"
    chromium.save_screenshot(str(SHOTS / "lm-dashboard-spent-link.png"))
    assert not chromium.get_cookies()
    chromium.get(site.url + "/dashboard")
    assert not chromium.find_elements(By.ID, "gantt")
