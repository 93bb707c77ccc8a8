"""The head of a plain HTTP/1.1 request read without the standard library's email parser.

``BaseHTTPRequestHandler.parse_request`` reads the header lines through ``email.parser``
(``http.client.parse_headers``): its feed parser took 12 to 20 % of an API thread's CPU on a
submission (py-spy, cProfile), the largest single part. :class:`PlainRequestHeadMixin` takes a
request whose request line and header lines are all of the plainest form (one space between a
method, a path and ``HTTP/1.1``; ``Name: value`` lines of printable ASCII, no folded line, the
whole head already read into the connection's buffer) and builds the same ``self.headers``
message (``set_raw`` of each line, as the email parser's ``compat32`` policy does) and the same
attributes, in a third of the time. Anything else goes to the standard library's
``parse_request``, which answers it exactly as before.
"""

from __future__ import annotations

import re
from typing import Any, overload

#: method, a path that does not start with ``//`` (the standard library rewrites those), and
#: HTTP/1.1
_REQUEST_LINE = re.compile(rb"([A-Z]{1,20}) (/(?!/)[!-~]*) HTTP/1\.1\r?\n")
#: a whole head of plain header lines (a token, a colon, printable ASCII), up to the blank line
_HEAD = re.compile(rb"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t -~]*\r\n){0,64}\r\n")
_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[\t ]*([\t -~]*)\r\n")


class PlainRequestHeadMixin:
    """For a ``BaseHTTPRequestHandler``: :meth:`parse_request` reads a plain head itself (see
    the module), and hands any other to the standard library's. Put it before the handler
    class in the bases."""

    raw_requestline: bytes
    rfile: Any
    protocol_version: str
    MessageClass: Any
    headers: Any
    #: a plain head's headers, by lower-case name: the first value of each (None: not plain)
    _first_values: dict[str, str] | None = None

    @overload
    def header(self, name: str) -> str | None: ...

    @overload
    def header(self, name: str, default: str) -> str: ...

    def header(self, name: str, default: str | None = None) -> str | None:
        """``self.headers.get(name, default)``, looked up at once for a plain head (the
        message's ``get`` lowers the name of every header at each call: some 50 calls of
        ``str.lower`` a submission)."""
        values = self._first_values
        if values is None:
            return self.headers.get(name, default)
        return values.get(name.lower(), default)

    def parse_request(self) -> bool:
        self._first_values = None
        parsed = self._parse_plain_head()
        if parsed is None:
            return super().parse_request()  # type: ignore[misc]
        return parsed

    def _parse_plain_head(self) -> bool | None:
        """Parse a plain head as ``parse_request`` would (what it would return), or read
        nothing and return None."""
        line = _REQUEST_LINE.fullmatch(self.raw_requestline)
        if line is None or self.protocol_version != "HTTP/1.1":
            return None
        head = _HEAD.match(self.rfile.peek())
        if head is None:
            return None
        headers = self.MessageClass()
        first: dict[str, str] = {}
        for raw_name, raw_value in _LINE.findall(head.group()):
            # (compat32's get gives a printable ASCII value as it was set)
            name, value = raw_name.decode("ascii"), raw_value.decode("ascii")
            headers.set_raw(name, value)
            first.setdefault(name.lower(), value)
        headers.set_payload("")
        self.rfile.read(head.end())
        self.command = line.group(1).decode("ascii")
        self.path = line.group(2).decode("ascii")
        self.request_version = "HTTP/1.1"
        self.requestline = self.raw_requestline.decode("ascii").rstrip("\r\n")
        self.headers = headers
        self._first_values = first
        # what parse_request does after the headers, for an HTTP/1.1 request
        self.close_connection = first.get("connection", "").lower() == "close"
        if first.get("expect", "").lower() == "100-continue":
            return bool(self.handle_expect_100())  # type: ignore[attr-defined]
        return True
