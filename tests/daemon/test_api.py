"""The daemon's JSON HTTP API (``docs/api.yaml``): the happy paths, the bearer token, and a
table of malformed and hostile requests that must all get a clean 4xx while the daemon keeps
serving (plus a property-based fuzz of every request field when hypothesis is installed)."""

from __future__ import annotations

import gzip
import http.client
import json
import stat
import threading
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lease_manager.daemon.api import STATES
from lease_manager.daemon.lease_requests import FIELDS, TYPES
from lease_manager.kernel.timeutil import format_instant

from daemon_support import ThreadDaemon, lwf, lwf_request, write_config

MAX_BODY = 256 * 1024
SITE = "4 CPU:1 Memory:1024"          # four nodes; the default VM is CPU:1 Memory:512


# ---------------------------------------------------------------------------- helpers
class Answer:
    def __init__(self, status: int, headers: http.client.HTTPMessage, data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data
        self.json: Any = json.loads(data) if data else None

    @property
    def error(self) -> str:
        return self.json["error"]

    def __repr__(self) -> str:
        return f"<HTTP {self.status} {self.data[:300]!r}>"


def call(td: ThreadDaemon, method: str, path: str, body: Any = None, *,
         token: str | None = "", headers: dict[str, str] | None = None,
         content_type: str | None = "application/json", length: bool = True) -> Answer:
    """One request on a fresh connection with exactly these headers. ``token`` "" means the
    daemon's token, None no Authorization header; ``length=False`` sends no Content-Length."""
    host, port = td.daemon.server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        conn.putrequest(method, path, skip_accept_encoding=True)
        if token is not None:
            conn.putheader("Authorization", f"Bearer {token or td.daemon.token}")
        if content_type is not None and body is not None:
            conn.putheader("Content-Type", content_type)
        if body is not None and length:
            conn.putheader("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            conn.putheader(key, value)
        conn.endheaders(body if length else None)
        response = conn.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        conn.close()


def submit(td: ThreadDaemon, body: Any, **kw: Any) -> Answer:
    return call(td, "POST", "/v1/leases", body, **kw)


def iso(seconds: float) -> str:
    return format_instant(seconds)


@pytest.fixture
def td(tmp_path: Path):
    config = write_config(tmp_path, resources=SITE, extra=f"max-body = {MAX_BODY}")
    with ThreadDaemon(config) as daemon:
        yield daemon


def assert_serving(td: ThreadDaemon) -> None:
    health = call(td, "GET", "/v1/health", token=None)
    assert health.status == 200 and health.json["status"] == "ok", health
    ok = submit(td, {"duration": 60, "name": "still-serving"})
    assert ok.status == 201, ok
    assert ok.json["name"] == "still-serving"


# ------------------------------------------------------------------------ happy paths
def test_health_needs_no_token(td):
    answer = call(td, "GET", "/v1/health", token=None)
    assert answer.status == 200
    assert answer.json["status"] == "ok"
    assert answer.json["time"].endswith("Z")
    assert answer.headers["Content-Type"] == "application/json"


def test_submit_best_effort(td):
    answer = submit(td, {"duration": "00:10:00", "nodes": 2, "name": "be", "command": "true",
                         "extra": {"team": "x", "n": 3}})
    assert answer.status == 201, answer
    view = answer.json
    assert isinstance(view["id"], int)
    assert view["type"] == "best-effort"
    assert view["state"] == "active"           # the site is empty: it starts at once
    assert view["name"] == "be"
    assert view["request"]["duration"] == 600
    assert view["request"]["nodes"] == 2
    assert view["request"]["resources"] == {"CPU": 1.0, "Memory": 512.0}
    assert view["request"]["command"] == "true"
    assert view["request"]["extra"] == {"team": "x", "n": 3}
    assert view["request"]["start"] is None
    assert view["submitted"].endswith("Z")
    assert len(view["plan"]) == 1 and len(view["plan"][0]["nodes"]) == 2


def test_submit_advance_reservation_relative(td):
    before = td.daemon.clock.now()
    answer = submit(td, {"start": "+00:30:00", "duration": 600, "nodes": 1})
    assert answer.status == 201, answer
    view = answer.json
    assert view["type"] == "advance-reservation"
    assert view["state"] == "scheduled"
    start = datetime.fromisoformat(view["request"]["start"].replace("Z", "+00:00")).timestamp()
    # (the view's times are whole milliseconds)
    assert before + 1800 - 0.001 <= start <= td.daemon.clock.now() + 1800
    assert view["plan"][0]["start"] == view["request"]["start"]


@pytest.mark.parametrize("zone", ["Z", "+02:00", "-05:30"])
def test_submit_advance_reservation_iso(td, zone):
    at = int(td.daemon.clock.now()) + 7200
    utc = datetime.fromtimestamp(at, UTC)
    if zone == "Z":
        text = utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    else:
        sign, hh, mm = zone[0], int(zone[1:3]), int(zone[4:6])
        offset = timedelta(hours=hh, minutes=mm) * (1 if sign == "+" else -1)
        text = utc.astimezone(timezone(offset)).isoformat()
        assert text.endswith(zone)
    answer = submit(td, {"start": text, "duration": "01:00:00", "cpu": 0.5, "memory": 128})
    assert answer.status == 201, answer
    view = answer.json
    assert view["type"] == "advance-reservation"
    assert view["request"]["start"] == iso(at)              # UTC inside, Z at the edges
    assert view["plan"][0]["start"] == iso(at)
    assert view["plan"][0]["end"] == iso(at + 3600)
    assert view["request"]["resources"] == {"CPU": 0.5, "Memory": 128.0}


def test_submit_immediate(td):
    answer = submit(td, {"start": "now", "duration": "unlimited", "resources": {"CPU": 1}})
    assert answer.status == 201, answer
    view = answer.json
    assert view["type"] == "immediate"
    assert view["state"] == "active"
    assert view["request"]["duration"] == "unlimited"
    assert view["request"]["resources"] == {"CPU": 1.0}
    # an immediate lease that does not fit now is rejected, not queued
    big = submit(td, {"start": "now", "duration": 60, "nodes": 4})
    assert big.status == 201 and big.json["state"] == "rejected", big
    assert big.json["reason"]


def test_submit_deadline(td):
    answer = submit(td, {"duration": "00:20:00", "deadline": "+02:00:00", "nodes": 2})
    assert answer.status == 201, answer
    view = answer.json
    assert view["type"] == "deadline"
    assert view["state"] in ("active", "scheduled")
    assert view["request"]["deadline"].endswith("Z")
    assert view["plan"][-1]["end"] <= view["request"]["deadline"]


def test_submit_with_explicit_type_and_max_price(td):
    answer = submit(td, {"type": "best-effort", "duration": 60, "max_price": 1000})
    assert answer.status == 201, answer
    assert answer.json["request"]["max_price"] == 1000


def test_submit_a_list(td):
    answer = submit(td, [{"duration": 60}, {"duration": 120, "name": "second"}])
    assert answer.status == 201, answer
    assert [v["request"]["duration"] for v in answer.json] == [60, 120]
    assert answer.json[1]["id"] == answer.json[0]["id"] + 1
    # one bad item refuses the whole list, naming the item and the field
    bad = submit(td, [{"duration": 60}, {"duration": -1}])
    assert bad.status == 400 and bad.json["field"] == "[1].duration", bad
    ids = [v["id"] for v in call(td, "GET", "/v1/leases").json]
    assert ids == [answer.json[0]["id"], answer.json[1]["id"]]


def test_get_list_cancel(td):
    running = submit(td, {"duration": 3600, "nodes": 4, "name": "all"}).json
    waiting = submit(td, {"duration": 600, "nodes": 1, "name": "wait"}).json
    assert running["state"] == "active"
    assert waiting["state"] in ("queued", "scheduled")

    got = call(td, "GET", f"/v1/leases/{running['id']}")
    assert got.status == 200
    assert got.json["name"] == "all"
    history = got.json["history"]
    assert history[0] == {"time": running["submitted"], "from": None, "to": "new",
                          "detail": "submitted"}
    assert history[-1]["to"] == "active"

    everything = call(td, "GET", "/v1/leases").json
    assert [v["id"] for v in everything] == [running["id"], waiting["id"]]
    active = call(td, "GET", "/v1/leases?state=active").json
    assert [v["id"] for v in active] == [running["id"]]
    both = call(td, "GET", "/v1/leases?state=active,queued,scheduled").json
    assert len(both) == 2
    assert call(td, "GET", "/v1/leases?state=done").json == []
    assert [v["id"] for v in call(td, "GET", "/v1/leases?limit=1").json] == [running["id"]]
    after = call(td, "GET", f"/v1/leases?after={running['id']}").json
    assert [v["id"] for v in after] == [waiting["id"]]

    cancelled = call(td, "DELETE", f"/v1/leases/{running['id']}")
    assert cancelled.status == 200, cancelled
    assert cancelled.json["state"] == "cancelled"
    again = call(td, "DELETE", f"/v1/leases/{running['id']}")
    assert again.status == 409, again
    assert "cancelled" in again.error
    # the waiting lease gets the nodes
    assert call(td, "GET", f"/v1/leases/{waiting['id']}").json["state"] == "active"
    assert [v["id"] for v in call(td, "GET", "/v1/leases?state=cancelled").json] == \
        [running["id"]]


def test_unknown_lease_is_404(td):
    for method in ("GET", "DELETE"):
        for path in ("/v1/leases/999", "/v1/leases/0", "/v1/leases/999999999999999999",
                     "/v1/leases/99999999999999999999999"):
            answer = call(td, method, path)
            assert answer.status == 404, (method, path, answer)
            assert answer.error


def test_queue_order(td):
    submit(td, {"duration": 3600, "nodes": 4})
    ids = [submit(td, {"duration": 600 * (i + 1), "nodes": 2, "name": f"q{i}"}).json["id"]
           for i in range(4)]
    queue = call(td, "GET", "/v1/queue")
    assert queue.status == 200
    positions = [v["position"] for v in queue.json]
    assert positions == list(range(1, len(queue.json) + 1))
    queued = [v["id"] for v in queue.json]
    assert len(queued) >= 3                 # the first may be reserved ahead (backfilling)
    assert queued == sorted(queued) and set(queued) <= set(ids)   # first come, first served
    assert all(v["state"] == "queued" for v in queue.json)
    # cancelling a queued lease takes it out of the queue
    assert call(td, "DELETE", f"/v1/leases/{queued[0]}").status == 200
    assert [v["id"] for v in call(td, "GET", "/v1/queue").json] == queued[1:]


def test_hosts_show_free_capacity(td):
    hosts = call(td, "GET", "/v1/hosts")
    assert hosts.status == 200
    assert [h["name"] for h in hosts.json] == ["node-1", "node-2", "node-3", "node-4"]
    for h in hosts.json:
        assert h["capacity"] == {"CPU": 1.0, "Memory": 1024.0}
        assert h["free"] == h["capacity"]
        assert h["leases"] == []
    lease = submit(td, {"duration": 600, "nodes": 2, "memory": 256}).json
    assert lease["state"] == "active"
    hosts = call(td, "GET", "/v1/hosts").json
    busy = [h for h in hosts if h["leases"]]
    assert sorted(h["name"] for h in busy) == sorted(lease["plan"][0]["nodes"])
    for h in busy:
        assert h["free"] == {"CPU": 0.0, "Memory": 768.0}
        assert h["leases"] == [{"lease": lease["id"], "state": "active", "vms": 1,
                                "resources": {"CPU": 1.0, "Memory": 256.0},
                                "until": lease["plan"][0]["end"]}]
    assert sum(h["free"] == h["capacity"] for h in hosts) == 2


def test_hosts_come_a_page_at_a_time(td):
    """At most ``limit`` hosts from index ``from`` (the whole list of a million-node site was
    174 MB of JSON, and took the daemon to 3.5 GB); the client pages through them all."""
    lease = submit(td, {"duration": 600, "nodes": 4}).json
    page = call(td, "GET", "/v1/hosts?limit=2&from=1").json
    assert [h["index"] for h in page] == [1, 2]
    assert all(h["leases"][0]["lease"] == lease["id"] for h in page)
    assert [h["index"] for h in call(td, "GET", "/v1/hosts?from=3").json] == [3]
    assert call(td, "GET", "/v1/hosts?from=4").json == []
    assert td.client.hosts(page=3) == call(td, "GET", "/v1/hosts").json
    for query, field in (("limit=0", "limit"), ("limit=10001", "limit"), ("from=-1", "from"),
                         ("from=x", "from")):
        answer = call(td, "GET", f"/v1/hosts?{query}")
        assert answer.status == 400 and answer.json["field"] == field


def test_submit_lwf(td):
    doc = lwf(lwf_request("be"),
              lwf_request("ar", start='<start><exact time="00:30:00"/></start>',
                          duration="00:15:00", numnodes=2,
                          extra='<extra><attr name="team" value="x"/></extra>'),
              lwf_request("now", start="<start><now/></start>"))
    before = td.daemon.clock.now()
    answer = submit(td, doc, content_type="application/xml; charset=utf-8")
    assert answer.status == 201, answer
    views = answer.json
    assert [v["name"] for v in views] == ["be", "ar", "now"]
    assert [v["type"] for v in views] == ["best-effort", "advance-reservation", "immediate"]
    ar = views[1]
    start = datetime.fromisoformat(ar["request"]["start"].replace("Z", "+00:00")).timestamp()
    assert before + 1800 - 1 <= start <= td.daemon.clock.now() + 1800  # offset from submission
    assert ar["request"]["duration"] == 900
    assert ar["request"]["nodes"] == 2
    assert ar["request"]["resources"] == {"CPU": 1.0, "Memory": 256.0}
    assert ar["request"]["extra"]["team"] == "x"
    # text/xml too, and a single lease still answers with a list
    one = submit(td, lwf(lwf_request("single")), content_type="text/xml")
    assert one.status == 201 and [v["name"] for v in one.json] == ["single"], one


# ------------------------------------------------------------------------------ token
def test_token_file_is_private(td):
    path = td.daemon.token_path()
    assert path == td.daemon.state_dir / "token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == td.daemon.token
    assert len(td.daemon.token) >= 32


BAD_AUTHORIZATION = [None, "Bearer wrong-token", "Bearer ", "Bearer", "Basic dXNlcjpwdw==",
                     "Token {token}", "{token}", "Bearer {token}x", "Bearer x{token}",
                     "Bearer {token} extra", "Bearer " + "x" * 4000, "Bearer \u00e9t\u00e9"]


def test_bad_token_is_401(td):
    for header in BAD_AUTHORIZATION:
        for method, path in (("GET", "/v1/leases"), ("POST", "/v1/leases"), ("GET", "/v1/queue"),
                             ("GET", "/v1/hosts"), ("DELETE", "/v1/leases/1"),
                             ("GET", "/v1/leases/1"), ("GET", "/v1/nowhere")):
            headers = {} if header is None else \
                {"Authorization": header.format(token=td.daemon.token).encode("utf-8")
                 .decode("latin-1")}
            body = {"duration": 60} if method == "POST" else None
            answer = call(td, method, path, body, token=None, headers=headers)
            assert answer.status == 401, (header, method, path, answer)
            assert answer.headers["WWW-Authenticate"] == "Bearer"
            assert "token" in answer.error
    assert call(td, "GET", "/v1/leases").json == []     # nothing was submitted
    assert_serving(td)


def test_token_scheme_is_case_insensitive(td):
    answer = call(td, "GET", "/v1/leases", token=None,
                  headers={"Authorization": f"bearer {td.daemon.token}"})
    assert answer.status == 200


def test_configured_token_file(tmp_path):
    token_file = tmp_path / "my-token"
    token_file.write_text("s3cret-token-value\n")
    token_file.chmod(0o600)
    config = write_config(tmp_path, extra=f"token-file = {token_file}")
    with ThreadDaemon(config) as td:
        assert td.daemon.token == "s3cret-token-value"
        assert call(td, "GET", "/v1/leases", token="s3cret-token-value").status == 200
        assert call(td, "GET", "/v1/leases", token="other").status == 401
    assert not (tmp_path / "state" / "token").exists()


def test_openapi_document_matches_the_code(td):
    """docs/api.yaml names every request field, and every key the API answers with."""
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "docs" / "api.yaml").read_text())
    schemas = doc["components"]["schemas"]
    assert set(schemas["LeaseRequest"]["properties"]) == set(FIELDS)
    assert set(schemas["LeaseState"]["enum"]) == set(STATES)
    assert set(schemas["LeaseType"]["enum"]) == set(TYPES)
    submit(td, {"duration": 3600, "nodes": 4})
    lease = submit(td, {"duration": 60, "name": "doc"}).json
    submit(td, {"duration": 60})                # reserved ahead or queued
    submit(td, {"duration": 60})
    assert set(lease) == set(schemas["Lease"]["properties"]) == set(schemas["Lease"]["required"])
    request = schemas["Lease"]["properties"]["request"]
    assert set(lease["request"]) == set(request["properties"]) == set(request["required"])
    plan = schemas["Lease"]["properties"]["plan"]["items"]
    running = call(td, "GET", "/v1/leases/1").json
    assert set(running["plan"][0]) == set(plan["properties"])
    history = schemas["LeaseWithHistory"]["allOf"][1]["properties"]["history"]["items"]
    assert set(running["history"][0]) == set(history["properties"])
    assert set(running) - set(lease) == {"history", "logs"}
    queued = call(td, "GET", "/v1/queue").json[0]
    assert set(queued) - set(lease) == {"position"}
    host = call(td, "GET", "/v1/hosts").json[0]
    assert set(host) == set(schemas["Host"]["properties"])
    assert set(host["leases"][0]) == \
        set(schemas["Host"]["properties"]["leases"]["items"]["properties"])
    assert set(call(td, "GET", "/v1/health").json) == set(
        doc["paths"]["/v1/health"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"]["properties"])
    assert set(schemas["Error"]["properties"]) == {"error", "field"}
    # every documented path and method is served, and every documented status is a real one
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            answer = call(td, method.upper(), path.replace("{id}", "1"),
                          {"duration": 60} if method == "post" else None)
            assert answer.status < 300, (method, path, answer)
            assert str(answer.status) in operation["responses"]


# ---------------------------------------------------------------------------- fuzzing
NESTED = "[" * 100_000 + "]" * 100_000
GZIPPED_XML = gzip.compress(lwf(lwf_request("z")).encode())
DL = "+01:00:00"

# (id, request, expected status, the field named in the answer or None, words in the message)
# a request is a body for POST /v1/leases, or a dict of call() arguments
HOSTILE: list[tuple[str, Any, int, str | None, str]] = [
    # wrong types
    ("string nodes", {"duration": 60, "nodes": "2"}, 400, "nodes", "number"),
    ("bool nodes", {"duration": 60, "nodes": True}, 400, "nodes", "number"),
    ("null nodes", {"duration": 60, "nodes": None}, 400, "nodes", "number"),
    ("float nodes", {"duration": 60, "nodes": 1.5}, 400, "nodes", "whole"),
    ("list duration", {"duration": [60]}, 400, "duration", "number"),
    ("object duration", {"duration": {"s": 60}}, 400, "duration", "number"),
    ("bool duration", {"duration": False}, 400, "duration", "number"),
    ("object command", {"duration": 60, "command": {"sh": "ls"}}, 400, "command", "string"),
    ("list command", {"duration": 60, "command": ["ls", "-l"]}, 400, "command", "string"),
    ("number name", {"duration": 60, "name": 5}, 400, "name", "string"),
    ("number start", {"duration": 60, "start": 1700000000}, 400, "start", "string"),
    ("number type", {"duration": 60, "type": 1}, 400, "type", "string"),
    ("string cpu", {"duration": 60, "cpu": "1"}, 400, "cpu", "number"),
    ("list resources", {"duration": 60, "resources": ["CPU"]}, 400, "resources", "object"),
    ("string resource amount", {"duration": 60, "resources": {"CPU": "1"}}, 400,
     "resources.CPU", "number"),
    ("string max_price", {"duration": 60, "max_price": "10"}, 400, "max_price", "number"),
    ("list extra", {"duration": 60, "extra": [1]}, 400, "extra", "object"),
    ("nested extra", {"duration": 60, "extra": {"a": {"b": 1}}}, 400, "extra.a", "string"),
    ("NUL in command", {"duration": 60, "command": "ls\x00rm"}, 400, "command", "NUL"),
    ("long name", {"duration": 60, "name": "x" * 300}, 400, "name", "longer"),
    # huge and impossible numbers
    ("1e308 duration", {"duration": 1e308}, 400, "duration", "century"),
    ("1e308 AR duration", {"duration": 1e308, "start": "+00:10:00"}, 400, "duration",
     "century"),
    ("10**30 nodes", {"duration": 60, "nodes": 10 ** 30}, 400, "nodes", "out of range"),
    ("10**400 nodes", '{"duration": 60, "nodes": 1%s}' % ("0" * 400), 400, "nodes",
     "out of range"),
    ("10**400 duration", '{"duration": 1%s}' % ("0" * 400), 400, "duration", "out of range"),
    ("10**5000 duration", '{"duration": 1%s}' % ("0" * 5000), 400, None, "JSON"),
    ("1e400 duration (inf)", '{"duration": 1e400}', 400, "duration", "out of range"),
    ("-1e400 cpu (-inf)", '{"duration": 60, "cpu": -1e400}', 400, "cpu", "out of range"),
    ("1e400 max_price", '{"duration": 60, "max_price": 1e400}', 400, "max_price",
     "out of range"),
    ("NaN literal", '{"duration": NaN}', 400, None, "NaN"),
    ("Infinity literal", '{"duration": Infinity}', 400, None, "Infinity"),
    ("-Infinity literal", '{"duration": 60, "cpu": -Infinity}', 400, None, "Infinity"),
    ("million and one VMs", {"duration": 60, "nodes": 1_000_001}, 400, "nodes",
     "out of range"),
    ("zero nodes", {"duration": 60, "nodes": 0}, 400, "nodes", "out of range"),
    ("negative nodes", {"duration": 60, "nodes": -3}, 400, "nodes", "out of range"),
    ("negative cpu", {"duration": 60, "cpu": -1}, 400, "cpu", "out of range"),
    ("no resource at all", {"duration": 60, "cpu": 0, "memory": 0}, 400, "resources",
     "some resource"),
    ("negative max_price", {"duration": 60, "max_price": -1}, 400, "max_price", "out of range"),
    # durations
    ("negative duration", {"duration": -60}, 400, "duration", "out of range"),
    ("zero duration", {"duration": 0}, 400, "duration", "above 0"),
    ("zero HH:MM:SS", {"duration": "00:00:00"}, 400, "duration", "above 0"),
    ("a microsecond", {"duration": 1e-6}, 400, "duration", "shortest lease"),
    ("1e-50 s", {"duration": 1e-50, "start": "now"}, 400, "duration", "shortest lease"),
    ("0.000001 s as text", {"duration": "0.000001"}, 400, "duration", "shortest lease"),
    ("negative HH:MM:SS", {"duration": "-01:10:00"}, 400, "duration", "duration"),
    ("bad HH:MM:SS", {"duration": "00:61:00"}, 400, "duration", "below 60"),
    ("word duration", {"duration": "ten minutes"}, 400, "duration", "not a duration"),
    ("empty duration", {"duration": ""}, 400, "duration", "not a duration"),
    ("no duration", {"nodes": 1}, 400, "duration", "required"),
    ("over a century", {"duration": 200 * 365 * 86400}, 400, "duration", "century"),
    ("unlimited AR", {"duration": "unlimited", "start": "+01:00:00"}, 400, "duration",
     "unlimited"),
    ("unlimited deadline", {"duration": "unlimited", "deadline": DL}, 400, "duration",
     "unlimited"),
    # fields and types
    ("unknown field", {"duration": 60, "walltime": 60}, 400, "walltime", "unknown field"),
    ("camel-case field", {"duration": 60, "maxPrice": 1}, 400, "maxPrice", "unknown field"),
    ("unknown type", {"duration": 60, "type": "spot"}, 400, "type", "not one of"),
    ("type against start", {"duration": 60, "type": "immediate"}, 400, "type",
     "does not go with"),
    ("best-effort with a deadline", {"duration": 60, "type": "best-effort", "deadline": DL},
     400, "type", "and a deadline"),
    ("AR type without start", {"duration": 60, "type": "advance-reservation"}, 400, "type",
     "does not go with"),
    ("unknown resource", {"duration": 60, "resources": {"GPU": 1}}, 400, "resources.GPU",
     "no such resource"),
    ("empty resources", {"duration": 60, "resources": {}}, 400, "resources", "non-empty"),
    ("resources and cpu", {"duration": 60, "resources": {"CPU": 1}, "cpu": 1}, 400,
     "resources", "not both"),
    # times
    ("bad start", {"duration": 60, "start": "tomorrow"}, 400, "start", "not a time"),
    ("US date start", {"duration": 60, "start": "11/22/2026 10:00"}, 400, "start", "not a time"),
    ("bad offset start", {"duration": 60, "start": "+1 hour"}, 400, "start", "duration"),
    ("bad month", {"duration": 60, "start": "2026-13-01T00:00:00Z"}, 400, "start",
     "not a time"),
    ("year 1 start", {"duration": 60, "start": "0001-01-01T00:00:00+01:00"}, 400, "start",
     "too far"),
    ("year 9999 start", {"duration": 60, "start": "9999-12-31T23:59:59-01:00"}, 400, "start",
     "too far"),
    ("start in 200 years", {"duration": 60, "start": "+1752000:00:00"}, 400, "start",
     "too far"),
    ("start +inf", {"duration": 60, "start": "+inf"}, 400, "start", "too far"),
    ("long start", {"duration": 60, "start": "+" + "0" * 100}, 400, "start", "longer"),
    ("bad deadline", {"duration": 60, "deadline": "soon"}, 400, "deadline", "not a time"),
    ("deadline before start", {"duration": 600, "start": "+02:00:00", "deadline": DL}, 400,
     "deadline", "less time than the duration"),
    ("deadline too tight", {"duration": "02:00:00", "deadline": DL}, 400, "deadline",
     "less time than the duration"),
    ("deadline in the past", {"duration": 60, "deadline": "2001-01-01T00:00:00Z"}, 400,
     "deadline", "less time"),
    # bodies
    ("invalid JSON", '{"duration": 60', 400, None, "not valid JSON"),
    ("trailing garbage", '{"duration": 60} x', 400, None, "not valid JSON"),
    ("single quotes", "{'duration': 60}", 400, None, "not valid JSON"),
    ("not UTF-8", b'{"duration": 60, "name": "\xff\xfe"}', 400, None, "not valid JSON"),
    ("empty body", "", 400, None, "not valid JSON"),
    ("deeply nested lists", NESTED, 400, None, "not valid JSON"),
    ("deeply nested objects", '{"a":' * 30_000 + "1" + "}" * 30_000, 400, None,
     "not valid JSON"),
    ("a number body", "42", 400, None, "JSON object"),
    ("a string body", '"duration"', 400, None, "JSON object"),
    ("null body", "null", 400, None, "JSON object"),
    ("an empty list", [], 400, None, "1 to 1000"),
    ("a list of 1001", [{"duration": 60}] * 1001, 400, None, "1 to 1000"),
    ("a list holding a list", [[{"duration": 60}]], 400, "[0]", "JSON object"),
    ("a list with a bad item", [{"duration": 60}, {"duration": "x"}], 400, "[1].duration",
     "not a duration"),
    ("over max-body", {"body": "[" + " " * MAX_BODY + "]"}, 413, None, "limit"),
    ("much over max-body", {"body": b"x" * (8 * MAX_BODY)}, 413, None, "limit"),
    ("claims a huge body", {"body": b"{}", "headers": {"Content-Length": str(10 ** 12)},
                            "length": False}, 413, None, "limit"),
    ("missing Content-Length", {"body": b'{"duration": 60}', "length": False}, 411, None,
     "Content-Length"),
    ("chunked body", {"body": b'{"duration": 60}', "length": False,
                      "headers": {"Transfer-Encoding": "chunked"}}, 411, None, "chunked"),
    ("bad Content-Length", {"body": b"{}", "length": False,
                            "headers": {"Content-Length": "-2"}}, 400, None, "Content-Length"),
    ("text/plain", {"body": {"duration": 60}, "content_type": "text/plain"}, 415, None,
     "Content-Type"),
    ("form data", {"body": "duration=60", "content_type": "application/x-www-form-urlencoded"},
     415, None, "Content-Type"),
    ("gzip as XML", {"body": GZIPPED_XML, "content_type": "application/xml"}, 415, None,
     "compressed"),
    ("malformed XML", {"body": '<?xml version="1.0"?>\n<lease-workload>\n<lease-requests>\n'
                               "</lease-workload>", "content_type": "application/xml"},
     400, "XML", "request body:4: XML: malformed XML"),
    ("XML of no lease", {"body": lwf(), "content_type": "application/xml"}, 400,
     "lease-requests", "no lease request"),
    ("XML not LWF", {"body": "<html><body/></html>", "content_type": "text/xml"}, 400,
     "<html>", "request body:1: <html>: not an LWF file"),
    ("XML entity bomb", {"body": '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
                                 '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
                                 '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
                                 '<lease-workload name="&c;"/>',
                         "content_type": "application/xml"}, 400, "<lease-workload>",
     "request body:1"),
    ("XML unknown resource", {"body": lwf(lwf_request("x")).replace("Memory", "GPU"),
                              "content_type": "application/xml"}, 400, "<res type>", "GPU"),
    ("XML negative duration", {"body": lwf(lwf_request("x", duration="-01:00:00")),
                               "content_type": "application/xml"}, 400, "<duration time>",
     "request body:13"),
    ("XML unlimited AR", {"body": lwf(lwf_request(
        "x", start='<start><exact time="00:10:00"/></start>', duration="unlimited")),
        "content_type": "application/xml"}, 400, "<duration time>", "unlimited"),
    ("XML AR in 200 years", {"body": lwf(lwf_request(
        "x", start='<start><exact time="1752000:00:00"/></start>')),
        "content_type": "application/xml"}, 400, "<exact time>", "century"),
    ("XML microsecond", {"body": lwf(lwf_request("x", duration="0.000001")),
                         "content_type": "application/xml"}, 400, "<duration time>",
     "shortest lease"),
    ("XML century duration", {"body": lwf(lwf_request("x", duration="1752000:00:00")),
                              "content_type": "application/xml"}, 400, "<duration time>",
     "century"),
    ("XML 10**30 VMs", {"body": lwf(lwf_request("x", numnodes=10 ** 30)),
                        "content_type": "application/xml"}, 400, "<node-set numnodes>",
     "VMs"),
    ("XML VMs needing nothing", {"body": lwf(lwf_request("x")).replace(
        "</node-set>", '</node-set><node-set numnodes="1"><res type="CPU" amount="0"/>'
                       '<res type="Memory" amount="0"/></node-set>'),
        "content_type": "application/xml"}, 400, "<node-set>", "every resource amount is 0"),
    ("relative workdir", {"body": {"duration": 60, "workdir": "tmp"}}, 400, "workdir",
     "absolute"),
    ("missing workdir", {"body": {"duration": 60, "workdir": "/nonexistent/x"}}, 400,
     "workdir", "not a folder"),
    ("workdir in the state folder", {"body": {"duration": 60, "workdir": "STATE/enactment"}},
     400, "workdir", "state folder"),
    # methods, paths and parameters
    ("PUT leases", {"method": "PUT", "body": {"duration": 60}}, 405, None, "not allowed"),
    ("PATCH a lease", {"method": "PATCH", "path": "/v1/leases/1", "body": {}}, 405, None,
     "not allowed"),
    ("POST a lease", {"method": "POST", "path": "/v1/leases/1", "body": {}}, 405, None,
     "not allowed"),
    ("DELETE leases", {"method": "DELETE"}, 405, None, "not allowed"),
    ("POST queue", {"method": "POST", "path": "/v1/queue", "body": {}}, 405, None,
     "not allowed"),
    ("DELETE hosts", {"method": "DELETE", "path": "/v1/hosts"}, 405, None, "not allowed"),
    ("POST health", {"method": "POST", "path": "/v1/health", "body": {}}, 405, None,
     "not allowed"),
    ("OPTIONS", {"method": "OPTIONS"}, 405, None, "not allowed"),
    ("made-up method", {"method": "BREW", "path": "/v1/queue"}, 405, None, "not allowed"),
    ("unknown path", {"method": "GET", "path": "/v1/nothing"}, 404, None, "no such resource"),
    ("root", {"method": "GET", "path": "/"}, 404, None, "no such resource"),
    ("v2", {"method": "GET", "path": "/v2/leases"}, 404, None, "no such resource"),
    ("trailing slash", {"method": "GET", "path": "/v1/leases/"}, 404, None,
     "no such resource"),
    ("path traversal", {"method": "GET", "path": "/v1/../../etc/passwd"}, 404, None,
     "no such resource"),
    ("absurd lease id", {"method": "GET", "path": "/v1/leases/99999999999999999999999"}, 404,
     None, "no such resource"),
    ("negative lease id", {"method": "GET", "path": "/v1/leases/-1"}, 404, None,
     "no such resource"),
    ("lease id word", {"method": "DELETE", "path": "/v1/leases/all"}, 404, None,
     "no such resource"),
    ("very long path", {"method": "GET", "path": "/v1/leases/" + "9" * 5000}, 414, None,
     "too long"),
    ("unknown state", {"method": "GET", "path": "/v1/leases?state=running"}, 400, "state",
     "unknown state"),
    ("word limit", {"method": "GET", "path": "/v1/leases?limit=ten"}, 400, "limit",
     "integer"),
    ("zero limit", {"method": "GET", "path": "/v1/leases?limit=0"}, 400, "limit", "integer"),
    ("huge limit", {"method": "GET", "path": "/v1/leases?limit=99999999999999999999"}, 400,
     "limit", "integer"),
    ("negative after", {"method": "GET", "path": "/v1/leases?after=-1"}, 400, "after",
     "integer"),
]


def _fuzz_call(td: ThreadDaemon, request: Any) -> Answer:
    if isinstance(request, dict) and ("method" in request or "body" in request) and \
            set(request) <= {"method", "path", "body", "headers", "length", "content_type"}:
        args = dict(request)
        return call(td, args.pop("method", "POST"), args.pop("path", "/v1/leases"),
                    args.pop("body", None), **args)
    return submit(td, request)


SITE_OF_30M = ('<site><resource-types names="CPU Memory"/><nodes>'
               '<node-set numnodes="30000000"><res type="CPU" amount="1"/>'
               '<res type="Memory" amount="1024"/></node-set></nodes></site>\n')


@pytest.mark.parametrize("name, body, words", [
    # 470 bytes took the daemon from 59 MB to 995 MB, for a <site> it never uses
    ("a <site> of 30,000,000 nodes",
     lwf(lwf_request("x")).replace('<lease-workload name="test">\n',
                                   '<lease-workload name="test">\n' + SITE_OF_30M),
     "'30000000' is above the maximum 1000000 nodes or VMs"),
    ("numnodes 1e29 (was HTTP 500)",
     lwf(lwf_request("x")).replace('numnodes="1"', 'numnodes="1e29"'), "'1e29' is not"),
    ("an entity in element text (was XMLSchemaValidateError, HTTP 500)",
     lwf(lwf_request("x")).replace("<software><none/>", "<software><none/>&e;").replace(
         "<lease-workload", '<!DOCTYPE lease-workload [<!ENTITY e "x">]>\n<lease-workload', 1),
     "entity references (&e;) are not allowed"),
])
def test_the_xml_reproducers_get_400_in_bounded_memory(td, name, body, words):
    """The issue's three XML bodies through the API: each one a 400 naming the problem, the
    daemon's memory (this process's peak) grows by less than 100 MB, and it keeps serving."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss      # KiB on Linux
    answer = submit(td, body, content_type="application/xml")
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert answer.status == 400, answer
    assert words in answer.error and "\n" not in answer.error, answer.error
    assert grown < 100, f"{name}: peak memory grew by {grown:.0f} MB"
    assert_serving(td)


def test_hostile_requests_get_clean_4xx(td):
    """Every hostile request gets the exact 4xx with a message naming the field at fault,
    and the daemon keeps serving throughout (all on one daemon)."""
    failures = []
    for name, request, status, field, words in HOSTILE:
        body = request.get("body") if isinstance(request, dict) else None
        if isinstance(body, dict) and "STATE" in str(body.get("workdir")):
            request = {**request, "body": {**body, "workdir": body["workdir"].replace(
                "STATE", str(td.daemon.state_dir))}}
        answer = _fuzz_call(td, request)
        problems = []
        if answer.status != status:
            problems.append(f"status {answer.status}, expected {status}")
        if not isinstance(answer.json, dict) or not isinstance(answer.json.get("error"), str):
            problems.append("no JSON error object")
        else:
            if answer.json.get("field") != field:
                problems.append(f"field {answer.json.get('field')!r}, expected {field!r}")
            if field is not None and field not in answer.error:
                problems.append(f"the message does not name {field!r}")
            if words.lower() not in answer.error.lower():
                problems.append(f"{words!r} not in the message")
        if answer.headers["Content-Type"] != "application/json":
            problems.append(f"Content-Type {answer.headers['Content-Type']}")
        if problems:
            failures.append(f"{name}: {'; '.join(problems)}: {answer!r}")
    assert not failures, "\n".join(failures)
    # nothing hostile got in, and the daemon still serves
    assert call(td, "GET", "/v1/leases").json == []
    assert_serving(td)


def test_405_names_the_allowed_methods(td):
    answer = call(td, "PUT", "/v1/leases/3", {})
    assert answer.status == 405
    assert answer.headers["Allow"] == "GET, DELETE"


def test_keep_alive_survives_refused_bodies(td):
    """An error answered before the body is read closes the connection, so the rest of the
    body is never taken for a next request; read bodies keep the connection open."""
    host, port = td.daemon.server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=30)
    auth = {"Authorization": f"Bearer {td.daemon.token}", "Content-Type": "application/json"}
    try:
        conn.request("POST", "/v1/leases", body=b'{"duration": -1}', headers=auth)
        first = conn.getresponse()
        assert first.status == 400 and first.getheader("Connection") != "close"
        first.read()
        conn.request("PUT", "/v1/leases", body=b'GET /v1/health HTTP/1.1\r\n\r\n', headers=auth)
        refused = conn.getresponse()
        assert refused.status == 405
        assert refused.getheader("Connection") == "close"
        refused.read()
    finally:
        conn.close()
    assert_serving(td)


def test_garbage_on_the_wire(td):
    """What the standard library refuses before routing is answered in JSON too."""
    import socket

    host, port = td.daemon.server.server_address[:2]
    for raw in (b"GARBAGE\r\n\r\n", b"GET /v1/health HTTP/9.9\r\n\r\n",
                b"GET /v1/health HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n",
                b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64 + b"\r\n\r\n"):
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(raw)
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        if data.startswith(b"HTTP/"):
            head, _, body = data.partition(b"\r\n\r\n")
            status = int(head.split()[1])
            assert 400 <= status < 500 or status == 505, data
        else:                   # a one-word request line is HTTP/0.9: the body alone
            body = data
        assert "error" in json.loads(body)
    assert_serving(td)


def test_unknown_fields_list_the_known_ones(td):
    answer = submit(td, {"duration": 60, "colour": "red"})
    assert answer.status == 400
    for field in FIELDS:
        assert field in answer.error


def test_tiny_resource_amounts_are_refused(td):
    answer = submit(td, {"duration": 60, "cpu": 1e-300})
    assert answer.status == 400 and answer.json["field"] == "cpu"
    answer = submit(td, {"duration": 60, "resources": {"CPU": 5e-324, "Memory": 1}})
    assert answer.status == 400 and answer.json["field"] == "resources.CPU"


def test_the_client_pages_through_long_lists(td):
    from lease_manager.daemon.client import Client

    client = Client(td.daemon.url, td.daemon.token)
    for _ in range(5):
        client.submit({"duration": 60})
    assert [v["id"] for v in client.leases(page=2)] == [1, 2, 3, 4, 5]
    assert [v["id"] for v in client.leases("queued,scheduled,active", page=2)] == [1, 2, 3, 4, 5]


def test_vm_limits_are_tied_to_the_site(td):
    """The site has 4 nodes of CPU:1 Memory:1024 and ``max-vms-per-node`` is 64: a lease may
    have 4 x 64 = 256 VMs, a submission 256 in all, and a VM must need CPU 1/64 or Memory
    16 MB at least (a million VMs of 0.000001 CPU would be a million processes)."""
    ok = submit(td, {"duration": 60, "nodes": 256, "resources": {"CPU": 1 / 64}})
    assert ok.status == 201, ok
    answer = submit(td, {"duration": 60, "nodes": 257, "resources": {"CPU": 1 / 64}})
    assert answer.status == 400 and answer.json["field"] == "nodes"
    assert "257 VMs is more than a lease may have on this site (4 nodes x 64 VMs" in answer.error
    answer = submit(td, {"duration": 60, "nodes": 1_000_000, "cpu": 0.000001})
    assert answer.status == 400 and answer.json["field"] == "nodes"
    answer = submit(td, {"duration": 60, "resources": {"CPU": 0.000001}})
    assert answer.status == 400 and answer.json["field"] == "resources"
    assert "at least 1/64 of a node's amount of some resource (CPU:0.015625, Memory:16" in \
        answer.error
    # memory alone makes a VM big enough
    assert submit(td, {"duration": 60, "resources": {"CPU": 0.000001, "Memory": 16}}).status \
        == 201
    answer = submit(td, [{"duration": 60, "nodes": 200, "resources": {"Memory": 16}},
                         {"duration": 60, "nodes": 57, "resources": {"Memory": 16}}])
    assert answer.status == 400 and "asks for 257 VMs in all, more than 256" in answer.error
    answer = submit(td, [{"duration": 60, "nodes": 2},
                         {"duration": 60, "resources": {"CPU": 0.000001}}])
    assert answer.status == 400 and answer.json["field"] == "[1].resources"


def test_while_restoring_the_api_answers_503_with_retry_after(td):
    """Until its leases are restored the daemon listens, but does nothing a request asks:
    503 with ``Retry-After: 1`` (after the token check); the client waits through it."""
    td.daemon.ready.clear()
    try:
        answer = call(td, "GET", "/v1/leases")
        assert answer.status == 503 and answer.headers["Retry-After"] == "1"
        assert "restoring its leases" in answer.error
        answer = submit(td, {"duration": 60})
        assert answer.status == 503 and answer.headers["Retry-After"] == "1"
        assert call(td, "GET", "/v1/health", token=None).status == 503
        assert call(td, "GET", "/v1/leases", token="wrong").status == 401
        threading.Timer(1.5, td.daemon.ready.set).start()
        t0 = time.monotonic()
        view = td.client.submit({"duration": 60, "name": "after-restore"})
        assert time.monotonic() - t0 >= 1.0           # it waited for the restore
    finally:
        td.daemon.ready.set()
    assert view["name"] == "after-restore"
    assert [v["name"] for v in td.client.leases()] == ["after-restore"]   # nothing before
