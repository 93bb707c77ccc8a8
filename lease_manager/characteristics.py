"""Workload characteristics: which resources a lease stresses and how much of each it needs.

A lease carries them in ``lease.extra`` (the annotator ``thesis-workload`` writes them; an LWF
file's ``<extra>`` attributes can give them too):

``stress-on``
    The resource types the lease stresses, among :data:`RESOURCES`: a set, or a string such as
    ``"CPU,Memory"`` (separated by commas, ``+`` or blanks; ``""`` or ``"none"``: nothing).
``req-CPU``, ``req-Memory``, ``req-IO``, ``req-Net-in``, ``req-Net-out``
    The amount per VM of a resource (a number or a numeric string). A ``requirements``
    attribute can give several at once, as a dict or as text (``"IO:50 Net-in:20"``); a
    ``req-*`` attribute overrides the same resource there. (Flat ``req-*`` attributes are what
    the annotator writes: they survive a round trip through an LWF file's ``<extra>``.)
``hpc-class``
    The HPC class the annotator drew (or that a trace gives; see the ``lm-consolidation``
    plugin's annotator).

How much a lease needs of resource ``r`` on a node (its ``resReq[r]`` in equations 5.4 and 6.2)
counts all of its VMs on that node:

- an explicit amount per VM times the number of its VMs on the node;
- otherwise, when ``r`` is one of the site's resource types (CPU and Memory usually), what its
  reservation holds of ``r`` on the node (the VM vectors of its VMs there);
- otherwise 0 (a lease that stresses IO with no IO amount adds nothing to the sums, but still
  counts as a lease that stresses IO for the contention flag of equation 5.3).

A lease without ``stress-on`` stresses nothing: it never contends and never adds to a score.
"""

from __future__ import annotations

import collections
import itertools
import math
import re
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.slottable import Reservation

#: The resource types of the thesis' contention model, in the order of every vector here.
RESOURCES: tuple[str, ...] = ("CPU", "Memory", "IO", "Net-in", "Net-out")
#: ``lease.extra`` keys.
STRESS_ON = "stress-on"
REQUIREMENTS = "requirements"
HPC_CLASS = "hpc-class"
REQ_PREFIX = "req-"

_CANONICAL = {name.lower(): name for name in RESOURCES}
_CANONICAL.update({"mem": "Memory", "netin": "Net-in", "netout": "Net-out",
                   "net_in": "Net-in", "net_out": "Net-out", "disk": "IO"})
_NOTHING = {"", "none", "-", "nothing"}
_KNOWN = frozenset(RESOURCES)


def resource_name(text: str) -> str:
    """The canonical name of a resource type (``"memory"`` -> ``"Memory"``); ValueError if it
    is not one of :data:`RESOURCES`."""
    name = _CANONICAL.get(text.strip().lower())
    if name is None:
        raise ValueError(f"unknown resource type {text.strip()!r} in stress-on (known: "
                         f"{', '.join(RESOURCES)})")
    return name


def parse_stress_on(value: Any) -> frozenset[str]:
    """A ``stress-on`` attribute as a set of canonical resource names.

    Accepts a string (``"CPU,Memory"``, ``"CPU Memory"``, ``"CPU+Memory"``, ``"none"``), or any
    iterable of names. Raises ValueError naming an unknown resource.
    """
    if value is None:
        return frozenset()
    if isinstance(value, frozenset) and value <= _KNOWN:
        return value
    if isinstance(value, str):
        if value.strip().lower() in _NOTHING:
            return frozenset()
        parts: Iterable[str] = [p for p in re.split(r"[,+;\s]+", value) if p]
    else:
        parts = value
    return frozenset(resource_name(str(p)) for p in parts if str(p).strip().lower()
                     not in _NOTHING)


def _amount(value: Any, what: str) -> float:
    try:
        amount = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {value!r} is not a number") from None
    if not math.isfinite(amount) or amount < 0:
        raise ValueError(f"{what}: {value!r} must be a finite number >= 0")
    return amount


def explicit_requirements(extra: Mapping[str, Any]) -> dict[str, float]:
    """The per-VM amounts a lease's attributes give explicitly (``requirements`` and
    ``req-*``), by canonical resource name."""
    out: dict[str, float] = {}
    given = extra.get(REQUIREMENTS)
    if given:
        if isinstance(given, str):
            pairs = []
            for token in re.split(r"[,;\s]+", given.strip()):
                name, sep, value = token.partition(":")
                if not sep:
                    raise ValueError(f"{REQUIREMENTS}: {token!r} is not RESOURCE:AMOUNT")
                pairs.append((name, value))
            given = dict(pairs)
        if not isinstance(given, Mapping):
            raise ValueError(f"{REQUIREMENTS}: expected RESOURCE:AMOUNT pairs, got {given!r}")
        for key, value in given.items():
            name = resource_name(str(key))
            out[name] = _amount(value, f"{REQUIREMENTS}[{name}]")
    for key, value in extra.items():
        if isinstance(key, str) and key.startswith(REQ_PREFIX):
            name = resource_name(key[len(REQ_PREFIX):])
            out[name] = _amount(value, key)
    return out


class Profile:
    """What the contention model needs of one lease: its stress-on mask and, per resource,
    where its requirement comes from."""

    __slots__ = ("stress", "mask", "explicit", "site_index", "per_vm", "count_from")

    def __init__(self, stress: frozenset[str], explicit: Mapping[str, float],
                 site_types: Iterable[str], vm_vector: np.ndarray | None = None) -> None:
        self.stress = stress
        #: 1.0 for every stressed resource, in :data:`RESOURCES` order
        self.mask = np.array([1.0 if r in stress else 0.0 for r in RESOURCES])
        types = list(site_types)
        #: (resource position, amount per VM) for stressed resources with an explicit amount
        self.explicit = [(k, explicit[r]) for k, r in enumerate(RESOURCES)
                         if r in stress and r in explicit]
        #: (resource position, site type index) for stressed resources measured on the site
        self.site_index = [(k, types.index(r)) for k, r in enumerate(RESOURCES)
                           if r in stress and r not in explicit and r in types]
        #: when all the lease's VMs have one shape: its requirement per VM (5 amounts), and a
        #: site type (index, amount per VM) to count its VMs on a node from a reservation
        self.per_vm: np.ndarray | None = None
        self.count_from: tuple[int, float] | None = None
        if vm_vector is not None:
            per_vm = np.zeros(len(RESOURCES))
            for k, amount in self.explicit:
                per_vm[k] = amount
            for k, t in self.site_index:
                per_vm[k] = vm_vector[t]
            self.per_vm = per_vm
            positive = np.flatnonzero(vm_vector > 0)
            if positive.size:
                self.count_from = (int(positive[0]), float(vm_vector[positive[0]]))

    @property
    def stresses_anything(self) -> bool:
        return bool(self.stress)


_SHARED: weakref.WeakKeyDictionary[RunContext, Contributions] = weakref.WeakKeyDictionary()


class Contribution(NamedTuple):
    """What one reservation adds to the contention sums of its nodes."""

    #: the reservation's distinct nodes
    nodes: np.ndarray
    #: ``(len(nodes), 5)``: what its lease needs of each stressed resource on each node (0 for
    #: resources it does not stress)
    amounts: np.ndarray
    #: its lease's stress-on mask (1.0 for stressed resources)
    mask: np.ndarray
    lease: Any
    reservation: Any


class Contributions:
    """Per-lease profiles and per-reservation contributions, cached for one run.

    ``contribution(res)`` is a :class:`Contribution`, or ``None`` when the reservation does
    not hold VMs or its lease stresses nothing.
    """

    #: reservations whose contributions are kept
    CACHE = 8192

    def __init__(self, site_types: Iterable[str]) -> None:
        self.site_types = tuple(site_types)
        self._profiles: dict[int, Profile] = {}
        self._by_res: dict[int, Any] = {}

    @classmethod
    def for_run(cls, ctx: RunContext) -> Contributions:
        """The run's shared instance (policies and the probe read the same leases)."""
        shared = _SHARED.get(ctx)
        if shared is None:
            shared = _SHARED[ctx] = cls(ctx.site.types.names)
        return shared

    def profile(self, lease: Lease) -> Profile:
        prof = self._profiles.get(lease.id)
        if prof is None:
            try:
                stress = parse_stress_on(lease.extra.get(STRESS_ON))
                explicit = explicit_requirements(lease.extra)
            except ValueError as exc:
                raise ValueError(f"lease {lease.id} ({lease.origin or 'no origin'}): "
                                 f"{exc}") from None
            vms = lease.vms
            vector = vms.vectors[0] if len(vms.counts) == 1 else None
            prof = self._profiles[lease.id] = Profile(stress, explicit, self.site_types, vector)
        return prof

    def forget(self, lease: Lease) -> None:
        self._profiles.pop(lease.id, None)

    def contribution(self, res: Reservation) -> Contribution | None:
        key = res.id
        hit = self._by_res.get(key, False)
        if hit is not False:
            return hit
        if len(self._by_res) >= self.CACHE:   # forget the oldest half (most are gone)
            for stale in list(itertools.islice(self._by_res, self.CACHE // 2)):
                del self._by_res[stale]
        out = None
        lease = res.lease
        if res.kind == "vm" and res.vm_nodes and lease is not None:
            prof = self.profile(lease)
            if prof.stresses_anything:
                out = Contribution(res.nodes, node_amounts(res, prof), prof.mask, lease, res)
        self._by_res[key] = out
        return out


def vms_per_node(res: Reservation) -> np.ndarray:
    """How many of the reservation's VMs are on each of ``res.nodes``."""
    nodes = res.nodes.tolist()
    if len(res.vm_nodes) == len(nodes):
        return np.ones(len(nodes))
    counts = collections.Counter(res.vm_nodes)
    return np.array([counts[n] for n in nodes], dtype=float)


def node_amounts(res: Reservation, prof: Profile) -> np.ndarray:
    """``(len(res.nodes), 5)``: what ``res``'s lease needs of each resource it stresses on each
    of its nodes (see the module docstring)."""
    if prof.per_vm is not None and res.vm_shape is not None:   # one VM shape: VMs x per VM
        if len(res.vm_nodes) == len(res.nodes):
            return np.tile(prof.per_vm, (len(res.nodes), 1))
        if prof.count_from is not None:
            t, per = prof.count_from
            return np.outer(np.rint(res.amounts[:, t] / per), prof.per_vm)
    out = np.zeros((len(res.nodes), len(RESOURCES)))
    if prof.explicit:
        vms = vms_per_node(res)
        for k, per_vm in prof.explicit:
            out[:, k] = per_vm * vms
    for k, t in prof.site_index:
        out[:, k] = res.amounts[:, t]
    return out
