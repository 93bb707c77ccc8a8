"""The Plotly bundled in the ``plotly`` package draws a chart in Chromium with no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from lease_manager.web.plotly_js import plotly_js, plotly_version


def test_plotly_js_is_the_installed_packages() -> None:
    text = plotly_js()
    assert len(text) > 1_000_000 and "plotly" in text[:2000].lower()
    assert plotly_version()[0].isdigit()


def test_bundled_plotly_draws_a_bar_chart_offline(chromium: Any, tmp_path: Path) -> None:
    """A page that holds plotly.min.js inline and one bar chart of three bars: the chart's
    three bars are drawn, and the page loaded nothing from the network."""
    figure = {"data": [{"type": "bar", "x": ["a", "b", "c"], "y": [1, 2, 3]}],
              "layout": {"title": {"text": "three bars"}}}
    page = tmp_path / "chart.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<script>{plotly_js()}</script></head><body><div id='chart'></div><script>"
        f"const f = {json.dumps(figure)}; Plotly.newPlot('chart', f.data, f.layout);"
        "</script></body></html>", encoding="utf-8")
    chromium.get(page.as_uri())
    WebDriverWait(chromium, 30).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chart .bars .point")) == 3)
    assert "three bars" in chromium.find_element(By.CSS_SELECTOR, "#chart .gtitle").text
    resources = chromium.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert [r for r in resources if r.startswith("http")] == []
