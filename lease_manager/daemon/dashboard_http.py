"""The dashboard's pages on the daemon's port: ``/dashboard`` and what it loads and polls.

Everything here is GET-only and read-only, and nothing is served without a session: the
one-time code of ``lease-manager dashboard`` becomes a session cookie (HttpOnly,
SameSite=Strict, Path=/) and a redirect to ``/dashboard`` without the code. A request without
a session gets 401 and, for the page itself, a short page saying how to get in; never data.
The page polls ``/dashboard/state`` about once a second (short polling: each poll is a whole
request, so the connection guard's request timeout and eviction of idle connections apply
unchanged, and a poll never holds a connection open the way a stream would).
"""

from __future__ import annotations

import html
import json
import re
from functools import cache
from http.cookies import CookieError, SimpleCookie
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, parse_qs

from lease_manager.daemon.sessions import COOKIE_PREFIX
from lease_manager.kernel.timeutil import format_instant

if TYPE_CHECKING:
    from lease_manager.daemon.api import Handler

PAGE = "/dashboard"
#: the files the page loads, and their types (``plotly.min.js`` comes from the plotly package)
STATIC = {"plotly.min.js": "text/javascript", "dashboard.js": "text/javascript",
          "dashboard.css": "text/css", "gantt.js": "text/javascript"}
#: the page runs only its own scripts and talks only to the daemon
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HOW_TO_GET_IN = """<p>Run <code>lease-manager dashboard -c CONFIG.ini</code> (or with
<code>--server URL --token-file FILE</code>) on a machine that holds the daemon's token: it
prints a link that is good once, for a minute, and <code>--open</code> opens it in your
browser.</p>"""


@cache
def static_file(name: str) -> bytes:
    """The bytes of one of the page's files (:data:`STATIC`)."""
    if name == "plotly.min.js":
        from lease_manager.web.plotly_js import plotly_js

        return plotly_js().encode()
    return resources.files("lease_manager.web").joinpath("static", name).read_bytes()


@cache
def _tag(name: str) -> str:
    """An entity tag of one of the page's files."""
    import hashlib

    return hashlib.sha256(static_file(name)).hexdigest()[:32]


def is_dashboard(path: str) -> bool:
    return path == PAGE or path.startswith(PAGE + "/")


def cookie_name(handler: Handler) -> str:
    return f"{COOKIE_PREFIX}{getattr(handler.server, 'server_port', '')}"


def _session(handler: Handler) -> str | None:
    text = handler.headers.get("Cookie")
    if not text:
        return None
    try:
        jar: SimpleCookie = SimpleCookie(text)
    except CookieError:
        return None
    morsel = jar.get(cookie_name(handler))
    return morsel.value if morsel is not None else None


def _reply(handler: Handler, status: int, body: bytes, kind: str,
           headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    handler.send_header("X-Content-Type-Options", "nosniff")
    handler.send_header("Referrer-Policy", "no-referrer")
    handler.send_header("X-Frame-Options", "DENY")
    handler.send_header("Content-Security-Policy", POLICY)
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    if "Cache-Control" not in (headers or {}):
        handler.send_header("Cache-Control", "no-store")
    if handler.close_connection:
        handler.send_header("Connection", "close")
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


def _page(title: str, body: str) -> bytes:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title></head><body style='font-family:sans-serif;"
            f"max-width:44em;margin:3em auto'><h1>{html.escape(title)}</h1>{body}"
            f"</body></html>").encode()


def _json(handler: Handler, status: int, body: Any) -> None:
    _reply(handler, status, json.dumps(body).encode(), "application/json")


def serve(handler: Handler, method: str, url: SplitResult) -> None:
    """Answer one request under ``/dashboard`` (the handler has read nothing of a body)."""
    path = url.path
    if method != "GET":
        handler.close_connection = True     # a body, if any, is left unread
        _reply(handler, 405, _page("Read only", "<p>The dashboard only shows.</p>"),
               "text/html; charset=utf-8", {"Allow": "GET"})
        return
    daemon = handler.daemon
    query = parse_qs(url.query)
    if path == PAGE and "code" in query:
        session = daemon.access.redeem(query["code"][-1])
        if session is None:
            _reply(handler, 401, _page("This link cannot be used",
                                       "<p>Its code was used already, or it is more than a "
                                       "minute old.</p>" + HOW_TO_GET_IN),
                   "text/html; charset=utf-8")
            return
        _reply(handler, 303, b"", "text/plain", {
            "Location": PAGE,
            "Set-Cookie": f"{cookie_name(handler)}={session}; HttpOnly; SameSite=Strict; "
                          "Path=/"})
        return
    if not daemon.access.valid(_session(handler)):
        if path == PAGE:
            _reply(handler, 401, _page("lease-manager dashboard: sign in",
                                       "<p>This browser has no session with the daemon.</p>"
                                       + HOW_TO_GET_IN), "text/html; charset=utf-8")
        else:
            _json(handler, 401, {"error": "no dashboard session: run `lease-manager "
                                          "dashboard` for a link"})
        return
    if path == PAGE:
        _reply(handler, 200, static_file("dashboard.html"), "text/html; charset=utf-8")
        return
    name = path.removeprefix(PAGE + "/static/")
    if name in STATIC and name != path:
        # revalidated at every load (a daemon upgraded in between serves its new scripts),
        # answered 304 while the browser's copy is current
        body = static_file(name)
        tag = f'"{_tag(name)}"'
        cache = {"Cache-Control": "private, no-cache", "ETag": tag}
        if handler.headers.get("If-None-Match") == tag:
            _reply(handler, 304, b"", STATIC[name], cache)
        else:
            _reply(handler, 200, body, f"{STATIC[name]}; charset=utf-8", cache)
        return
    if not daemon.ready.is_set():
        _json(handler, 503, {"error": "the daemon is restoring its leases"})
        return
    if path == PAGE + "/state":
        _state(handler, query.get("since", [None])[-1])
        return
    match = re.fullmatch(rf"{PAGE}/lease/(\d{{1,18}})", path)
    if match:
        _lease(handler, int(match.group(1)))
        return
    _json(handler, 404, {"error": f"no such page: {path}"})


def _state(handler: Handler, since: str | None) -> None:
    daemon = handler.daemon

    def build(now: float) -> Any:
        data = daemon.view.state(now, since)
        return lambda: data

    data = daemon.call(build)
    plan = data.pop("plan")
    text = json.dumps(data, separators=(",", ":"))
    body = f'{text[:-1]},"plan":{plan or "null"}}}'.encode()
    _reply(handler, 200, body, "application/json")


def _lease(handler: Handler, lease_id: int) -> None:
    """One lease's history: its decision-log lines when the daemon keeps a decision log
    (``[accounting] decision-log``), else its changes of state from the database."""
    daemon = handler.daemon
    row = daemon.store.lease(lease_id)
    if row is None:
        _json(handler, 404, {"error": f"no lease {lease_id}"})
        return
    decisions = daemon.run.decisions
    lines: list[dict[str, Any]] = []
    if decisions is not None:
        from lease_manager.experiments.explain import say_decision

        marker = f'"lease":{lease_id},'
        for line in list(decisions.lines):      # (appended by the engine thread meanwhile)
            if marker in line:
                record = json.loads(line)
                lines.append({"time": format_instant(record["t"]), "text": say_decision(record)})
        source = "decision log"
    else:
        for e in daemon.store.events(lease_id):
            old = e["old"]
            text = e["new"] if old in (None, e["new"]) else f"{old} → {e['new']}"
            lines.append({"time": format_instant(e["time"]),
                          "text": text + (f": {e['detail']}" if e["detail"] else "")})
        source = "state changes"
    _json(handler, 200, {"id": lease_id, "type": row["type"], "state": row["state"],
                         "reason": row["reason"], "source": source, "history": lines})
