"""Haizea 1.0's XML-RPC protocol on the daemon (``[daemon] haizea-rpc = yes``), so that
Haizea's own clients work unchanged.

Haizea's clients call, on ``http://localhost:42493`` (their ``-s`` option)::

    create_lease(lease_xml) -> lease id           haizea-request-lease
    cancel_lease(lease_id) -> 0                   haizea-cancel-lease -l ID
    get_leases() -> [lease_xml, ...]              haizea-list-leases (the leases not ended)
    get_queue() -> [lease_xml, ...]               haizea-show-queue (in scheduling order)
    get_hosts() -> [{"id", "hostname", "cpu", "mem"}, ...]    haizea-list-hosts
    get_lease(lease_id) -> lease_xml              (Haizea 1.0 answers 0: unfinished there)
    notify_event(lease_id, enactment_id, event) -> None   (OpenNebula's hook; Haizea
                                                  ignores it, and so does the daemon)
    test_func() -> 0

``lease_xml`` is one ``<lease>`` element (:mod:`lease_manager.daemon.haizea_lease`). A request
the daemon refuses is an XML-RPC fault whose string says why (Haizea's clients print
"XMLRPC fault: ..."), with the HTTP status the JSON API would answer as its code (400, 404,
409, 503).

**Who may call.** Haizea's clients send no token. The endpoint is off unless configured;
it listens on 127.0.0.1 only (as Haizea did: ``localhost``), and answers a connection only
when the process at the other end runs as the daemon's own user or as root (read from
``/proc/net/tcp``: the kernel's record of the connection), the users who can read the
token file; any other is closed unanswered, with a log line. Where ``/proc/net/tcp`` cannot
be read, no connection is answered. Connections are held to ``max-connections``,
``request-timeout`` and ``max-body`` as on the JSON API.
"""

from __future__ import annotations

import logging
import os
import threading
import xmlrpc.client
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

from lease_manager.daemon.connections import GuardedServerMixin
from lease_manager.daemon.haizea_lease import lease_xml, request_of
from lease_manager.daemon.lease_requests import RequestError, normalise
from lease_manager.daemon.refusals import DaemonStopping, HTTPError, check_vm_limits
from lease_manager.daemon.workers import AcceptingWorkersMixin

if TYPE_CHECKING:
    from lease_manager.daemon.service import Daemon

log = logging.getLogger("lease_manager.daemon.haizea_rpc")
HOST = "127.0.0.1"
#: the states Haizea's ``get_leases`` lists: every lease that has not ended
LIVE = ("new", "held", "queued", "scheduled", "active", "suspending", "suspended",
        "migrating", "resuming")
XMLRPC_INT_MAX = 2 ** 31 - 1
PROC_NET_TCP = Path("/proc/net/tcp")
Fault = xmlrpc.client.Fault


def peer_uid(client_port: int, server_port: int, table: Path = PROC_NET_TCP) -> int | None:
    """The user id of the process whose loopback TCP connection from ``client_port`` reaches
    ``server_port``, from the kernel's table of IPv4 connections; None if it is not there or
    the table cannot be read."""
    try:
        text = table.read_text()
    except OSError:
        return None
    local, remote = f":{client_port:04X}", f":{server_port:04X}"
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 7 and fields[1].endswith(local) and fields[2].endswith(remote):
            return int(fields[7])
    return None


class HaizeaRPC:
    """The methods Haizea's clients call, each answered as Haizea 1.0 answers it."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def _ready(self) -> Daemon:
        if not self.daemon.ready.is_set():
            raise Fault(503, "the daemon is restoring its leases: try again in a moment")
        return self.daemon

    def _call(self, fn: Any) -> Any:
        try:
            return self.daemon.call(fn)
        except DaemonStopping as exc:
            raise Fault(503, str(exc)) from None

    def test_func(self) -> int:
        return 0

    def create_lease(self, lease_xml_text: str) -> int:
        d = self._ready()
        try:
            request = normalise(request_of(lease_xml_text), d.run.nodes, d.default_vm,
                                d.clock.now(), d.plugins.extra_attributes)
            check_vm_limits(d, [request])
        except RequestError as exc:
            raise Fault(400, str(exc)) from None
        except HTTPError as exc:
            raise Fault(exc.status, exc.message) from None

        def submit(now: float) -> Any:
            lease_id = d.submit([request], now)[0].id
            return lambda: lease_id

        lease_id: int = self._call(submit)
        return lease_id

    def cancel_lease(self, lease_id: Any) -> int:
        d = self._ready()
        number = _lease_id(lease_id)

        def cancel(now: float) -> Any:
            lease = d.find(number)
            if lease is None:
                row = d.store.lease(number, d.store.db)   # with this step's changes
                fault = (Fault(404, f"no lease {number}") if row is None else
                         Fault(409, f"lease {number} is already {row['state']}"))
                return lambda: fault
            d.run.site_scheduler.cancel(lease, now, "cancelled by the user")
            return lambda: None

        fault = self._call(cancel)
        if fault is not None:
            raise fault
        return 0

    def get_leases(self) -> list[str]:
        d = self._ready()
        out: list[str] = []
        after = 0
        while True:
            rows = d.store.leases(LIVE, 1000, after)
            out.extend(lease_xml(row) for row in rows)
            if len(rows) < 1000:
                return out
            after = rows[-1]["id"]

    def get_lease(self, lease_id: Any) -> str:
        d = self._ready()
        number = _lease_id(lease_id)
        row = d.store.lease(number)
        if row is None:
            raise Fault(404, f"no lease {number}")
        return lease_xml(row)

    def get_queue(self) -> list[str]:
        d = self._ready()

        def queue(now: float) -> Any:
            sched = d.run.site_scheduler
            ids = [lease.id for lease in sched.held.values()] + [lease.id for lease in
                                                                 sched.queue]
            return lambda: ids

        rows = (d.store.lease(i) for i in self._call(queue))
        return [lease_xml(row) for row in rows if row is not None]

    def get_hosts(self) -> list[dict[str, Any]]:
        d = self._ready()
        names = d.driver.names
        types = d.run.nodes.types.names
        capacity = d.run.nodes.capacity
        cpu = types.index("CPU") if "CPU" in types else None
        mem = types.index("Memory") if "Memory" in types else None
        return [{"id": i + 1, "hostname": names[i],
                 "cpu": _xmlrpc_number(capacity[i, cpu]) if cpu is not None else 0,
                 "mem": _xmlrpc_number(capacity[i, mem]) if mem is not None else 0}
                for i in range(len(names))]

    def notify_event(self, lease_id: Any, enactment_id: Any, event: Any) -> None:
        log.info("Haizea notify_event(%r, %r, %r) ignored, as Haizea 1.0 does", lease_id,
                 enactment_id, event)


def _lease_id(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or \
            not str(value).strip().isdigit() or len(str(value).strip()) > 18:
        raise Fault(400, f"{value!r} is not a lease id")
    return int(str(value).strip())


def _xmlrpc_number(x: Any) -> int | float:
    """An amount as XML-RPC can carry it: an integer (as Haizea sends) while it fits in 32
    bits, else a double."""
    value = float(x)
    return int(value) if value.is_integer() and abs(value) <= XMLRPC_INT_MAX else value


class _Handler(SimpleXMLRPCRequestHandler):
    rpc_paths = ("/", "/RPC2")
    server: _Server

    def handle_one_request(self) -> None:
        self.server.guard.waiting(self.connection)
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_POST(self) -> None:
        length = self.headers.get("Content-Length", "")
        if not length.strip().isdigit() or int(length) > self.server.max_body:
            self.send_error(413 if length.strip().isdigit() else 411)
            self.close_connection = True
            return
        super().do_POST()

    def decode_request_content(self, data: bytes) -> bytes | None:
        self.server.guard.answering(self.connection)    # the whole request is in
        return super().decode_request_content(data)

    def log_message(self, fmt: str, *args: Any) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s", self.address_string(), fmt % args)


class _Server(GuardedServerMixin, AcceptingWorkersMixin, SimpleXMLRPCServer):
    worker_name = "lm-haizea-worker"
    allow_reuse_address = True
    request_queue_size = 64
    max_body: int

    def verify_request(self, request: Any, client_address: Any) -> bool:
        uid = peer_uid(client_address[1], self.server_address[1])
        if uid in (os.getuid(), 0):
            return True
        log.warning("Haizea XML-RPC: closed a connection from port %s of %s (only the "
                    "daemon's user and root may call)", client_address[1],
                    "an unknown user" if uid is None else f"user {uid}")
        return False



def start_haizea_rpc(daemon: Daemon) -> tuple[_Server, str]:
    """Start the endpoint on its own threads; return the server and its URL."""
    cfg = daemon.config
    port = cfg.get("daemon", "haizea-rpc-port")
    try:
        server = _Server((HOST, port), _Handler, logRequests=False, allow_none=True)
    except OSError as exc:
        raise cfg.error("daemon", "haizea-rpc-port", f"cannot listen on {HOST}:{port}: "
                                                     f"{exc.strerror}") from None
    server.start_guard(cfg.get("daemon", "max-connections"), cfg.get("daemon", "request-timeout"))
    server.max_body = cfg.get("daemon", "max-body")
    rpc = HaizeaRPC(daemon)
    for name in ("test_func", "create_lease", "cancel_lease", "get_leases", "get_lease",
                 "get_queue", "get_hosts", "notify_event"):
        server.register_function(getattr(rpc, name), name)
    thread = threading.Thread(target=server.serve_forever, name="lm-haizea-rpc", daemon=True)
    thread.start()
    url = f"http://{HOST}:{server.server_address[1]}"
    log.info("Haizea XML-RPC endpoint on %s (loopback, the daemon's user only)", url)
    return server, url


def stop_haizea_rpc(server: _Server | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()
