"""The body of ``POST /v1/leases``: lease requests as JSON (one, or a list of 1 to 1000) or as
an LWF document (``application/xml``), normalised; a bad body is an :class:`HTTPError`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from lease_manager.daemon.lease_requests import RequestError, from_lease, normalise
from lease_manager.daemon.refusals import HTTPError
from lease_manager.errors import InputError

if TYPE_CHECKING:
    from lease_manager.daemon.service import Daemon


def requests_of_body(daemon: Daemon, kind: str, data: bytes,
                     now: float) -> tuple[list[dict[str, Any]], bool]:
    """The normalised requests of a body of Content-Type ``kind``, and whether it held one
    request (answered with one view, not a list)."""
    if kind in ("application/xml", "text/xml"):
        return _lwf_requests(daemon, data, now), False
    if kind == "application/json":
        return _json_requests(daemon, data, now)
    raise HTTPError(415, f"unsupported Content-Type {kind!r} (application/json or "
                         f"application/xml)")


def _lwf_requests(d: Daemon, data: bytes, now: float) -> list[dict[str, Any]]:
    if data[:2] == b"\x1f\x8b":
        raise HTTPError(415, "compressed bodies are not accepted")
    from lease_manager.workload.lwf import read_lwf

    try:
        workload = read_lwf("request body", d.run.nodes.types, data=data,
                            attributes=d.plugins.extra_attributes)
    except InputError as exc:
        raise HTTPError(400, str(exc), field=exc.field) from None
    if not workload.leases:
        raise HTTPError(400, "lease-requests: the document holds no lease request",
                        field="lease-requests")
    try:
        return [from_lease(lease, d.run.nodes, now, now) for lease in workload.leases]
    except RequestError as exc:
        raise HTTPError(400, str(exc), field=exc.field) from None


def _json_requests(d: Daemon, data: bytes, now: float) -> tuple[list[dict[str, Any]], bool]:
    try:
        body = json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise HTTPError(400, f"the body is not valid JSON: {exc}") from None
    single = not isinstance(body, list)   # answered with one view, not a list
    bodies = [body] if single else body
    if not bodies or len(bodies) > 1000:
        raise HTTPError(400, "send one request, or a list of 1 to 1000")
    requests = []
    for i, item in enumerate(bodies):
        try:
            requests.append(normalise(item, d.run.nodes, d.default_vm, now,
                                      d.plugins.extra_attributes))
        except RequestError as exc:
            field = exc.field
            if isinstance(body, list):
                field = f"[{i}]" + (f".{field}" if field else "")
                raise HTTPError(400, f"{field}: {exc.detail}", field=field) from None
            raise HTTPError(400, str(exc), field=field or None) from None
    return requests, single


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
