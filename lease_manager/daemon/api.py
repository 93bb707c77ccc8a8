"""The daemon's JSON HTTP API (documented in ``docs/api.yaml``, OpenAPI 3).

Every answer is JSON. Every request but ``GET /v1/health`` needs ``Authorization: Bearer
TOKEN``. Bad requests get a 4xx with ``{"error": message, "field": name}`` and never stop the
daemon; the engine thread does all the scheduling, API threads only wait for its answers.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import socket
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from lease_manager.daemon.connections import GuardedServerMixin, kernel_timed_files
from lease_manager.daemon.dashboard_http import is_dashboard
from lease_manager.daemon.dashboard_http import serve as serve_dashboard
from lease_manager.daemon.json_text import indented
from lease_manager.daemon.lease_requests import (
    RequestError,
    workdir_field,
)
from lease_manager.daemon.lease_views import amounts_by_name, lease_view
from lease_manager.daemon.refusals import DaemonStopping, HTTPError, check_vm_limits
from lease_manager.daemon.request_bodies import requests_of_body
from lease_manager.daemon.request_head import PlainRequestHeadMixin
from lease_manager.daemon.workers import AcceptingWorkersMixin
from lease_manager.errors import LeaseManagerError
from lease_manager.kernel.lease import LeaseState
from lease_manager.kernel.timeutil import format_instant

if TYPE_CHECKING:
    from lease_manager.daemon.service import Daemon

log = logging.getLogger("lease_manager.daemon.api")
#: a one-time code in a logged request line
_CODE = re.compile(r"([?&]code=)[^&\s\"]*")
API = "/v1"
#: a client's key for a submission: the same key again gets the first answer, not new leases
IDEMPOTENCY_HEADER = "Idempotency-Key"
STATES = tuple(s.value for s in LeaseState)


# ---------------------------------------------------------------------------- handler
class Handler(PlainRequestHeadMixin, BaseHTTPRequestHandler):
    server_version = "lease-manager"
    protocol_version = "HTTP/1.1"
    timeout = None          # the socket's own: see io_timeout
    #: seconds a read or a write of the connection may wait (timed by the kernel)
    io_timeout = 30.0
    daemon: Daemon        # set on the subclass made for each server
    # An answer leaves in one write: unbuffered, the headers and the body went in two, and
    # on a kept-alive connection the body waited for the client's delayed acknowledgement of
    # the headers (Nagle's algorithm): p50 54 ms instead of 18 at concurrency 8. The buffer
    # is flushed at the end of each request (BaseHTTPRequestHandler.handle_one_request).
    wbufsize = 1 << 16
    disable_nagle_algorithm = True

    def setup(self) -> None:
        """As ``StreamRequestHandler.setup``, with the timeouts kept by the kernel (a Python
        socket timeout polls before each read and write)."""
        self.connection = self.request
        if self.disable_nagle_algorithm:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.rfile, self.wfile = kernel_timed_files(self.connection, self.io_timeout,
                                                    self.rbufsize, self.wbufsize)

    def log_message(self, fmt: str, *args: Any) -> None:
        if not log.isEnabledFor(logging.DEBUG):   # (each request's line: built for nothing)
            return
        # a dashboard link's one-time code is never written to the log
        log.debug("%s %s", self.address_string(), _CODE.sub(r"\1<code>", fmt % args))

    # ----------------------------------------------------------------------- plumbing
    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = indented(body).encode() + b"\n"     # = json.dumps(body, indent=1), faster
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def handle_one_request(self) -> None:
        self.server.guard.waiting(self.connection)    # type: ignore[attr-defined]
        try:
            super().handle_one_request()     # it flushes the answer at its end
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True     # the client went, or the reaper shut it

    def finish(self) -> None:
        try:
            super().finish()         # flushes what is buffered for a client that may be gone
        except (BrokenPipeError, ConnectionResetError):
            return                   # it went, or the reaper shut it: nothing to tell it
        if getattr(self, "raw_requestline", None) == b"":   # the client closed it first
            self.server.guard.ended_by_client(self.connection)  # type: ignore[attr-defined]

    def _answering(self) -> None:
        """The whole request is in: the request timeout stops counting."""
        self.server.guard.answering(self.connection)  # type: ignore[attr-defined]

    def _handle(self, method: str) -> None:
        self._body_read = False
        self._reply_headers: dict[str, str] | None = None
        if self.header("Content-Length", "0").strip() in ("", "0") and \
                not self.header("Transfer-Encoding"):
            self._answering()
        try:
            url = urlsplit(self.path)
            if len(self.path) > 2048:
                raise HTTPError(414, "the request path is too long")
            if is_dashboard(url.path):      # its own pages: a session cookie, not the token
                serve_dashboard(self, method, url)
                return
            if url.path != f"{API}/health":
                self._authorise()
            if not self.daemon.ready.is_set():   # restoring: nothing of the request is done
                raise HTTPError(503, "the daemon is restoring its leases after a restart; "
                                     "try again shortly", headers={"Retry-After": "1"})
            status, body = self._route(method, url.path, parse_qs(url.query))
            self._send(status, body, self._reply_headers)
        except HTTPError as exc:
            body = {"error": exc.message}
            if exc.field:
                body["field"] = exc.field
            self._unread_body()
            self._send(exc.status, body, exc.headers)
        except TimeoutError:
            self._send(504, {"error": "the scheduler did not answer in time"})
        except LeaseManagerError as exc:
            status = 503 if isinstance(exc, DaemonStopping) else 400
            self._unread_body()
            self._send(status, {"error": str(exc)})
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception:   # a bug of ours: the client gets a 500, the daemon goes on
            log.exception("error answering %s %s", method, self.path)
            self.close_connection = True
            try:
                self._send(500, {"error": "internal error (see the daemon's log)"})
            except OSError:
                pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def __getattr__(self, name: str) -> Any:
        """Any other method (HEAD, OPTIONS, ...) is routed too, to get a 405 or 404 in JSON
        rather than the standard library's 501 page."""
        if name.startswith("do_"):
            return lambda: self._handle(name[3:])
        raise AttributeError(name)

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """Errors the standard library finds (a bad request line, headers too long): JSON
        too, and the connection is closed."""
        self.close_connection = True
        try:
            self._send(code, {"error": message or HTTPStatus(code).phrase})
        except (OSError, ValueError):
            pass

    #: an unread body up to this many times ``max-body`` is read and dropped before an error
    #: answer, so that a client still sending it gets the answer, not a reset connection
    DRAIN_FACTOR = 16

    def _unread_body(self) -> None:
        """After an error answered before the body was read, close the connection: what is
        left of the body must not be taken for the next request. A body of bounded size is
        read and dropped first (closing on unread data resets the connection, and the client
        would lose the answer)."""
        if self._body_read or not (self.header("Content-Length", "0").strip() != "0"
                                   or self.header("Transfer-Encoding")):
            return
        self.close_connection = True
        text = self.header("Content-Length", "").strip()
        if self.header("Transfer-Encoding") or not text.isdigit():
            return
        left = int(text)
        if left > self.DRAIN_FACTOR * self.daemon.config.get("daemon", "max-body"):
            return
        try:
            while left > 0:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:
            pass
        self._body_read = True

    def _authorise(self) -> None:
        header = self.header("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise HTTPError(401, "a bearer token is required (Authorization: Bearer TOKEN)",
                            headers={"WWW-Authenticate": "Bearer"})
        if not hmac.compare_digest(token.strip().encode(), self.daemon.token.encode()):
            raise HTTPError(401, "the token is wrong", headers={"WWW-Authenticate": "Bearer"})

    def _body(self) -> bytes:
        if self.header("Transfer-Encoding"):
            raise HTTPError(411, "send the body with a Content-Length, not chunked")
        length_text = self.header("Content-Length")
        if length_text is None:
            self.close_connection = True    # whatever follows is not to be read as a request
            raise HTTPError(411, "a Content-Length is required")
        if not length_text.strip().isdigit():
            raise HTTPError(400, f"bad Content-Length {length_text!r}")
        length = int(length_text)
        limit = self.daemon.config.get("daemon", "max-body")
        if length > limit:
            raise HTTPError(413, f"the body is {length} bytes; the limit is {limit}")
        data = self.rfile.read(length)
        self._body_read = True
        self._answering()
        if len(data) < length:
            raise HTTPError(400, "the body is shorter than its Content-Length")
        return data

    # ------------------------------------------------------------------------- routes
    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        if path == f"{API}/health":
            self._only(method, "GET")
            return 200, {"status": "ok", "time": format_instant(self.daemon.clock.now())}
        if path == f"{API}/leases":
            if method == "POST":
                return self._submit(query)
            self._only(method, "GET", "POST")
            return 200, self._list(query)
        match = re.fullmatch(rf"{API}/leases/(\d{{1,18}})", path)
        if match:
            lease_id = int(match.group(1))
            if method == "DELETE":
                return 200, self._cancel(lease_id)
            self._only(method, "GET", "DELETE")
            return 200, self._show(lease_id)
        if path == f"{API}/queue":
            self._only(method, "GET")
            return 200, self._queue()
        if path == f"{API}/hosts":
            self._only(method, "GET")
            return 200, self._hosts(query)
        if path == f"{API}/dashboard/code":
            self._only(method, "POST")
            access = self.daemon.access
            return 201, {"code": access.new_code(), "expires_in": access.code_seconds}
        raise HTTPError(404, f"no such resource: {path}")

    def _only(self, method: str, *allowed: str) -> None:
        if method not in allowed:
            raise HTTPError(405, f"{method} is not allowed here (allowed: {', '.join(allowed)})",
                            headers={"Allow": ", ".join(allowed)})

    def _names(self) -> Sequence[str]:
        return self.daemon.driver.names

    # Longer than ~50 lines on purpose: one request's path from body to answer (JSON, list or LWF),
    # each step a few lines.
    def _idempotency_key(self) -> str | None:
        key = self.header(IDEMPOTENCY_HEADER)
        if key is None:
            return None
        if not (1 <= len(key) <= 200 and key.isascii() and key.isprintable()):
            raise HTTPError(400, f"{IDEMPOTENCY_HEADER}: give 1 to 200 printable ASCII "
                                 f"characters", field=IDEMPOTENCY_HEADER)
        return key

    def _replay(self, key: str, body_hash: str, known: tuple[str, list[int], bool]
                ) -> tuple[int, Any]:
        """The answer to a request whose idempotency key was seen: the leases it created."""
        first_hash, ids, single = known
        if first_hash != body_hash:
            raise HTTPError(422, f"{IDEMPOTENCY_HEADER} {key!r} was used for another request",
                            field=IDEMPOTENCY_HEADER)
        store = self.daemon.store
        views = [lease_view(store.lease(i), self._names()) for i in ids]
        self._reply_headers = {"Idempotent-Replayed": "true"}
        return 201, views[0] if single else views

    def _submit(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        d = self.daemon
        data = self._body()
        kind = self.header("Content-Type", "application/json").split(";")[0].strip()
        key = self._idempotency_key()
        body_hash = hashlib.sha256(kind.encode() + b"\0" + data).hexdigest()
        if key is not None:
            known = d.store.recall_key(key, d.store.reader())
            if known is not None:
                return self._replay(key, body_hash, known)
        requests, single = requests_of_body(d, kind, data, d.clock.now())

        self._working_folders(requests, query.get("workdir", [None])[-1])
        self._vm_limits(requests)

        def submit(now: float) -> Any:
            if key is not None:    # the engine thread serialises requests with one key
                known = d.store.recall_key(key)
                if known is not None:
                    return lambda: known
            remember = (key, body_hash, single) if key is not None else None
            ids = [lease.id for lease in d.submit(requests, now, key=remember)]
            # built on the engine thread right after the step's commit: its own connection
            # reads what is committed, with the page cache a reader's would have dropped
            return lambda: [lease_view(d.store.lease(i, d.store.db), self._names()) for i in ids]

        views = d.call(submit)
        if isinstance(views, tuple):   # another request with this key got there first
            return self._replay(key or "", body_hash, views)
        return 201, views[0] if single else views

    def _vm_limits(self, requests: list[dict[str, Any]]) -> None:
        check_vm_limits(self.daemon, requests)

    def _working_folders(self, requests: list[dict[str, Any]], default: str | None) -> None:
        """Give requests without a ``workdir`` the ``?workdir=`` of the URL, and refuse a
        working folder that is not a folder here or that lies in the daemon's state folder
        (its token and database are there)."""
        state_dir = self.daemon.state_dir
        for i, request in enumerate(requests):
            field = "workdir" if len(requests) == 1 else f"[{i}].workdir"
            try:
                if request.get("workdir") is None and default is not None:
                    request["workdir"] = workdir_field(default)
            except RequestError as exc:
                raise HTTPError(400, f"{field}: {exc.detail}", field=field) from None
            if request.get("workdir") is None:
                continue
            folder = Path(request["workdir"]).resolve()
            if not folder.is_dir():
                raise HTTPError(400, f"{field}: {request['workdir']} is not a folder on the "
                                     "daemon's machine", field=field)
            if folder == state_dir or state_dir in folder.parents:
                raise HTTPError(400, f"{field}: {request['workdir']} is inside the daemon's "
                                     "state folder, which holds its token and database",
                                field=field)
            request["workdir"] = str(folder)

    def _list(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        states = tuple(s for value in query.get("state", ()) for s in value.split(",") if s)
        for s in states:
            if s not in STATES:
                raise HTTPError(400, f"unknown state {s!r} (known: {', '.join(STATES)})",
                                field="state")
        limit = _int_param(query, "limit", 1000, 1, 100000)
        after = _int_param(query, "after", 0, 0, 2 ** 62)
        return [lease_view(row, self._names())
                for row in self.daemon.store.leases(states, limit, after)]

    def _show(self, lease_id: int) -> dict[str, Any]:
        store = self.daemon.store
        row = store.lease(lease_id)
        if row is None:
            raise HTTPError(404, f"no lease {lease_id}")
        view = lease_view(row, self._names())
        view["history"] = [{"time": format_instant(e["time"]), "from": e["old"], "to": e["new"],
                            "detail": e["detail"]} for e in store.events(lease_id)]
        backend = self.daemon.backend
        started = row["start"] is not None
        vms = view["request"].get("nodes")
        view["logs"] = backend.log_files(lease_id, vms) \
            if backend is not None and started and isinstance(vms, int) else []
        return view

    def _cancel(self, lease_id: int) -> dict[str, Any]:
        d = self.daemon

        def cancel(now: float) -> Any:
            lease = d.find(lease_id)
            if lease is None:
                row = d.store.lease(lease_id, d.store.db)   # with this step's changes
                if row is None:
                    raise HTTPError(404, f"no lease {lease_id}")
                raise HTTPError(409, f"lease {lease_id} is already {row['state']}")
            d.run.site_scheduler.cancel(lease, now, "cancelled by the user")
            return lambda: lease_view(d.store.lease(lease_id, d.store.db), self._names())

        return d.call(cancel)

    def _queue(self) -> list[dict[str, Any]]:
        d = self.daemon

        def queue(now: float) -> Any:
            sched = d.run.site_scheduler
            ids = [l.id for l in sched.held.values()] + [l.id for l in sched.queue]
            return lambda: ids

        ids = d.call(queue)
        out = []
        for position, lease_id in enumerate(ids, 1):
            view = lease_view(d.store.lease(lease_id), self._names())
            view["position"] = position
            out.append(view)
        return out

    def _hosts(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        """At most ``limit`` hosts from index ``from`` on: the whole list of a million-node
        site was 174 MB of JSON and took the daemon to 3.5 GB (a page of 100,000, 0.9 GB)."""
        d = self.daemon
        types = d.run.nodes.types.names
        names = self._names()
        first = _int_param(query, "from", 0, 0, 2 ** 62)
        shown = range(first, min(len(names), first + _int_param(query, "limit", 1000, 1,
                                                                  10000)))

        def hosts(now: float) -> Any:
            capacity = d.run.nodes.capacity
            free = d.run.table.free_at(now)
            on: dict[int, list[dict[str, Any]]] = {i: [] for i in shown}
            for lease in d.run.site_scheduler.running.values():
                res = lease.reservations[0] if lease.reservations else None
                if res is None or not res.start <= now < res.end:
                    continue
                for node, amount in zip(res.nodes, res.amounts):
                    if node not in on:
                        continue
                    on[node].append({"lease": lease.id, "state": lease.state.value,
                                     "vms": sum(1 for n in res.vm_nodes if n == node),
                                     "resources": amounts_by_name(types, amount),
                                     "until": format_instant(res.end)})
            view = [{"name": names[i], "index": i, "capacity": amounts_by_name(types, capacity[i]),
                     "free": amounts_by_name(types, free[i]), "leases": on[i]}
                    for i in shown]
            return lambda: view

        return d.call(hosts)


def _int_param(query: dict[str, list[str]], name: str, default: int, low: int, high: int) -> int:
    values = query.get(name)
    if not values:
        return default
    text = values[-1]
    if not re.fullmatch(r"\d{1,19}", text) or not low <= int(text) <= high:
        raise HTTPError(400, f"{name} must be an integer from {low} to {high}", field=name)
    return int(text)


class _Server(GuardedServerMixin, AcceptingWorkersMixin, HTTPServer):
    allow_reuse_address = True
    request_queue_size = 64


def start_api(daemon: Daemon) -> tuple[_Server, str]:
    """Start the API on its own threads; return the server and its base URL."""
    import threading

    handler = type("BoundHandler", (Handler,), {"daemon": daemon})
    cfg = daemon.config
    host, port = cfg.get("daemon", "host"), cfg.get("daemon", "port")
    try:
        server = _Server((host, port), handler)
    except OSError as exc:
        raise cfg.error("daemon", "port", f"cannot listen on {host}:{port}: "
                                          f"{exc.strerror}") from None
    server.start_guard(cfg.get("daemon", "max-connections"), cfg.get("daemon", "request-timeout"))
    thread = threading.Thread(target=server.serve_forever, name="lm-api", daemon=True)
    thread.start()
    real_host, real_port = server.server_address[:2]
    real_host = str(real_host)   # an IP socket's address is text
    url_host = f"[{real_host}]" if ":" in real_host else real_host
    return server, f"http://{url_host}:{real_port}"
