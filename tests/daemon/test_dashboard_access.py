"""The dashboard's door: one-time codes, session cookies, read-only pages (no browser)."""

from __future__ import annotations

import http.client
import json
import logging
from typing import Any
from urllib.parse import urlsplit

import pytest

from lease_manager.daemon.sessions import DashboardAccess

from daemon_support import ThreadDaemon, write_config


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_code_is_good_once_and_for_a_minute() -> None:
    clock = Clock()
    access = DashboardAccess(clock=clock)
    code = access.new_code()
    session = access.redeem(code)
    assert session and access.valid(session)
    assert access.redeem(code) is None                     # spent
    late = access.new_code()
    clock.t += 60.5
    assert access.redeem(late) is None                     # too late
    assert access.redeem("") is None and access.redeem("x" * 500) is None
    assert not access.valid(None) and not access.valid("made-up")


def test_a_session_ends_after_its_idle_time_and_the_oldest_go_first() -> None:
    clock = Clock()
    access = DashboardAccess(clock=clock, session_seconds=100, most=2)
    first = access.redeem(access.new_code())
    clock.t += 90
    assert access.valid(first)                             # used: extended to +100 from now
    clock.t += 90
    assert access.valid(first)
    clock.t += 101
    assert not access.valid(first)
    a, b, c = (access.redeem(access.new_code()) for _ in range(3))
    assert not access.valid(a) and access.valid(b) and access.valid(c)


def _get(url: str, path: str, headers: dict[str, str] | None = None,
         method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    conn.request(method, path, headers=headers or {})
    answer = conn.getresponse()
    body = answer.read()
    conn.close()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body


@pytest.fixture
def daemon(tmp_path: Any) -> Any:
    with ThreadDaemon(write_config(tmp_path)) as d:
        yield d


def test_the_code_becomes_a_strict_cookie_and_is_never_logged(daemon: Any,
                                                              caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="lease_manager.daemon.api")
    url = daemon.client.dashboard_url()
    code = url.split("code=")[1]
    status, headers, _ = _get(daemon.daemon.url, urlsplit(url).path + "?code=" + code)
    assert status == 303 and headers["location"] == "/dashboard"
    cookie = headers["set-cookie"]
    name, _, rest = cookie.partition("=")
    assert name == f"lm_dashboard_{urlsplit(url).port}"
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {p.strip() for p in rest.split(";")}
    session = {"Cookie": cookie.split(";")[0]}
    status, headers, body = _get(daemon.daemon.url, "/dashboard", session)
    assert status == 200 and b"lease-manager" in body
    assert "default-src 'none'" in headers["content-security-policy"]
    status, _, _ = _get(daemon.daemon.url, "/dashboard?code=" + code)
    assert status == 401                                     # spent
    assert code not in caplog.text and "GET /dashboard?code=<code>" in caplog.text


def test_the_pages_are_read_only_and_the_state_comes_when_it_changed(daemon: Any) -> None:
    url = daemon.client.dashboard_url()
    _, headers, _ = _get(daemon.daemon.url, urlsplit(url).path + "?" + urlsplit(url).query)
    session = {"Cookie": headers["set-cookie"].split(";")[0]}
    for method in ("POST", "PUT", "DELETE"):
        for path in ("/dashboard", "/dashboard/state", "/dashboard/lease/1"):
            status, headers, _ = _get(daemon.daemon.url, path, session, method)
            assert status == 405 and headers["allow"] == "GET", (method, path)
    daemon.client.submit({"duration": 600})
    status, _, body = _get(daemon.daemon.url, "/dashboard/state", session)
    state = json.loads(body)
    assert status == 200 and [b[0] for b in state["plan"]["bars"]] == [1]
    assert state["plan"]["leases"]["1"]["what"] == "1 VM of CPU:1 Memory:512 for 00:10:00"
    assert state["plan"]["nodes"] == ["node-1", "node-2"]
    _, _, body = _get(daemon.daemon.url, f"/dashboard/state?since={state['version']}",
                      session)
    again = json.loads(body)
    assert again["plan"] is None and again["counters"]["leases"] == {"active": 1}
    daemon.client.submit({"duration": 600})
    _, _, body = _get(daemon.daemon.url, f"/dashboard/state?since={state['version']}",
                      session)
    assert sorted(b[0] for b in json.loads(body)["plan"]["bars"]) == [1, 2]
    status, _, body = _get(daemon.daemon.url, "/dashboard/lease/1", session)
    history = json.loads(body)
    assert status == 200 and history["source"] == "state changes"
    assert [h["text"] for h in history["history"]] == [
        "new: submitted", "new → queued", "queued → scheduled", "scheduled → active"]


def test_the_scripts_are_revalidated_and_plotly_is_the_packages(daemon: Any) -> None:
    from lease_manager.web.plotly_js import plotly_js

    url = daemon.client.dashboard_url()
    _, headers, _ = _get(daemon.daemon.url, urlsplit(url).path + "?" + urlsplit(url).query)
    session = {"Cookie": headers["set-cookie"].split(";")[0]}
    status, headers, body = _get(daemon.daemon.url, "/dashboard/static/plotly.min.js", session)
    assert status == 200 and body.decode() == plotly_js()
    assert headers["cache-control"] == "private, no-cache"
    again, _, body = _get(daemon.daemon.url, "/dashboard/static/plotly.min.js",
                          {**session, "If-None-Match": headers["etag"]})
    assert again == 304 and body == b""
    status, _, _ = _get(daemon.daemon.url, "/dashboard/static/../token", session)
    assert status == 404


def test_the_code_needs_the_token(daemon: Any) -> None:
    status, _, _ = _get(daemon.daemon.url, "/v1/dashboard/code", method="POST")
    assert status == 401


def test_dashboard_open_hands_the_link_to_the_browser(daemon: Any, monkeypatch: Any,
                                                     capsys: Any) -> None:
    import webbrowser

    from lease_manager.cli import main

    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    token = daemon.daemon.token_path()
    common = ["--server", daemon.daemon.url, "--token-file", str(token)]
    assert main(["dashboard", *common, "--open"]) == 0
    (url,) = opened
    assert url.startswith(daemon.daemon.url + "/dashboard?code=")
    assert url not in capsys.readouterr().out           # opened, not printed
    monkeypatch.setattr(webbrowser, "open", lambda url: False)   # no browser here
    assert main(["dashboard", *common, "--open"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith(daemon.daemon.url + "/dashboard?code=")
    assert printed[-1].split("code=")[1] != url.split("code=")[1]     # a fresh code
    assert daemon.daemon.token not in url and daemon.daemon.token not in printed[-1]
