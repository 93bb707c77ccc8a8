"""The daemon's command-line client: ``lease-manager request``, ``cancel``, ``list-leases``,
``show-lease``, ``show-queue``, ``list-hosts`` (Haizea's ``haizea-request-lease`` and friends,
over the JSON API) and ``dashboard`` (a one-time link to the daemon's live dashboard).

The server and token come from ``--server``/``--token-file``, else the environment
(``LEASE_MANAGER_URL``, ``LEASE_MANAGER_TOKEN`` or ``LEASE_MANAGER_TOKEN_FILE``), else the
daemon's configuration given with ``-c`` (its state folder says where the daemon listens).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from lease_manager.daemon.client_tables import (
    LEASE_HEADER,
    lease_rows,
    short_instant,
    show,
    table,
)
from lease_manager.errors import LeaseManagerError
from lease_manager.kernel.timeutil import format_duration
from lease_manager.numbers import arg_float, arg_int, parse_float

#: how many times ``request`` tries a submission the daemon did not answer (same key each time)
SUBMIT_ATTEMPTS = 3


class DaemonUnavailable(LeaseManagerError):
    """The daemon did not answer, or answered 503 or 504: the request may be tried again
    (after ``retry_after`` seconds when the daemon said so)."""

    def __init__(self, message: str, *, retry_after: float | None = None,
                 refused: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        #: nothing listens at the daemon's address (yet: ``serve ... &`` binds a moment later)
        self.refused = refused


def _retry_after(headers: Any) -> float | None:
    """A ``Retry-After`` of seconds (0 to 60), or None."""
    text = (headers.get("Retry-After") if headers is not None else None) or ""
    return float(text) if re.fullmatch(r"[0-9]{1,2}", text.strip()) and int(text) <= 60 else None


class Client:
    """A small client of the API (also used by the tests)."""

    def __init__(self, url: str, token: str, timeout: float = 60.0) -> None:
        try:
            parts = urlsplit(url)
            _ = parts.port      # raises ValueError for a port out of range
        except ValueError as exc:
            raise LeaseManagerError(f"{url!r} is not a daemon URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise LeaseManagerError(f"{url!r} is not a daemon URL (http://HOST:PORT)")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    #: how long a call waits, in all, for a daemon that answers 503 with ``Retry-After``
    #: (restoring its leases after a restart: nothing of the request was done)
    RESTORE_WAIT = 300.0
    #: how long a call waits for a daemon that refuses connections (one started a moment ago
    #: in the background has not bound its port yet: nothing of the request reached it)
    START_WAIT = 5.0

    def call(self, method: str, path: str, body: Any = None, *,
             content_type: str = "application/json",
             headers: dict[str, str] | None = None) -> Any:
        started = time.monotonic()
        deadline = started + self.RESTORE_WAIT
        while True:
            try:
                return self._call_once(method, path, body, content_type, headers)
            except DaemonUnavailable as exc:
                if exc.refused:
                    if time.monotonic() + 0.1 > started + self.START_WAIT:
                        raise DaemonUnavailable(
                            f"{exc} (waited {self.START_WAIT:g} s for a daemon to start "
                            "listening there)", refused=True) from None
                    time.sleep(0.1)
                    continue
                if exc.retry_after is None or time.monotonic() + exc.retry_after > deadline:
                    raise
                time.sleep(exc.retry_after)

    def _call_once(self, method: str, path: str, body: Any, content_type: str,
                   headers: dict[str, str] | None) -> Any:
        # imported here: every lease-manager command builds this module's parsers, and
        # http.client, urllib.request and ssl cost a replay's start-up 30 ms
        import http.client
        import urllib.error
        import urllib.request

        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as answer:
                data = answer.read()
            try:
                return json.loads(data or b"null")
            except ValueError:
                raise LeaseManagerError(f"{self.url} did not answer in JSON: is it the "
                                        f"daemon?") from None
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read())["error"]
            except (ValueError, KeyError, TypeError, OSError, http.client.HTTPException):
                message = exc.reason
            text = f"the daemon refused: {message} (HTTP {exc.code})"
            if exc.code in (503, 504):
                raise DaemonUnavailable(text, retry_after=_retry_after(exc.headers)) from None
            raise LeaseManagerError(text) from None
        except urllib.error.URLError as exc:
            raise DaemonUnavailable(f"cannot reach the daemon at {self.url}: {exc.reason}",
                                    refused=isinstance(exc.reason, ConnectionRefusedError)
                                    ) from None
        except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise DaemonUnavailable(f"the daemon at {self.url} did not answer: "
                                    f"{exc or type(exc).__name__}") from None

    def submit(self, request: dict, *, key: str | None = None) -> dict:
        """Submit one request; with an idempotency ``key``, submitting it again (after a
        timeout, say) returns the first answer instead of a second lease."""
        return self.call("POST", "/v1/leases", request, headers=_key_header(key))

    def submit_lwf(self, xml: bytes, *, key: str | None = None,
                   workdir: str | None = None) -> list[dict]:
        """Submit an LWF document; its leases run in ``workdir`` unless they name one."""
        query = f"?workdir={quote(workdir, safe='')}" if workdir else ""
        return self.call("POST", "/v1/leases" + query, xml, content_type="application/xml",
                         headers=_key_header(key))

    def lease(self, lease_id: int) -> dict:
        return self.call("GET", f"/v1/leases/{lease_id}")

    def leases(self, states: str = "", page: int = 1000) -> list[dict]:
        """Every lease (in these states), fetched a page at a time."""
        out: list[dict] = []
        while True:
            query = f"?limit={page}&after={out[-1]['id'] if out else 0}"
            batch = self.call("GET", "/v1/leases" + query + (f"&state={states}" if states
                                                             else ""))
            out += batch
            if len(batch) < page:
                return out

    def cancel(self, lease_id: int) -> dict:
        return self.call("DELETE", f"/v1/leases/{lease_id}")

    def queue(self) -> list[dict]:
        return self.call("GET", "/v1/queue")

    def hosts(self, page: int = 1000) -> list[dict]:
        """Every host, fetched a page at a time."""
        out: list[dict] = []
        while True:
            batch = self.call("GET", f"/v1/hosts?limit={page}&from={len(out)}")
            out += batch
            if len(batch) < page:
                return out

    def dashboard_url(self) -> str:
        """A link to the daemon's dashboard with a fresh one-time code (good once, for a
        minute: opening it gives the browser a session and drops the code from the URL)."""
        answer = self.call("POST", "/v1/dashboard/code", {})
        return f"{self.url}/dashboard?code={answer['code']}"


def _key_header(key: str | None) -> dict[str, str]:
    return {} if key is None else {"Idempotency-Key": key}


def submit_with_retries(submit: Any, attempts: int = SUBMIT_ATTEMPTS,
                        pause: float = 1.0) -> Any:
    """Call ``submit(key)`` with one fresh idempotency key, again while the daemon does not
    answer (a retried submission cannot create a second lease)."""
    import uuid

    key = uuid.uuid4().hex
    for attempt in range(attempts):
        try:
            return submit(key)
        except DaemonUnavailable:
            if attempt == attempts - 1:
                raise
            time.sleep(pause)
    raise AssertionError("unreachable")


#: seconds a client waits for a token file that is not there yet (a daemon just started in
#: the background creates it a moment later)
TOKEN_WAIT = 5.0


def _read_token(path: Path) -> str:
    deadline = time.monotonic() + TOKEN_WAIT
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.read_text().strip()


def client_from(args: argparse.Namespace) -> Client:
    """Find the server and token: flags, then the environment, then the configuration."""
    url = args.server or os.environ.get("LEASE_MANAGER_URL")
    token = os.environ.get("LEASE_MANAGER_TOKEN")
    token_file = args.token_file or os.environ.get("LEASE_MANAGER_TOKEN_FILE")
    if args.config and (not url or not (token or token_file)):
        from lease_manager.config.schema import load_config
        from lease_manager.plugins import Plugins

        cfg = load_config(args.config, Plugins().schema, args.set)
        state = Path(cfg.get("daemon", "state-dir"))
        info_path = state / "daemon.json"
        info = json.loads(info_path.read_text()) if info_path.is_file() else {}
        url = url or info.get("url") or (f"http://{cfg.get('daemon', 'host')}:"
                                         f"{cfg.get('daemon', 'port')}")
        token_file = token_file or cfg.get("daemon", "token-file") or str(state / "token")
    if not url:
        raise LeaseManagerError("no daemon given: use --server URL or -c CONFIG.ini, or set "
                                "LEASE_MANAGER_URL")
    if args.token_file or not token:
        if not token_file:
            raise LeaseManagerError("no token given: use --token-file, -c CONFIG.ini, or set "
                                    "LEASE_MANAGER_TOKEN / LEASE_MANAGER_TOKEN_FILE")
        try:
            token = _read_token(Path(token_file))
        except OSError as exc:
            raise LeaseManagerError(f"cannot read the token file {token_file}: "
                                    f"{exc.strerror}") from None
    return Client(url, token)


# ---------------------------------------------------------------------------- commands
def request_command(args: argparse.Namespace) -> int:
    client = client_from(args)
    workdir = str(Path(args.workdir or os.getcwd()).resolve())
    if args.file:
        try:
            xml = Path(args.file).read_bytes()
        except OSError as exc:
            raise LeaseManagerError(f"{args.file}: {exc.strerror}") from None
        haizea = _haizea_lease(args.file, xml)
        if haizea is not None:
            haizea["workdir"] = workdir
            views = [submit_with_retries(lambda key: client.submit(haizea, key=key))]
        else:
            views = submit_with_retries(lambda key: client.submit_lwf(xml, key=key,
                                                                      workdir=workdir))
    else:
        if args.duration is None:
            raise LeaseManagerError("-d/--duration is required (or -f lease.xml)")
        body: dict[str, Any] = {"start": args.start, "duration": _duration(args.duration),
                                "nodes": args.nodes, "workdir": workdir}
        for key, value in (("cpu", args.cpu), ("memory", args.mem), ("command", args.command),
                           ("deadline", args.deadline), ("name", args.name),
                           ("max_price", args.max_price)):
            if value is not None:
                body[key] = value
        extra = {key: value for key, value in (("disk-image", args.vmimage),
                                               ("disk-image-size", args.vmimagesize),
                                               ("preemptible", args.preemptible))
                 if value is not None}
        if extra:
            body["extra"] = extra
        views = [submit_with_retries(lambda key: client.submit(body, key=key))]
    human = "\n".join(f"lease {v['id']}: {v['state']}"
                      + (f" ({v['reason']})" if v["reason"] else "")
                      + (f", starts {short_instant(v['plan'][0]['start'])}" if v["plan"] else "")
                      for v in views)
    show(args, views if len(views) > 1 else views[0], human)
    return 1 if all(v["state"] == "rejected" for v in views) else 0


def _haizea_lease(path: str, data: bytes) -> dict | None:
    """The JSON request of a file holding one Haizea ``<lease>`` element (what
    ``haizea-request-lease -f`` sends), or None for any other document (LWF)."""
    from lease_manager.daemon.haizea_lease import request_of
    from lease_manager.daemon.lease_requests import RequestError

    head = data[:4096].decode("utf-8", "replace")
    if not re.search(r"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*<lease[\s>/]", head, re.S):
        return None
    try:
        return request_of(data.decode("utf-8"))
    except (RequestError, UnicodeDecodeError) as exc:
        raise LeaseManagerError(f"{path}: {exc}") from None


def _duration(text: str) -> Any:
    """``-d``: seconds as a number (ASCII digits only: ``٣٠`` was read as 30), else the text
    for the daemon to read (``HH:MM:SS``, ``unlimited``; it refuses anything else)."""
    if re.fullmatch(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+", text.strip()):
        return parse_float(text)
    return text


def cancel_command(args: argparse.Namespace) -> int:
    if (args.lease is None) == (args.lease_option is None):
        raise LeaseManagerError("give the lease id once: cancel ID or cancel -l ID")
    view = client_from(args).cancel(args.lease if args.lease is not None
                                    else args.lease_option)
    return show(args, view, f"lease {view['id']}: {view['state']}")


def list_leases_command(args: argparse.Namespace) -> int:
    views = client_from(args).leases(args.state or "")
    return show(args, views, table(lease_rows(views), LEASE_HEADER))


def show_lease_command(args: argparse.Namespace) -> int:
    v = client_from(args).lease(args.lease)
    lines = [f"lease {v['id']} ({v['type']}): {v['state']}"
             + (f" - {v['reason']}" if v["reason"] else "")]
    req = v["request"]
    lines.append(f"  requested: {req['nodes']} VM(s) of "
                 + " ".join(f"{k}:{a:g}" for k, a in req["resources"].items())
                 + " for " + (req["duration"] if isinstance(req["duration"], str)
                              else format_duration(req["duration"]))
                 + (f", start {short_instant(req['start'])}" if req["start"] else "")
                 + (f", deadline {short_instant(req['deadline'])}" if req["deadline"] else ""))
    if req["command"]:
        lines.append(f"  command:   {req['command']}")
    if req.get("workdir"):
        lines.append(f"  in folder: {req['workdir']}")
    lines.append(f"  submitted {short_instant(v['submitted'])}, "
                 f"started {short_instant(v['start'])}, ended {short_instant(v['end'])}")
    for seg in v["plan"]:
        lines.append(f"  plan: {seg['kind']:8} {short_instant(seg['start'])} -> "
                     f"{short_instant(seg['end'])} on {','.join(seg['nodes'])}")
    for e in v.get("history", []):
        lines.append(f"  {short_instant(e['time'])}  {e['from'] or '':>10} -> {e['to']:<10} "
                     f"{e['detail']}")
    for log in v.get("logs", []):
        vm = "every VM" if log["vm"] == "all" else f"VM {log['vm']}"
        lines.append(f"  {vm} output: {log['out']}" if log["out"] == log["err"] else
                     f"  {vm} output: {log['out']}  errors: {log['err']}")
    return show(args, v, "\n".join(lines))


def show_queue_command(args: argparse.Namespace) -> int:
    views = client_from(args).queue()
    rows = [[str(v["position"])] + r for v, r in zip(views, lease_rows(views))]
    return show(args, views, table(rows, ["POS"] + LEASE_HEADER) if views else "queue empty")


def list_hosts_command(args: argparse.Namespace) -> int:
    hosts = client_from(args).hosts()
    rows = [[h["name"], " ".join(f"{k}:{a:g}" for k, a in h["capacity"].items()),
             " ".join(f"{k}:{a:g}" for k, a in h["free"].items()),
             ",".join(str(x["lease"]) for x in h["leases"]) or "-"] for h in hosts]
    return show(args, hosts, table(rows, ["HOST", "CAPACITY", "FREE", "LEASES"]))


def dashboard_command(args: argparse.Namespace) -> int:
    url = client_from(args).dashboard_url()
    if args.open:
        import webbrowser

        if webbrowser.open(url):
            print("opened the dashboard in your browser (the link is good once)")
            return 0
        print("no browser could be opened here; open this link (good once, for a minute):")
    print(url)
    return 0


def add_client_commands(sub: Any) -> None:
    """Add the client's subcommands to ``lease-manager``'s parser."""

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("-c", "--config", help="the daemon's configuration (finds its address "
                       "and token)")
        p.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                       help="override a configuration option (repeatable)")
        p.add_argument("-s", "--server", help="the daemon's URL (env LEASE_MANAGER_URL)")
        p.add_argument("--token-file", help="file with the API token "
                       "(env LEASE_MANAGER_TOKEN_FILE, or the token in LEASE_MANAGER_TOKEN)")
        p.add_argument("--json", action="store_true", help="print JSON (for scripts)")

    req = sub.add_parser("request", help="ask a running daemon for a lease",
                         description="Request a lease, Haizea-style: -t now (immediate), "
                         "best_effort (queued), an ISO-8601 time or +HH:MM:SS (advance "
                         "reservation); with --deadline, a deadline lease. Prints the lease's "
                         "id and state; writes no file.")
    common(req)
    req.add_argument("-t", "--start", default="best_effort",
                     help="now | best_effort | ISO-8601 time | +HH:MM:SS (default best_effort)")
    req.add_argument("-d", "--duration", help="seconds, HH:MM:SS or unlimited")
    req.add_argument("-n", "--nodes", "--numnodes", type=arg_int, default=1,
                     help="number of VMs (default 1)")
    req.add_argument("--cpu", type=arg_float, help="CPU of each VM, in the site's units "
                     "(Haizea's -c is our --config: give --cpu)")
    req.add_argument("-m", "--mem", type=arg_float, help="memory of each VM (MB)")
    req.add_argument("-i", "--vmimage", help="disk image of the VMs (sent to their nodes "
                     "first under [preparation] lease-preparation = imagetransfer)")
    req.add_argument("-z", "--vmimagesize", type=arg_int, help="size of the disk image (MB)")
    preempt = req.add_mutually_exclusive_group()
    preempt.add_argument("--preemptible", dest="preemptible", action="store_const",
                         const=True, help="the lease may be preempted (the default)")
    preempt.add_argument("--non-preemptible", dest="preemptible", action="store_const",
                         const=False, help="the lease may not be preempted")
    req.add_argument("--command", help="shell command each VM runs (in --workdir, with a "
                     "clean environment: PATH, the user's account, the locale and LM_* "
                     "variables)")
    req.add_argument("--workdir", metavar="DIR", help="the folder the command runs in, on the "
                     "daemon's machine (default: the current folder)")
    req.add_argument("--deadline", help="finish by this time (ISO-8601 or +HH:MM:SS)")
    req.add_argument("--name", help="a name for the lease")
    req.add_argument("--max-price", type=arg_float, help="the most you pay for it")
    req.add_argument("-f", "--file", help="an LWF document of lease requests (times are "
                     "offsets from now), or one Haizea <lease> element (absolute times, as "
                     "haizea-request-lease -f takes), instead of the options above")
    req.set_defaults(func=request_command)

    can = sub.add_parser("cancel", help="cancel a lease",
                         description="Cancel a lease of the running daemon (its VMs are "
                                     "stopped); prints its new state. Writes no file.")
    common(can)
    can.add_argument("lease", type=arg_int, nargs="?", help="lease id")
    can.add_argument("-l", "--lease", dest="lease_option", type=arg_int, metavar="LEASE",
                     help="lease id (Haizea's haizea-cancel-lease -l)")
    can.set_defaults(func=cancel_command)

    ls = sub.add_parser("list-leases", help="list the daemon's leases",
                        description="Print the running daemon's leases, one per line (id, "
                                    "state, times, VMs). Writes no file.")
    common(ls)
    ls.add_argument("--state", help="only these states (comma-separated)")
    ls.set_defaults(func=list_leases_command)

    sh = sub.add_parser("show-lease", help="one lease, its plan and its history",
                        description="Print one lease of the running daemon: its request, "
                                    "plan (reservations and nodes) and history. Writes no "
                                    "file.")
    common(sh)
    sh.add_argument("lease", type=arg_int, help="lease id")
    sh.set_defaults(func=show_lease_command)

    q = sub.add_parser("show-queue", help="the wait queue, in order",
                       description="Print the running daemon's wait queue, in scheduling "
                                   "order. Writes no file.")
    common(q)
    q.set_defaults(func=show_queue_command)

    h = sub.add_parser("list-hosts", help="the site's nodes and what runs on them now",
                       description="Print the running daemon's nodes: capacity, what is free "
                                   "and the leases on each now. Writes no file.")
    common(h)
    h.set_defaults(func=list_hosts_command)

    dash = sub.add_parser("dashboard", help="a link to the daemon's live dashboard",
                          description="Print a link to the running daemon's dashboard (the "
                                      "plan as a Gantt chart, the queue, the nodes, power "
                                      "and counters, updated live). The link carries a "
                                      "one-time code, good for a minute, that gives the "
                                      "browser a session; the token itself never goes in a "
                                      "URL. Writes no file.")
    common(dash)
    dash.add_argument("--open", action="store_true",
                      help="open the link in a web browser instead of printing it")
    dash.set_defaults(func=dashboard_command)
