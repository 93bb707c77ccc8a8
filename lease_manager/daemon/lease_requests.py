"""Lease requests as the API takes them: JSON validated field by field, or an LWF document.

A request is first *normalised* (times made absolute, durations in seconds, defaults filled)
into the dictionary the database keeps; a :class:`~lease_manager.kernel.lease.Lease` is built from
that dictionary, at submission and again when a restarted daemon restores it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.kernel.extra_attributes import ExtraAttribute, ExtraAttributeError, check_extra
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.timeutil import parse_duration, parse_instant

if TYPE_CHECKING:
    from lease_manager.kernel.resources import NodeSet, ResourceTypes


class RequestError(ValueError):
    """A request the API refuses (answered with 400): names the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}" if field else message)


FIELDS = {
    "type": "best-effort | advance-reservation | immediate | deadline (default: from start)",
    "start": "'now', 'best_effort', an ISO-8601 time or +HH:MM:SS from now",
    "deadline": "an ISO-8601 time or +HH:MM:SS (a deadline lease)",
    "duration": "seconds, HH:MM:SS or 'unlimited' (required)",
    "nodes": "number of VMs (default 1)",
    "cpu": "CPU of each VM (default from [tracefile] vm-resources)",
    "memory": "memory of each VM in MB",
    "resources": "each VM's resources as {type: amount} (instead of cpu/memory)",
    "command": "shell command each VM runs",
    "workdir": "absolute path of the folder the command runs in (the client sends its current "
               "folder; default: a folder of its own under [daemon] work-root, outside the "
               "state folder)",
    "max_price": "the most the user pays (a higher price rejects the lease)",
    "name": "the user's name for the lease",
    "extra": "free-form {name: value} attributes",
}
TYPES = {t.value: t for t in LeaseType}
MAX_VMS = 1_000_000
MAX_SECONDS = 100 * 365 * 86400      # a century: anything longer is a mistake
#: the shortest lease: well above the resolution of epoch seconds as floats (about 1e-6 s a
#: century from now), below which a lease's reservation would have no length at all
MIN_SECONDS = 0.001
MAX_COMMAND = 64 * 1024
MAX_PATH = 4096
MAX_EXTRA = 64


def _number(field: str, value: Any, *, minimum: float = 0.0, integer: bool = False,
            maximum: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(field, f"must be a number, not {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:       # an integer beyond any float (JSON allows 10**4000)
        raise RequestError(field, f"is out of range ({minimum:g} to {maximum:g})") from None
    if integer and math.isfinite(number) and not number.is_integer():
        raise RequestError(field, "must be a whole number")
    if not math.isfinite(number) or number < minimum or number > maximum:
        raise RequestError(field, f"{number:g} is out of range ({minimum:g} to {maximum:g})")
    return int(number) if integer else number


def _amount(field: str, value: Any) -> float:
    """A resource amount: 0, or from a millionth up (smaller ones overflow the arithmetic)."""
    amount = _number(field, value, maximum=1e12)
    if 0 < amount < 1e-6:
        raise RequestError(field, f"{value!r} is too small (0, or at least 1e-06)")
    return amount


def _text(field: str, value: Any, limit: int = 1024) -> str:
    if not isinstance(value, str):
        raise RequestError(field, f"must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise RequestError(field, f"is longer than {limit} characters")
    if "\x00" in value:
        raise RequestError(field, "contains a NUL character")
    return value


def _duration(field: str, value: Any, *, unlimited: bool) -> float | None:
    if isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise RequestError(field, str(exc)) from None
    else:
        seconds = _number(field, value)
    if math.isinf(seconds):
        if not unlimited:
            raise RequestError(field, "cannot be unlimited")
        return None
    if seconds <= 0:
        raise RequestError(field, "must be above 0")
    if seconds < MIN_SECONDS:
        raise RequestError(field, f"{seconds:g} s is shorter than the shortest lease "
                                  f"({MIN_SECONDS:g} s)")
    if seconds > MAX_SECONDS:
        raise RequestError(field, f"{seconds:g} s is longer than a century")
    return float(seconds)


def _instant(field: str, value: Any, now: float) -> float:
    text = _text(field, value, 64)
    try:
        t = parse_instant(text, now)
    except ValueError as exc:
        raise RequestError(field, str(exc)) from None
    if not 0 <= t <= now + MAX_SECONDS:
        raise RequestError(field, f"{text!r} is too far from now")
    return t


# Longer than ~50 lines on purpose: the fields are checked in the order they depend on each other
# (type, start, deadline, duration, VMs); split up, the rules would scatter.
def normalise(body: Any, nodes: NodeSet, default_vm: np.ndarray, now: float,
              attributes: Mapping[str, ExtraAttribute] | None = None) -> dict:
    """Check a JSON request and return it normalised (absolute times, seconds, defaults);
    ``attributes`` are the interpreted ``extra`` attributes (the core's when None)."""
    if not isinstance(body, dict):
        raise RequestError("", "a lease request must be a JSON object")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise RequestError(unknown[0], f"unknown field (known: {', '.join(FIELDS)})")
    if "duration" not in body:
        raise RequestError("duration", "is required")
    types = nodes.types
    start = body.get("start", "best_effort")
    start_text = _text("start", start, 64)
    kind = body.get("type")
    if kind is not None and _text("type", kind, 64) not in TYPES:
        raise RequestError("type", f"{kind!r} is not one of {', '.join(TYPES)}")
    deadline = _instant("deadline", body["deadline"], now) if "deadline" in body else None
    start_at: float | None = None
    if start_text in ("now",):
        start_at, inferred = now, "immediate"
    elif start_text in ("best_effort", "best-effort", ""):
        inferred = "best-effort"
    else:
        start_at, inferred = _instant("start", start_text, now), "advance-reservation"
    if deadline is not None:
        inferred = "deadline"
    kind = kind or inferred
    if kind != inferred:        # a best-effort lease with a deadline too: it would be ignored
        raise RequestError("type", f"{kind!r} does not go with start {start_text!r}"
                           + (" and a deadline" if deadline is not None else ""))
    duration = _duration("duration", body["duration"],
                         unlimited=kind in ("best-effort", "immediate"))
    if kind == "deadline":
        earliest = start_at if start_at is not None else now
        if deadline is not None and deadline <= earliest + (duration or 0):
            raise RequestError("deadline", "leaves less time than the duration")
    count = _number("nodes", body.get("nodes", 1), minimum=1, integer=True, maximum=MAX_VMS)
    vector = _vm_vector(body, types, default_vm)
    extra = _extra(body, attributes)
    return {
        "type": kind,
        "start": start_at,
        "deadline": deadline,
        "duration": duration,
        "nodes": count,
        "resources": {n: float(a) for n, a in zip(types.names, vector) if a},
        "command": _text("command", body.get("command", ""), MAX_COMMAND),
        "workdir": workdir_field(body["workdir"]) if body.get("workdir") is not None else None,
        "max_price": (_number("max_price", body["max_price"], maximum=1e15)
                      if "max_price" in body else None),
        "name": _text("name", body["name"], 256) if "name" in body else None,
        "extra": extra,
        "submitted": now,
    }


def _vm_vector(body: dict, types: ResourceTypes, default_vm: np.ndarray) -> np.ndarray:
    """A VM's amounts: ``resources``, or ``cpu``/``memory`` over the default VM's."""
    if "resources" in body and ("cpu" in body or "memory" in body):
        raise RequestError("resources", "give either resources or cpu/memory, not both")
    vector = default_vm.copy()
    if "resources" in body:
        res = body["resources"]
        if not isinstance(res, dict) or not res:
            raise RequestError("resources", "must be a non-empty object {type: amount}")
        vector = np.zeros(len(types))
        for name, amount in res.items():
            if name not in types.names:
                raise RequestError(f"resources.{name}", f"the site has no such resource "
                                   f"(it has {', '.join(types.names)})")
            vector[types.index(name)] = _amount(f"resources.{name}", amount)
    for field, type_name in (("cpu", "CPU"), ("memory", "Memory")):
        if field in body:
            if type_name not in types.names:
                raise RequestError(field, f"the site has no {type_name} resource")
            vector[types.index(type_name)] = _amount(field, body[field])
    if not (vector > 0).any():
        raise RequestError("resources", "a VM must need some resource")
    return vector


def _extra(body: dict, attributes: Mapping[str, ExtraAttribute] | None) -> dict:
    """The request's ``extra`` attributes, checked (the interpreted ones by their rules)."""
    extra = body.get("extra", {})
    if not isinstance(extra, dict) or len(extra) > MAX_EXTRA:
        raise RequestError("extra", f"must be an object of at most {MAX_EXTRA} attributes")
    for key, value in extra.items():
        _text("extra", key, 128)
        if not isinstance(value, (str, int, float, bool)) or isinstance(value, float) and \
                not math.isfinite(value):
            raise RequestError(f"extra.{key}", "must be a string, number or boolean")
        if isinstance(value, str):
            _text(f"extra.{key}", value)
    _check_interpreted(extra, attributes)
    return extra


def _check_interpreted(extra: Mapping[str, Any],
                       attributes: Mapping[str, ExtraAttribute] | None) -> None:
    try:
        check_extra(extra, attributes)
    except ExtraAttributeError as exc:
        raise RequestError(f"extra.{exc.name}", exc.detail) from None


def workdir_field(value: Any) -> str:
    """A request's ``workdir``: an absolute path (whether it exists is the daemon's check)."""
    text = _text("workdir", value, MAX_PATH)
    if not text.startswith("/"):
        raise RequestError("workdir", "must be an absolute path")
    return text


def from_lease(lease: Lease, nodes: NodeSet, now: float, offset: float) -> dict:
    """The normalised request of a lease read from an LWF document whose times are offsets
    from ``offset`` (the moment it was submitted). A lease with several ``<node-set>``
    groups keeps them all (``groups``); ``nodes`` and ``resources`` are then its total VM
    count and its first group's VM."""
    where = f"lease {lease.source_id or lease.id}"     # as the API checks JSON requests
    if lease.vms.count > MAX_VMS:
        raise RequestError("<node-set numnodes>", f"{where}: more than {MAX_VMS} VMs")
    if math.isinf(lease.requested_duration):
        if lease.type not in (LeaseType.BEST_EFFORT, LeaseType.IMMEDIATE):
            raise RequestError("<duration time>", f"{where}: {lease.type.value} leases "
                               f"cannot be unlimited")
    elif lease.requested_duration > MAX_SECONDS:
        raise RequestError("<duration time>", f"{where}: longer than a century")
    elif lease.requested_duration < MIN_SECONDS:
        raise RequestError("<duration time>", f"{where}: shorter than the shortest lease "
                                              f"({MIN_SECONDS:g} s)")
    for field, t in (("<exact time>", lease.start_request), ("<deadline time>", lease.deadline)):
        if t is not None and t > MAX_SECONDS:
            raise RequestError(field, f"{where}: more than a century from now")
    if lease.max_price is not None and not 0 <= lease.max_price <= 1e15:
        raise RequestError("<attr max-price>", f"{where}: {lease.max_price:g} is out of range "
                           f"(0 to 1e+15)")
    types = nodes.types
    for group in lease.vms.vectors:
        for name, amount in zip(types.names, group):
            _amount(f"<res type={name}>", float(amount))
    groups = [{"nodes": int(c), "resources": {n: float(a) for n, a in zip(types.names, v) if a}}
              for c, v in zip(lease.vms.counts, lease.vms.vectors)]
    return {
        "type": lease.type.value,
        "start": None if lease.start_request is None else offset + lease.start_request,
        "deadline": None if lease.deadline is None else offset + lease.deadline,
        "duration": None if math.isinf(lease.requested_duration)
        else float(lease.requested_duration),
        "nodes": lease.vms.count,
        "resources": groups[0]["resources"],
        **({"groups": groups} if len(groups) > 1 else {}),
        "command": str(lease.extra.get("command", "")),
        "workdir": (workdir_field(lease.extra["workdir"]) if "workdir" in lease.extra
                    else None),
        "max_price": lease.max_price,
        "name": lease.source_id,
        "extra": {k: v for k, v in lease.extra.items() if k not in ("command", "workdir")},
        "submitted": now,
    }


def groups_of(request: dict) -> list[dict]:
    """A normalised request's groups of alike VMs: ``[{"nodes": n, "resources": {...}}]``
    (one, unless an LWF lease gave several ``<node-set>``s)."""
    return request.get("groups") or [{"nodes": request["nodes"],
                                      "resources": request["resources"]}]


def check_stored(request: Any, nodes: NodeSet,
                 attributes: Mapping[str, ExtraAttribute] | None = None) -> None:
    """Check a normalised request read back from the database with the bounds the API
    applies to a new one (a row edited to a duration of 1e300 was restored as it was, and one
    whose ``disk-image-size`` was ``"x"`` stopped every restart); raise :class:`RequestError`
    naming the field otherwise."""
    if not isinstance(request, dict):
        raise RequestError("", "is not a JSON object")
    if request.get("type") not in TYPES:
        raise RequestError("type", f"{request.get('type')!r} is not one of {', '.join(TYPES)}")
    submitted = _number("submitted", request.get("submitted"), maximum=1e12)
    if request.get("duration") is None:
        if request["type"] not in ("best-effort", "immediate"):
            raise RequestError("duration", "cannot be unlimited")
    else:
        _duration("duration", request["duration"], unlimited=False)
    for field in ("start", "deadline"):
        if request.get(field) is not None:
            _number(field, request[field], maximum=submitted + MAX_SECONDS)
    groups = groups_of(request)
    if not isinstance(groups, list) or not groups:
        raise RequestError("groups", "must be a non-empty list")
    total = 0
    for group in groups:
        total += int(_number("nodes", group["nodes"], minimum=1, integer=True, maximum=MAX_VMS))
        resources = group["resources"]
        if not isinstance(resources, dict) or not resources:
            raise RequestError("resources", "must be a non-empty object {type: amount}")
        for name, amount in resources.items():
            if name not in nodes.types.names:
                raise RequestError(f"resources.{name}", "the site has no such resource")
            _amount(f"resources.{name}", amount)
    if total > MAX_VMS:
        raise RequestError("nodes", f"more than {MAX_VMS} VMs")
    _text("command", request.get("command"), MAX_COMMAND)
    if request.get("workdir") is not None:
        workdir_field(request["workdir"])
    if request.get("max_price") is not None:
        _number("max_price", request["max_price"], maximum=1e15)
    if request.get("name") is not None:
        _text("name", request["name"], 256)
    extra = request.get("extra")
    if not isinstance(extra, dict) or len(extra) > MAX_EXTRA:
        raise RequestError("extra", f"must be an object of at most {MAX_EXTRA} attributes")
    _check_interpreted(extra, attributes)


def build_lease(lease_id: int, request: dict, nodes: NodeSet) -> Lease:
    """The scheduler's lease for a normalised request."""
    types = nodes.types
    duration = request["duration"]
    groups = groups_of(request)
    vectors = np.array([types.vector(g["resources"]) for g in groups], dtype=float)
    vectors.flags.writeable = False
    vms = VMRequest(tuple(int(g["nodes"]) for g in groups), vectors)
    where = {"workdir": request["workdir"]} if request.get("workdir") else {}
    return Lease(lease_id, TYPES[request["type"]], request["submitted"], vms,
                 math.inf if duration is None else duration,
                 start_request=request["start"], deadline=request["deadline"],
                 source_id=request["name"],
                 extra={**{k: v for k, v in request["extra"].items() if k != "workdir"},
                        "command": request["command"], **where},
                 max_price=request["max_price"], origin=f"request {lease_id}")
