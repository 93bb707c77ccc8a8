"""Haizea's lease workload format (LWF): reading and writing XML lease workloads.

An LWF file lists lease requests, each with its arrival time, and may describe the site it was
made for (see ``lease_manager/workload/schemas/lwf.xsd`` for the format, validated on every
read). Unlike SWF it expresses every lease type, VMs of several sizes, and free attributes:

- ``<start/>`` best-effort; ``<start><now/></start>`` immediate; ``<start><exact time=.../>``
  advance reservation (``start_request``); with ``<deadline>`` any of these is a deadline lease
  whose ``start_request`` is the earliest start (the arrival for ``<now/>``, None for
  ``<start/>``).
- Every ``<node-set>`` of a lease is one group of identical VMs (``VMRequest.counts`` /
  ``vectors``, over the run's resource types; types a node-set does not name are 0; the
  instances of a multi-instance resource are pooled).
- ``<duration>`` is ``requested_duration`` (``unlimited`` = ``math.inf``), ``<realduration>``
  ``actual_duration`` (None when absent).
- The file's lease ``id`` is kept as ``source_id``; ``id`` is assigned sequentially from
  ``first_id`` in arrival order. ``origin`` is ``file:line`` of the ``<lease-request>``.
- ``lease.extra``: ``preemptible`` (bool, only when the attribute is given: absent means
  preemptible), ``disk-image`` (str) and ``disk-image-size`` (int, MB) for a
  ``<disk-image>`` software environment (nothing for ``<none/>``), and every
  ``<extra><attr name= value=>`` as a string. Those three names are reserved; the attribute
  ``max-price`` sets ``lease.max_price`` (the user's maximum price) instead.

Requests out of arrival order are sorted by arrival (equal arrivals keep file order; ids follow
the sorted order), with a warning naming the first one's line (``LWFWorkload.warnings``), as
Haizea 1.1 sorts them.
Every error (malformed XML, schema violation, bad time, resource type the site does not have,
...) is a :class:`TraceError` naming the file, the line and the element or attribute.

The file is read whole (schema validation needs the tree): LWF suits workloads of thousands of
leases; replay long traces from SWF. :func:`write_lwf` streams.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lease_manager.energy.lease_power import MAX_LEASE_WATTS, WATTS_ATTRIBUTE
from lease_manager.errors import TraceError
from lease_manager.input_files import input_problem
from lease_manager.kernel.extra_attributes import ExtraAttribute, ExtraAttributeError, check_extra
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.resources import NodeSet, ResourceTypes
from lease_manager.kernel.timeutil import MIN_DURATION, parse_duration
from lease_manager.numbers import parse_float
from lease_manager.workload.trace_kind import is_lwf as is_lwf

if TYPE_CHECKING:
    import logging

    from lxml import etree

#: keys of ``lease.extra`` that LWF elements and attributes (not ``<attr>``) set
RESERVED_EXTRA = ("preemptible", "disk-image", "disk-image-size")
#: the ``<extra>`` attribute that carries a user's maximum price (``lease.max_price``): LWF has
#: no element for it
MAX_PRICE = "max-price"

TRUE_VALUES = frozenset({"true", "yes"})


@attrs.define(eq=False)
class LWFWorkload:
    """What an LWF file holds: its name, the site it describes (if any) and its leases."""

    name: str | None
    site: NodeSet | None
    leases: list[Lease]
    description: str | None = None
    #: what was read but not as written (requests out of arrival order, sorted), one line each
    warnings: list[str] = attrs.field(factory=list)


def _log() -> logging.Logger:
    """This module's logger (logging is loaded when a message is written: start-up)."""
    import logging

    return logging.getLogger(__name__)


# ------------------------------------------------------------------------------ schema
def schema_path() -> Path:
    """Where the LWF schema is (a file inside the installed package)."""
    import importlib.resources

    ref = importlib.resources.files("lease_manager.workload").joinpath("schemas", "lwf.xsd")
    return Path(str(ref))


@functools.lru_cache(maxsize=1)
def lwf_schema() -> etree.XMLSchema:
    """The LWF schema, parsed once."""
    import importlib.resources

    from lxml import etree

    ref = importlib.resources.files("lease_manager.workload").joinpath("schemas", "lwf.xsd")
    return etree.XMLSchema(etree.fromstring(ref.read_bytes()))


# ----------------------------------------------------------------------------- reading
def read_lwf(path: str | Path, types: ResourceTypes | None = None, *,
             first_id: int = 1, data: bytes | None = None,
             attributes: Mapping[str, ExtraAttribute] | None = None) -> LWFWorkload:
    """Read and validate an LWF file; leases get ids ``first_id, first_id + 1, ...``.

    ``types`` are the run's resource types (lease vectors are over them); None means the types
    the file's ``<site>`` declares (an error if it has none). With ``data``, the document is
    those bytes and ``path`` only names it in messages (a request body, say). The ``<extra>``
    attributes that the core or a plugin interprets (``attributes``: the core's when None) are
    checked against their declarations.
    """
    file = str(path)
    root = _parse(file, data)
    site_elem = root.find("site")
    site = _site(site_elem, file) if site_elem is not None else None
    if types is None:
        if site is None:
            raise TraceError("the workload describes no site: give the resource types of the "
                             "site it runs on", file=file, line=root.sourceline)
        types = site.types
    description = root.findtext("description")
    reader = _LeaseReader(file, types, first_id, attributes)
    leases = [reader.lease(request) for request in root.iterfind("lease-requests/lease-request")]
    warnings = []
    if reader.out_of_order:   # Haizea 1.1 sorts them too: sort, keeping equal arrivals in order
        line, arrival, before = reader.out_of_order[0]
        warnings.append(f"{file}:{line}: {len(reader.out_of_order)} lease request(s) out of "
                        f"arrival order (the first arrives at {arrival:g} s, after "
                        f"{before:g} s): sorted by arrival time")
        _log().warning("%s", warnings[-1])
        leases.sort(key=lambda lease: lease.submit)
        for number, lease in enumerate(leases, first_id):
            lease.id = number
    return LWFWorkload(root.get("name"), site, leases,
                       description.strip() if description is not None else None, warnings)


def _parse(file: str, raw: bytes | None = None) -> etree._Element:
    from lxml import etree  # here: a replay of an SWF trace never loads lxml

    problem = "" if raw is not None else input_problem(file, limit=None)
    if problem:
        raise TraceError(f"the workload {problem}", file=file)
    try:
        if raw is None:
            raw = Path(file).read_bytes()
    except FileNotFoundError:
        raise TraceError("trace file not found", file=file) from None
    except OSError as exc:
        raise TraceError(f"cannot open trace file: {exc.strerror}", file=file) from None
    if raw[:2] == b"\x1f\x8b":
        import gzip

        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise TraceError(f"cannot decompress: {exc}", file=file) from None
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             remove_comments=False, huge_tree=True)
    try:
        root = etree.fromstring(raw, parser)
    except etree.XMLSyntaxError as exc:
        message = exc.msg or str(exc)
        message = re.sub(r",? line \d+, column \d+$", "", message)
        raise TraceError(f"malformed XML: {message}", file=file, line=exc.lineno or None,
                         field="XML") from None
    # entities are not expanded (no XXE, no billion laughs); a reference left in the tree
    # would make the schema validator fail with "Internal error"
    for entity in root.iter(etree.Entity):
        raise TraceError(f"entity references ({entity.text}) are not allowed in LWF",
                         file=file, line=entity.sourceline or None, field="XML")
    schema = lwf_schema()
    if not schema.validate(root.getroottree()):
        errors = list(schema.error_log)
        first = errors[0]
        field, message = _explain_schema_error(first.message)
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more schema error{'s' * (len(errors) > 2)})"
        raise TraceError(message, file=file, line=first.line or None, field=field)
    return root


_TIME_HELP = "HH:MM:SS[.ss], DD:HH:MM:SS[.ss] or seconds"
_DURATION_HELP = "HH:MM:SS[.ss], DD:HH:MM:SS[.ss], seconds or 'unlimited'"
_ATOMIC_HELP = {
    "xs:positiveInteger": "an integer above 0",
    "count": "an integer above 0",
    "xs:nonNegativeInteger": "an integer >= 0",
    "amount": "a number >= 0",
    "xs:decimal": "a number",
    "xs:NMTOKEN": "a name without spaces",
    "xs:NMTOKENS": "names separated by spaces",
    "name": "a non-empty name",
}


def _explain_schema_error(message: str) -> tuple[str, str]:
    """``(field, message)`` of a schema validation message, in the words of our errors."""
    m = re.match(r"Element '([^']*)'(?:, attribute '([^']*)')?: (.*)", message, re.S)
    if not m:
        return "schema", message.strip()
    element, attribute, text = m.group(1), m.group(2), m.group(3).strip().rstrip(".")
    field = f"<{element} {attribute}>" if attribute else f"<{element}>"
    if (p := re.match(r"\[facet 'pattern'\] The value '(.*)' is not accepted", text, re.S)):
        if element == "duration":
            return field, f"{p.group(1)!r} is not a duration ({_DURATION_HELP})"
        return field, f"{p.group(1)!r} is not a time ({_TIME_HELP})"
    if (p := re.match(r"The attribute '(.*)' is required but missing", text)):
        return field, f"the attribute {p.group(1)!r} is required"
    if (p := re.match(r"The attribute '(.*)' is not allowed", text)):
        return field, f"unknown attribute {p.group(1)!r}"
    if (p := re.match(r"\[facet 'enumeration'\] The value '(.*)' is not an element of the set "
                      r"\{(.*)\}", text, re.S)):
        return field, f"{p.group(1)!r} is not one of {p.group(2)}"
    if (p := re.match(r"\[facet 'minInclusive'\] The value '(.*)' is less than the minimum "
                      r"value allowed \('(.*)'\)", text, re.S)):
        return field, f"{p.group(1)!r} is below the minimum {p.group(2)}"
    if (p := re.match(r"\[facet 'maxInclusive'\] The value '(.*)' is greater than the "
                      r"maximum value allowed \('(.*)'\)", text, re.S)):
        unit = " nodes or VMs" if attribute == "numnodes" else ""
        return field, f"{p.group(1)!r} is above the maximum {p.group(2)}{unit}"
    if (p := re.match(r"'(.*)' is not a valid value of the (?:local )?atomic type '(.*)'",
                      text, re.S)):
        return field, f"{p.group(1)!r} is not {_ATOMIC_HELP.get(p.group(2), p.group(2))}"
    if (p := re.match(r"This element is not expected\. Expected is (?:one of )?\( (.*) \)",
                      text, re.S)):
        return field, f"element not allowed here (expected: {p.group(1)})"
    if text.startswith("This element is not expected"):
        return field, "element not allowed here"
    if (p := re.match(r"Missing child element\(s\)\. Expected is (?:one of )?\( (.*) \)",
                      text, re.S)):
        return field, f"a child element is missing (expected: {p.group(1)})"
    if (p := re.match(r"Duplicate key-sequence \['(.*)'\] in unique identity-constraint "
                      r"'(.*)'", text, re.S)):
        what = "resource type" if p.group(2).startswith("resource") else "attribute name"
        return field, f"{what} {p.group(1)!r} is given twice"
    if (p := re.match(r"No matching global declaration available for the validation root",
                      text)):
        return field, "not an LWF file: the root element must be <lease-workload>"
    return field, text


def _site(elem: etree._Element, file: str) -> NodeSet:
    names_elem = elem.find("resource-types")
    try:
        types = ResourceTypes(tuple(names_elem.get("names").split()))
    except ValueError as exc:
        raise TraceError(str(exc), file=file, line=names_elem.sourceline,
                         field="<resource-types names>") from None
    if not types.names:
        raise TraceError("no resource types given", file=file, line=names_elem.sourceline,
                         field="<resource-types names>")
    rows = []
    total = 0
    for node_set in elem.iterfind("nodes/node-set"):
        count = _count(node_set, file)
        total += count
        if total > MAX_SITE_NODES:   # before anything that size is allocated
            raise TraceError(f"the site has more than {MAX_SITE_NODES:,} nodes", file=file,
                             line=node_set.sourceline, field="<node-set numnodes>")
        vector = _amounts(node_set, types, file, what="site")
        rows.append(np.tile(vector, (count, 1)))
    capacity = np.vstack(rows)
    capacity.flags.writeable = False
    return NodeSet(types, capacity)


#: the most nodes an LWF ``<site>`` may describe (the schema bounds each node set too)
MAX_SITE_NODES = 1_000_000
#: most VMs one lease may have, summed over its node sets (each set is bounded by the schema
#: alone, so 50 sets of 1,000,000 were read, then placed VM by VM before being refused)
MAX_LEASE_VMS = 1_000_000


def _count(node_set: etree._Element, file: str) -> int:
    count = int(node_set.get("numnodes"))
    if count <= 0:   # the schema says so too
        raise TraceError(f"{count} is not above 0", file=file, line=node_set.sourceline,
                         field="<node-set numnodes>")
    return count


def _amounts(node_set: etree._Element, types: ResourceTypes, file: str, *, what: str
             ) -> np.ndarray:
    vector = np.zeros(len(types))
    for res in node_set.iterfind("res"):
        name = res.get("type")
        if name not in types.names:
            raise TraceError(f"unknown resource type {name!r} (the {what} has "
                             f"{', '.join(types.names)})", file=file, line=res.sourceline,
                             field="<res type>")
        instances = res.findall("instance")
        amount = res.get("amount")
        if amount is not None and instances:
            raise TraceError("give either an amount or <instance> elements, not both",
                             file=file, line=res.sourceline, field="<res amount>")
        if amount is None and not instances:
            raise TraceError("the amount is missing (an amount attribute or <instance> "
                             "elements)", file=file, line=res.sourceline, field="<res amount>")
        if amount is not None:
            vector[types.index(name)] = float(amount)
        else:
            vector[types.index(name)] = sum(float(i.get("amount")) for i in instances)
    if not (vector > 0).any():
        raise TraceError("every resource amount is 0", file=file, line=node_set.sourceline,
                         field="<node-set>")
    return vector


class _LeaseReader:
    """Turns ``<lease-request>`` elements into leases, in order, checking arrival order."""

    def __init__(self, file: str, types: ResourceTypes, first_id: int,
                 attributes: Mapping[str, ExtraAttribute] | None = None) -> None:
        self.file = file
        self.types = types
        self.attributes = attributes
        self.next_id = first_id
        self.last_arrival = -math.inf
        #: ``(line, arrival, latest arrival before it)`` of each request out of order
        self.out_of_order: list[tuple[int, float, float]] = []
        self._uniform: dict[tuple[int, bytes], VMRequest] = {}

    def error(self, elem: etree._Element, field: str, message: str) -> TraceError:
        return TraceError(message, file=self.file, line=elem.sourceline, field=field)

    def time(self, elem: etree._Element, attr: str = "time", *, unlimited: bool = False,
             positive: bool = False) -> float:
        field = f"<{elem.tag} {attr}>"
        try:
            value = parse_duration(elem.get(attr))
        except ValueError as exc:
            raise self.error(elem, field, str(exc)) from None
        if math.isinf(value) and not unlimited:
            raise self.error(elem, field, "must be a finite time")
        if positive and value < MIN_DURATION:
            raise self.error(elem, field, f"{elem.get(attr)!r}: must be at least "
                                          f"{MIN_DURATION:g} s (the shortest lease)")
        return value

    def vms(self, nodes: etree._Element) -> VMRequest:
        counts, vectors = [], []
        total = 0
        for node_set in nodes.iterfind("node-set"):
            counts.append(_count(node_set, self.file))
            total += counts[-1]
            if total > MAX_LEASE_VMS:   # 50 sets of 1,000,000 VMs cost 98 CPU-s and 7.7 GB
                raise TraceError(f"the lease has more than {MAX_LEASE_VMS:,} VMs over its node "
                                 "sets", file=self.file, line=node_set.sourceline,
                                 field="<node-set numnodes>")
            vectors.append(_amounts(node_set, self.types, self.file, what="site"))
        if len(counts) == 1:
            key = (counts[0], vectors[0].tobytes())
            request = self._uniform.get(key)
            if request is None:
                request = self._uniform[key] = VMRequest.uniform(counts[0], vectors[0])
            return request
        array = np.vstack(vectors)
        array.flags.writeable = False
        return VMRequest(tuple(counts), array)

    # Longer than ~50 lines on purpose: one LWF element read in document order (nodes, start,
    # duration, software, extras), each part a few lines.
    def lease(self, request: etree._Element) -> Lease:
        arrival = self.time(request, "arrival")
        if arrival < self.last_arrival:
            self.out_of_order.append((request.sourceline, arrival, self.last_arrival))
        self.last_arrival = max(arrival, self.last_arrival)
        elem = request.find("lease")
        vms = self.vms(elem.find("nodes"))
        duration = self.time(elem.find("duration"), unlimited=True, positive=True)
        real = request.find("realduration")
        actual = self.time(real, positive=True) if real is not None else None
        kind, start_request, deadline = self.start(elem, arrival)
        extra, max_price = self.extra(elem)
        lease = Lease(self.next_id, kind, arrival, vms, duration, actual,
                      start_request=start_request, deadline=deadline, source_id=elem.get("id"),
                      extra=extra, origin=f"{self.file}:{request.sourceline}",
                      max_price=max_price)
        self.next_id += 1
        return lease

    def start(self, elem: etree._Element, arrival: float
              ) -> tuple[LeaseType, float | None, float | None]:
        """A ``<lease>``'s type, from its ``<start>`` and ``<deadline>``, with the earliest
        start it requests and its deadline (None: none)."""
        start = elem.find("start")
        exact = start.find("exact")
        start_request = self.time(exact) if exact is not None else None
        deadline_elem = elem.find("deadline")
        deadline = None
        if deadline_elem is not None:
            kind = LeaseType.DEADLINE
            if start.find("now") is not None:
                start_request = arrival
            deadline = self.time(deadline_elem)
            earliest = start_request if start_request is not None else arrival
            if deadline <= earliest:
                raise self.error(deadline_elem, "<deadline time>",
                                 f"the deadline ({deadline:g} s) is not after the earliest "
                                 f"start ({earliest:g} s)")
        elif exact is not None:
            kind = LeaseType.ADVANCE_RESERVATION
        elif start.find("now") is not None:
            kind = LeaseType.IMMEDIATE
        else:
            kind = LeaseType.BEST_EFFORT
        return kind, start_request, deadline

    def extra(self, elem: etree._Element) -> tuple[dict[str, Any], float | None]:
        """A ``<lease>``'s extra attributes (its preemptible attribute, disk image and
        ``<extra><attr>``s), checked, and the price it will pay at most (None: any)."""
        extra: dict[str, Any] = {}
        preemptible = elem.get("preemptible")
        if preemptible is not None:
            extra["preemptible"] = preemptible.lower() in TRUE_VALUES
        image = elem.find("software/disk-image")
        if image is not None:
            extra["disk-image"] = image.get("id")
            extra["disk-image-size"] = int(image.get("size"))
            try:
                check_extra(extra)
            except ExtraAttributeError as exc:
                field = "id" if exc.name == "disk-image" else "size"
                raise self.error(image, f"<disk-image {field}>", exc.detail) from None
        max_price = None
        for attr in elem.iterfind("extra/attr"):
            name = attr.get("name")
            if name in RESERVED_EXTRA:
                source = "preemptible attribute" if name == "preemptible" else "<software>"
                raise self.error(attr, "<attr name>",
                                 f"{name!r} is reserved (it comes from the lease's {source})")
            if name == MAX_PRICE:
                max_price = self.max_price(attr)
                continue
            if name == WATTS_ATTRIBUTE:
                self.check_watts(attr)
            try:
                check_extra({name: attr.get("value")}, self.attributes)
            except ExtraAttributeError as exc:
                raise self.error(attr, f"<attr {name}>", exc.detail) from None
            extra[name] = attr.get("value")
        return extra, max_price

    def max_price(self, attr: etree._Element) -> float:
        """The price of an ``<attr name="max-price">``: a number >= 0."""
        try:
            max_price = float(attr.get("value"))
        except ValueError:
            max_price = math.nan
        if not max_price >= 0:
            raise self.error(attr, "<attr max-price>",
                             f"{attr.get('value')!r} is not a price (a number >= 0)")
        return max_price

    def check_watts(self, attr: etree._Element) -> None:
        """Refuse an ``<attr name="watts">`` that is not a power per VM in range."""
        try:
            watts = parse_float(attr.get("value") or "")
        except ValueError:
            watts = math.nan
        if not 0 <= watts <= MAX_LEASE_WATTS:
            raise self.error(attr, "<attr watts>",
                             f"{attr.get('value')!r} is not a power (a number of watts "
                             f"per VM in [0, {MAX_LEASE_WATTS:g}])")


# ----------------------------------------------------------------------------- writing
