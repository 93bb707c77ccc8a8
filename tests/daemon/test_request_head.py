"""A plain request head read without the email parser gives what the standard library's
``parse_request`` gives: the same attributes, the same headers message, the same bytes left
to read and written; any other head is the standard library's own."""

from __future__ import annotations

import io
import random
from http.server import BaseHTTPRequestHandler
from typing import Any

from lease_manager.daemon.request_head import PlainRequestHeadMixin

NAMES = ["Host", "Content-Length", "Authorization", "Content-Type", "Idempotency-Key",
         "Connection", "Expect", "Accept-Encoding", "X-Odd_name.1~", "From", "content-length"]
ODD_NAMES = ["A b", "", "Ünï", "X\x7f", " Lead"]
VALUES = ["127.0.0.1:8080", "31", "Bearer abc", "application/json", "close", "Close",
          "keep-alive", "100-continue", "", "a:b:c", "  spaced  ", "\ttabbed\t", "x" * 300]
ODD_VALUES = ["caf\xe9", "a\rb", "\x00", "\x1b[31m"]
LINES = ["POST /v1/leases HTTP/1.1", "GET /v1/leases?state=queued HTTP/1.1", "GET / HTTP/1.1",
         "DELETE /v1/leases/3 HTTP/1.1", "GET //evil HTTP/1.1", "GET /a b HTTP/1.1",
         "GET /x HTTP/1.0", "GET /x", "get /x HTTP/1.1", "GET /x HTTP/1.1 extra",
         "PATCH /v1/leases HTTP/1.12", "GET /\xe9 HTTP/1.1"]


class Plain(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:
        pass


class Ours(PlainRequestHeadMixin, Plain):
    fast = 0

    def _parse_plain_head(self) -> bool | None:
        parsed = super()._parse_plain_head()
        if parsed is not None:
            Ours.fast += 1
        return parsed


def parse(cls: type[BaseHTTPRequestHandler], request: bytes) -> dict[str, Any]:
    handler = cls.__new__(cls)
    handler.rfile = io.BufferedReader(io.BytesIO(request))
    handler.wfile = io.BytesIO()
    handler.client_address = ("127.0.0.1", 1)
    handler.request_version = "HTTP/1.1"
    handler.raw_requestline = handler.rfile.readline(65537)
    result = handler.parse_request()
    seen = {name: getattr(handler, name, None) for name in
            ("command", "path", "request_version", "requestline", "close_connection")}
    headers = getattr(handler, "headers", None)
    if headers is not None:     # (defects are compared by kind: they are new objects)
        headers = {**vars(headers), "defects": [type(d) for d in headers.defects]}
    return {"result": result, **seen, "headers": headers,
            "left": handler.rfile.read(), "written": handler.wfile.getvalue()}


def random_request(rng: random.Random) -> bytes:
    odd = rng.random() < 0.3
    lines = [rng.choice(LINES if odd else LINES[:4])]
    for _ in range(rng.choice([0, 1, 3, 6, 70] if odd else [0, 1, 3, 6])):
        name = rng.choice(NAMES + ODD_NAMES if odd else NAMES)
        value = rng.choice(VALUES + ODD_VALUES if odd else VALUES)
        lines.append(f"{name}:{rng.choice(['', ' ', '  '])}{value}")
        if odd and rng.random() < 0.1:
            lines.append(" folded on")
    eol = rng.choice(["\r\n", "\n"]) if odd else "\r\n"
    body = rng.choice(["", '{"duration": 3600}', "GET /next HTTP/1.1\r\n\r\n"])
    return (eol.join(lines) + eol + eol + body).encode("latin-1")


def test_every_head_parses_as_the_standard_librarys():
    rng = random.Random(44)
    Ours.fast = 0
    for _ in range(3000):
        request = random_request(rng)
        assert parse(Ours, request) == parse(Plain, request), request
    assert Ours.fast > 1500     # the plain heads did take the short way


def test_a_header_is_looked_up_as_the_message_gives_it():
    """``header(name)`` gives what ``headers.get(name)`` gives, for every name of each head
    (any case) and for names it lacks, whichever way the head was read."""
    rng = random.Random(4408)
    Ours.fast = 0
    names = NAMES + [n.upper() for n in NAMES] + ["Absent", "host"]
    for _ in range(1500):
        handler = Ours.__new__(Ours)
        handler.rfile = io.BufferedReader(io.BytesIO(random_request(rng)))
        handler.wfile = io.BytesIO()
        handler.client_address = ("127.0.0.1", 1)
        handler.request_version = "HTTP/1.1"
        handler.raw_requestline = handler.rfile.readline(65537)
        if not handler.parse_request():
            continue
        for name in names:
            assert handler.header(name) == handler.headers.get(name), name
            assert handler.header(name, "none") == handler.headers.get(name, "none"), name
    assert Ours.fast > 750


def test_a_head_not_yet_all_read_is_left_to_the_standard_library():
    """Only what is already buffered is looked at: a head cut short there is read the long
    way (here the buffer holds 16 bytes at a time)."""
    request = b"POST /v1/leases HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"

    class Small(Ours):
        pass

    Ours.fast = 0
    handler = Small.__new__(Small)
    handler.rfile = io.BufferedReader(io.BytesIO(request), buffer_size=16)
    handler.wfile = io.BytesIO()
    handler.raw_requestline = handler.rfile.readline(65537)
    assert handler.parse_request() and Ours.fast == 0
    assert handler.headers["Content-Length"] == "2" and handler.rfile.read() == b"{}"
