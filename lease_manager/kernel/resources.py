"""Resource types, capacity vectors and the nodes of a site.

A capacity is a numpy vector with one entry per resource type, in the order the site declares
them (``CPU``, ``Memory``, ...). A multi-instance CPU is modelled as a pool of cores: a node with
``CPU:8`` hosts eight one-core VMs of different leases, or two four-core VMs. Per-core pinning is
not modelled (it is not in Slurm's CPU counting either).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import attrs
import numpy as np

from lease_manager.numbers import parse_float, parse_int


@attrs.frozen
class ResourceTypes:
    """The ordered resource types of a site, e.g. ``("CPU", "Memory")``."""

    names: tuple[str, ...]

    def __attrs_post_init__(self) -> None:
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"resource types repeat: {', '.join(self.names)}")

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"unknown resource type {name!r} (the site has "
                             f"{', '.join(self.names)})") from None

    def vector(self, amounts: Mapping[str, float]) -> np.ndarray:
        """A capacity vector from ``{name: amount}``; absent types are zero."""
        v = np.zeros(len(self.names))
        for name, amount in amounts.items():
            v[self.index(name)] = amount
        return v

    def parse(self, text: str) -> np.ndarray:
        """Parse ``"CPU:1 Memory:1024"`` into a vector over these types."""
        return self.vector(parse_amounts(text))

    def format(self, vector: Iterable[float]) -> str:
        return " ".join(f"{n}:{_num(a)}" for n, a in zip(self.names, vector))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


#: the largest amount of one resource type on a node or in a VM (as in LWF files and the API)
MAX_AMOUNT = 1e12


def parse_amounts(text: str) -> dict[str, float]:
    """Parse ``"CPU:1 Memory:1024"`` into ``{"CPU": 1.0, "Memory": 1024.0}``.

    Haizea's multi-instance form ``CPU:100,100`` is accepted and pooled (here: 200).
    """
    amounts: dict[str, float] = {}
    for token in text.split():
        name, sep, value = token.partition(":")
        if not sep or not name or not value:
            raise ValueError(f"{token!r} is not TYPE:AMOUNT")
        try:
            total = sum(parse_float(v) for v in value.split(","))
        except ValueError:
            raise ValueError(f"{token!r}: amount {value!r} is not a number (ASCII digits, "
                             f"finite)") from None
        if total < 0 or not math.isfinite(total):
            raise ValueError(f"{token!r}: amount must be finite and non-negative")
        if total > MAX_AMOUNT:     # CPU:1e300 was taken, and utilization printed 0.0 %
            raise ValueError(f"{token!r}: amount is above the maximum {MAX_AMOUNT:g}")
        if name in amounts:
            raise ValueError(f"resource type {name!r} is given twice")
        amounts[name] = total
    if not amounts:
        raise ValueError("no resources given (expected e.g. 'CPU:1 Memory:1024')")
    return amounts


@attrs.frozen(eq=False)
class NodeSet:
    """The physical nodes of a site: one capacity vector per node (a row of ``capacity``)."""

    types: ResourceTypes
    capacity: np.ndarray  # shape (nodes, resource types)
    #: how many nodes each ``;``-separated group of the site's description has, in order
    #: (empty when the site was not described in groups)
    groups: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def total(self) -> np.ndarray:
        return self.capacity.sum(axis=0)


#: the most nodes a site may have
MAX_NODES = 1_000_000


def site_node_count(text: str) -> int:
    """How many nodes a valid ``resources`` text describes (0 for one that names no count,
    such as ``in-tracefile``), without building the site."""
    total = 0
    for group in text.split(";"):
        count = group.strip().partition(" ")[0]
        try:
            total += parse_int(count) if count else 0
        except ValueError:
            return 0
    return total


def parse_site(text: str) -> NodeSet:
    """Parse Haizea's ``resources`` option: ``"144 CPU:8 Memory:16384"``.

    Several groups of nodes are separated by ``;``:
    ``"171 CPU:8 Memory:16384; 7 CPU:32 Memory:131072"``. The resource types are those named in
    the first group, in that order; later groups must name the same types.
    """
    groups = [g.strip() for g in text.split(";") if g.strip()]
    if not groups:
        raise ValueError("no nodes given (expected e.g. '144 CPU:1 Memory:1024')")
    types: ResourceTypes | None = None
    rows: list[np.ndarray] = []
    sizes: list[int] = []
    for group in groups:
        count_text, _, amounts_text = group.partition(" ")
        try:
            count = parse_int(count_text)
        except ValueError:
            raise ValueError(f"{group!r}: expected a node count first, e.g. '144 CPU:1'") from None
        if count <= 0:
            raise ValueError(f"{group!r}: the node count must be positive")
        if sum(sizes) + count > MAX_NODES:     # before anything that size is allocated
            raise ValueError(f"{group!r}: a site has at most {MAX_NODES:,} nodes")
        amounts = parse_amounts(amounts_text)
        if types is None:
            types = ResourceTypes(tuple(amounts))
        elif set(amounts) != set(types.names):
            raise ValueError(f"{group!r}: every node group must name the same resource types "
                             f"({', '.join(types.names)})")
        rows.append(np.tile(types.vector(amounts), (count, 1)))
        sizes.append(count)
    assert types is not None
    capacity = np.vstack(rows)
    capacity.flags.writeable = False
    return NodeSet(types, capacity, tuple(sizes))
