"""Writing Haizea's LWF: leases (and the site they were made for) as an LWF document,
streamed, so that any number of leases can be written; the reader is :mod:`.lwf`."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from lease_manager.kernel.lease import Lease, LeaseType
from lease_manager.kernel.resources import NodeSet, ResourceTypes
from lease_manager.kernel.timeutil import parse_duration
from lease_manager.workload.lwf import MAX_PRICE, RESERVED_EXTRA, TRUE_VALUES


def format_time(seconds: float) -> str:
    """An LWF time: ``HH:MM:SS.ss`` (hours unbounded, as Haizea wrote them) when that gives
    ``seconds`` back exactly, else plain seconds; ``unlimited`` for infinity."""
    if math.isinf(seconds) and seconds > 0:
        return "unlimited"
    if not seconds >= 0 or not math.isfinite(seconds):
        raise ValueError(f"{seconds!r} is not a time LWF can hold (finite and >= 0)")
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    frac = seconds - whole
    if frac == 0:
        return f"{hours:02d}:{minutes:02d}:{secs:02d}.00"
    digits = f"{frac:.6f}"[1:].rstrip("0").ljust(3, "0")   # Haizea wrote 2 decimals
    text = f"{hours:02d}:{minutes:02d}:{secs:02d}{digits}"
    if digits != ".00" and parse_duration(text) == seconds:
        return text
    return np.format_float_positional(float(seconds), trim="-")


def _number(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else np.format_float_positional(x, trim="-")


def _extra_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (set, frozenset)):
        return ",".join(sorted(map(str, value)))
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, float):
        return _number(value) if math.isfinite(value) else str(value)
    return str(value)


def _nodes_element(counts: Iterable[int], vectors: np.ndarray, types: ResourceTypes
                   ) -> etree._Element:
    nodes = etree.Element("nodes")
    for count, vector in zip(counts, vectors):
        if len(vector) != len(types):
            raise ValueError(f"a VM vector has {len(vector)} amounts; the resource types are "
                             f"{', '.join(types.names)}")
        node_set = etree.SubElement(nodes, "node-set", numnodes=str(int(count)))
        for name, amount in zip(types.names, vector):
            etree.SubElement(node_set, "res", type=name, amount=_number(amount))
    return nodes


def _site_element(site: NodeSet) -> etree._Element:
    elem = etree.Element("site")
    etree.SubElement(elem, "resource-types", names=" ".join(site.types.names))
    rows: list[np.ndarray] = []
    counts: list[int] = []
    for row in site.capacity:   # consecutive identical nodes make one node-set
        if rows and np.array_equal(rows[-1], row):
            counts[-1] += 1
        else:
            rows.append(row)
            counts.append(1)
    elem.append(_nodes_element(counts, np.asarray(rows), site.types))
    return elem


def _request_element(lease: Lease, types: ResourceTypes) -> etree._Element:
    request = etree.Element("lease-request", arrival=format_time(lease.submit))
    if lease.actual_duration is not None:
        etree.SubElement(request, "realduration", time=format_time(lease.actual_duration))
    elem = etree.SubElement(request, "lease")
    if lease.source_id is not None:
        elem.set("id", str(lease.source_id))
    extra = lease.extra
    # always written: Haizea 1.0 and 1.1 require it (a lease without it stopped them); a
    # lease that does not say is preemptible, here as in Haizea's own trace conversions
    value = extra.get("preemptible", True)
    if isinstance(value, str):
        value = value.strip().lower() in TRUE_VALUES
    elem.set("preemptible", "true" if value else "false")
    elem.append(_nodes_element(lease.vms.counts, lease.vms.vectors, types))
    start = etree.SubElement(elem, "start")
    kind = lease.type
    if kind is LeaseType.IMMEDIATE:
        etree.SubElement(start, "now")
    elif kind is LeaseType.ADVANCE_RESERVATION or (kind is LeaseType.DEADLINE
                                                   and lease.start_request is not None):
        if lease.start_request is None:
            raise ValueError(f"lease {lease.id}: an advance reservation needs a start time")
        etree.SubElement(start, "exact", time=format_time(lease.start_request))
    etree.SubElement(elem, "duration", time=format_time(lease.requested_duration))
    if kind is LeaseType.DEADLINE:
        if lease.deadline is None:
            raise ValueError(f"lease {lease.id}: a deadline lease needs a deadline")
        etree.SubElement(elem, "deadline", time=format_time(lease.deadline))
    software = etree.SubElement(elem, "software")
    if extra.get("disk-image") is not None:
        etree.SubElement(software, "disk-image", id=str(extra["disk-image"]),
                         size=str(int(extra.get("disk-image-size") or 0)))
    else:
        etree.SubElement(software, "none")
    attrs_ = [(str(k), _extra_text(v)) for k, v in extra.items()
              if k not in RESERVED_EXTRA and v is not None]
    if lease.max_price is not None:
        attrs_.append((MAX_PRICE, _number(lease.max_price)))
    if attrs_:
        extra_elem = etree.SubElement(elem, "extra")
        for name, value in attrs_:
            etree.SubElement(extra_elem, "attr", name=name, value=value)
    return request


# Longer than ~50 lines on purpose: a streaming writer: the nesting of the XML contexts is the
# structure of the code.
def write_lwf(path: str | Path, leases: Iterable[Lease], *, types: ResourceTypes | None = None,
              site: NodeSet | None = None, name: str | None = None,
              description: str | None = None,
              comment: str | Callable[[], str] | None = None) -> int:
    """Write ``leases`` (in submit order) as an LWF file; return how many were written.

    Resource amounts are named by ``types`` (default: the site's). ``name`` defaults to the
    file's stem. Leases are streamed, not collected; a lease submitted before the previous one
    raises ValueError and leaves no file behind (sort them first). What LWF cannot hold is
    lost: ``id`` (renumbered on reading; ``source_id`` is kept), ``max_price``, the lease's
    state and history, and the type of non-string ``extra`` values (written as text: lists and
    sets joined by commas, booleans as yes/no). ``comment``, if given, is written as an XML
    comment after the requests; a callable is called once the leases are written
    (:func:`lease_manager.workload.convert.swf_to_lwf` records the conversion's statistics so).
    """
    if types is None:
        if site is None:
            raise ValueError("give the resource types (or the site) the leases' amounts are for")
        types = site.types
    path = Path(path)
    name = name if name is not None else path.stem
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    written = 0
    try:
        with open(tmp, "wb") as fh, etree.xmlfile(fh, encoding="utf-8") as xf:
            xf.write_declaration()
            with xf.element("lease-workload", name=name):
                if description is not None:
                    _write(xf, etree.Element("description"), 1, text=description)
                if site is not None:
                    _write(xf, _site_element(site), 1)
                xf.write("\n  ")
                last = -math.inf
                with xf.element("lease-requests"):
                    for lease in leases:
                        if lease.submit < last:
                            raise ValueError(f"lease {lease.id} ({lease.origin or 'no origin'}) "
                                             f"is submitted at {lease.submit:g}, before the "
                                             f"previous lease ({last:g}): sort the leases "
                                             f"by submit time first")
                        last = lease.submit
                        _write(xf, _request_element(lease, types), 2)
                        written += 1
                    xf.write("\n  ")
                if comment is not None:
                    text = comment() if callable(comment) else comment
                    xf.write("\n  ")
                    xf.write(etree.Comment(f" {text.replace('--', '- -')} "))
                xf.write("\n")
            fh.flush()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return written


def _write(xf: Any, elem: etree._Element, level: int, *, text: str | None = None) -> None:
    if text is not None:
        elem.text = text
    else:
        etree.indent(elem, space="  ", level=level)
    xf.write("\n" + "  " * level)
    xf.write(elem)


def format_site(site: NodeSet) -> str:
    """The site as a ``[simulation] resources`` value (``"4 CPU:100 Memory:1024"``; groups of
    different nodes separated by ``;``), so that a run can use the site an LWF file gives."""
    groups: list[tuple[int, np.ndarray]] = []
    for row in site.capacity:
        if groups and np.array_equal(groups[-1][1], row):
            groups[-1] = (groups[-1][0] + 1, row)
        else:
            groups.append((1, row))
    return "; ".join(f"{count} {site.types.format(row)}" for count, row in groups)
