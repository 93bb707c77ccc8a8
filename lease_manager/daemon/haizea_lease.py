"""Haizea 1.0's lease XML (one ``<lease>`` element, as its clients send and read it) to and
from the daemon's requests.

Haizea's clients describe a lease as::

    <lease id="3" state="8" preemptible="True" submit-time="2026-11-28 10:00:00.00">
      <nodes><node-set numnodes="2">
        <res type="CPU" amount="100"/><res type="Memory" amount="1024"/>
      </node-set></nodes>
      <start><exact time="2026-11-28 12:00:00.00"/></start>   (or <now/>, or nothing)
      <duration time="01:00:00.00"/>
      <software><disk-image id="foo.img" size="1024"/></software>    (or <none/>)
    </lease>

Unlike an LWF file, times are absolute (``YYYY-MM-DD HH:MM:SS``, read as UTC; the daemon also
takes ISO-8601 and ``+HH:MM:SS``) and durations ``[D:]HH:MM:SS[.ss]``. ``id``, ``state`` and
``submit-time`` of a lease sent to the daemon are ignored (the daemon gives the id, as Haizea
does). Amounts are in the units of the daemon's site: a daemon serving Haizea's clients
unchanged describes its nodes as Haizea does (``CPU:100`` for one CPU).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from lease_manager.daemon.lease_requests import RequestError, groups_of
from lease_manager.workload.lwf import TRUE_VALUES

#: Haizea 1.0's lease states (``Lease.STATE_*``), by the daemon's state names; a suspended
#: lease is Suspended-Scheduled (12) when it has a plan, Suspended-Queued (11) otherwise
HAIZEA_STATES = {"new": 0, "held": 1, "rejected": 2, "scheduled": 3, "queued": 4,
                 "cancelled": 5, "active": 8, "suspending": 9, "suspended": 11,
                 "migrating": 13, "resuming": 14, "done": 16, "failed": 17}
SUSPENDED_SCHEDULED = 12
#: what Haizea writes for an unlimited duration (its client's "a century")
UNLIMITED = 36500 * 86400
MAX_LEASE_XML = 64 * 1024


def request_of(text: str) -> dict[str, Any]:
    """The daemon's JSON request (for :func:`~lease_manager.daemon.lease_requests.normalise`)
    of Haizea's ``<lease>`` XML; :class:`RequestError` names the element at fault."""
    from lxml import etree

    if not isinstance(text, str) or len(text) > MAX_LEASE_XML:
        raise RequestError("lease", f"send one <lease> element as a string of at most "
                                    f"{MAX_LEASE_XML} characters")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False)
    try:
        root = etree.fromstring(text.encode(), parser)
    except etree.XMLSyntaxError as exc:
        raise RequestError("lease", f"malformed XML: {exc.msg}") from None
    if root.tag != "lease":
        raise RequestError("lease", f"the root element is <{root.tag}>, not <lease>")
    sets = root.findall("nodes/node-set")
    if len(sets) != 1:
        raise RequestError("<nodes>", f"{len(sets)} <node-set> elements: Haizea's clients "
                                      "send one (send several as LWF to the JSON API)")
    node_set = sets[0]
    body: dict[str, Any] = {"nodes": _integer(node_set, "numnodes"), "resources": {}}
    for res in node_set.iterfind("res"):
        body["resources"][res.get("type") or ""] = _amount(res)
    start = root.find("start")
    if start is None:
        raise RequestError("<start>", "missing (empty for best-effort, <now/> or <exact>)")
    exact = start.find("exact")
    if exact is not None:
        body["start"] = _attr(exact, "time")
    elif start.find("now") is not None:
        body["start"] = "now"
    else:
        body["start"] = "best_effort"
    duration = root.find("duration")
    if duration is None:
        raise RequestError("<duration>", "missing (<duration time=\"HH:MM:SS\"/>)")
    body["duration"] = _attr(duration, "time")
    deadline = root.find("deadline")
    if deadline is not None:
        body["deadline"] = _attr(deadline, "time")
    extra: dict[str, Any] = {}
    preemptible = root.get("preemptible")
    if preemptible is not None:
        extra["preemptible"] = preemptible.strip().lower() in TRUE_VALUES
    image = root.find("software/disk-image")
    if image is not None:
        extra["disk-image"] = _attr(image, "id")
        extra["disk-image-size"] = _integer(image, "size")
    if extra:
        body["extra"] = extra
    return body


def _attr(elem: Any, name: str) -> str:
    value = elem.get(name)
    if value is None or not value.strip():
        raise RequestError(f"<{elem.tag} {name}>", "missing")
    return str(value).strip()


def _integer(elem: Any, name: str) -> int:
    text = _attr(elem, name)
    if not text.isdigit() or len(text) > 12:
        raise RequestError(f"<{elem.tag} {name}>", f"{text!r} is not a whole number")
    return int(text)


def _amount(res: Any) -> float:
    text = _attr(res, "amount")
    try:
        amount = float(text)
    except ValueError:
        raise RequestError("<res amount>", f"{text!r} is not a number") from None
    return amount


# ------------------------------------------------------------------------------ answers
def lease_xml(row: Any) -> str:
    """Haizea's ``<lease>`` XML of a lease of the daemon (its database row), as Haizea's
    ``get_leases`` and ``get_queue`` answer: what Haizea's ``Lease.from_xml_string`` reads."""
    from lxml import etree

    req = json.loads(row["request"])
    state = HAIZEA_STATES.get(row["state"], 0)
    if row["state"] == "suspended" and json.loads(row["plan"]):
        state = SUSPENDED_SCHEDULED
    extra = req.get("extra") or {}
    lease = etree.Element("lease", id=str(row["id"]), state=str(state),
                          preemptible=str(_preemptible(extra.get("preemptible", True))))
    lease.set("submit-time", haizea_time(row["submit"]))
    nodes = etree.SubElement(lease, "nodes")
    for group in groups_of(req):
        node_set = etree.SubElement(nodes, "node-set", numnodes=str(group["nodes"]))
        for name, amount in group["resources"].items():
            etree.SubElement(node_set, "res", type=name, amount=_number(amount))
    start = etree.SubElement(lease, "start")
    kind = row["type"]
    if kind == "immediate":
        etree.SubElement(start, "now")
    elif kind in ("advance-reservation", "deadline"):
        at = req["start"] if req.get("start") is not None else row["submit"]
        etree.SubElement(start, "exact", time=haizea_time(at))
    seconds = req["duration"] if req["duration"] is not None else UNLIMITED
    etree.SubElement(lease, "duration", time=haizea_duration(seconds))
    if req.get("deadline") is not None:
        etree.SubElement(lease, "deadline", time=haizea_time(req["deadline"]))
    software = etree.SubElement(lease, "software")
    if extra.get("disk-image") is not None:
        etree.SubElement(software, "disk-image", id=str(extra["disk-image"]),
                         size=_number(extra.get("disk-image-size", 0)))
    else:
        etree.SubElement(software, "none")
    return str(etree.tostring(lease, encoding="unicode"))


def _preemptible(value: Any) -> bool:
    return value.strip().lower() in TRUE_VALUES if isinstance(value, str) else bool(value)


def _number(x: Any) -> str:
    """An amount as Haizea reads it: a whole number without a point (it reads ``int()``)."""
    value = float(x)
    return str(int(value)) if value.is_integer() else repr(value)


def haizea_time(seconds: float) -> str:
    """Epoch seconds as Haizea writes a time (``YYYY-MM-DD HH:MM:SS.ss``, here in UTC)."""
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 10000:02d}"


def haizea_duration(seconds: float) -> str:
    """Seconds as Haizea writes a duration: ``HH:MM:SS.ss``, ``D:HH:MM:SS.ss`` from a day."""
    if not math.isfinite(seconds):
        seconds = UNLIMITED
    hundredths = round(seconds * 100)
    days, rest = divmod(hundredths, 86400 * 100)
    hours, rest = divmod(rest, 3600 * 100)
    minutes, rest = divmod(rest, 60 * 100)
    text = f"{hours:02d}:{minutes:02d}:{rest // 100:02d}.{rest % 100:02d}"
    return f"{days}:{text}" if days else text
