"""Which placement a run uses: ``[scheduling] placement`` = ``auto``, ``at-start`` or
``when-planned``.

``at-start`` (:mod:`~lease_manager.kernel.count_table`) is exact only where every lease of a
site has one VM shape and nothing needs a node chosen before a lease starts. :func:`choose`
finds the first feature of a run that needs ``when-planned`` (:data:`NEEDS_WHEN_PLANNED`
lists them, in the order they are looked for): ``auto`` then picks ``when-planned`` and says
why, and a run that names ``at-start`` is refused in one line naming the feature.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lease_manager.energy.lease_power import WATTS_ATTRIBUTE
from lease_manager.kernel.lease import LeaseType
from lease_manager.workload.tasks import is_task_file
from lease_manager.workload.trace_kind import is_lwf

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
    from lease_manager.kernel.resources import NodeSet
    from lease_manager.plugins import Plugins

AT_START = "at-start"
WHEN_PLANNED = "when-planned"
AUTO = "auto"

#: every feature that keeps a run ``when-planned`` under ``auto`` (short name: why), as
#: ``config-doc`` and the README list them
NEEDS_WHEN_PLANNED: dict[str, str] = {
    "Haizea configuration": "a Haizea configuration file keeps Haizea's placement",
    "daemon": "the daemon plans requests of any VM shape, advance reservations included",
    "leases given in code": "leases handed to the run in code may have several VM shapes",
    "LWF trace": "an LWF trace with several VM shapes or deadline leases (which may "
                 "preempt: suspension with memory images on particular nodes)",
    "advance reservations that may preempt": "an LWF trace's or injection file's advance "
        "reservations may preempt or suspend leases (memory images on particular nodes) "
        "unless policy-preemption = no-preemption and suspension = none",
    "injection file": "an injection file with several VM shapes, deadline leases, VMs of "
                      "another shape than the trace's, or several sites",
    "power cap": "a power cap holds each node's power from the plans pinned on it",
    "several sites": "a site of several hosts no VM of the trace's one shape",
    "migration": "migration moves memory images between particular nodes",
    "image transfers": "image transfers and caches send images to particular nodes",
    "malleable leases": "resizing a lease changes particular nodes' allocations",
    "offline planner": "the offline plan pins each lease on a node ahead",
    "host selection": "the host selection policy looks at nodes' future plans",
    "annotator": "an annotator may make deadline leases or change VM shapes",
}
#: features that only ``auto`` avoids: a run that names ``at-start`` keeps it (leases of
#: another VM shape are then rejected one by one, with the reason)
AUTO_ONLY = frozenset({"leases given in code", "several sites", "migration", "annotator"})


@attrs.frozen
class PlacementChoice:
    """The placement a run uses, and how it was chosen."""

    #: ``at-start`` or ``when-planned``
    placement: str
    #: True when ``[scheduling] placement = auto`` chose it
    auto: bool
    #: under ``auto``, the feature that needs ``when-planned`` ('' for ``at-start``)
    reason: str = ""
    #: at start: the one VM shape the site's leases have, when it is not ``[tracefile]
    #: vm-resources`` (an LWF trace's); None: that option's
    vm_shape: np.ndarray | None = attrs.field(default=None, eq=False)

    @property
    def at_start(self) -> bool:
        return self.placement == AT_START

    def label(self) -> str:
        """``at-start (auto)``, ``when-planned (auto: power cap)``, or the placement named."""
        if not self.auto:
            return self.placement
        return f"{self.placement} (auto{': ' + self.reason if self.reason else ''})"


def lwf_shape(leases: list, ars: list[str] | None = None,
              expected: np.ndarray | None = None) -> tuple[np.ndarray | None, str]:
    """The one VM shape of an LWF trace's leases (None for no leases), or why counting is
    not exact for them: at-start counts best-effort and immediate leases and advance
    reservations of one VM shape (``expected``'s, if given: the trace's, for an injection
    file). Where the first advance reservation is is appended to ``ars`` (it is counted only
    if it can neither preempt nor suspend a lease)."""
    shape = expected
    for lease in leases:
        where = f"the lease request at {lease.origin}" if lease.origin else f"lease {lease.id}"
        if lease.type is LeaseType.ADVANCE_RESERVATION and ars is not None and not ars:
            ars.append(where)
        if lease.type is LeaseType.DEADLINE:
            return None, f"{where} is a deadline lease"
        if lease.vms.shape_key is None:
            return None, f"{where} has VMs of several shapes"
        if shape is None:
            shape = lease.vms.vectors[0]
        elif lease.vms.shape_key != shape.tobytes():
            return None, (f"{where} has VMs of another shape than the "
                          f"{'first lease' if expected is None else 'trace'}'s")
    return shape, ""


def first_need(config: Config, plugins: Plugins, *, serve: bool, from_trace: bool,
               named: bool = False, nodes: NodeSet | None = None,
               shape: list[np.ndarray] | None = None) -> tuple[str, str]:
    """The first feature of the run that needs ``when-planned``: its short name and a
    sentence saying why (``('', '')``: none, at-start is exact for the run). ``named``:
    for a run that names ``at-start`` (the features of :data:`AUTO_ONLY` are let pass).
    An LWF trace and an injection file are read (over ``nodes``' resource types) to see
    whether their leases are all alike; an LWF trace's shape is appended to ``shape`` if
    they are."""
    def need(name: str, detail: str = "") -> tuple[str, str]:
        return name, detail or NEEDS_WHEN_PLANNED[name]

    if serve:
        return need("daemon")
    if not from_trace and not named:
        return need("leases given in code")
    watts: list[str] = []   # where the first lease with its own dynamic power is
    trace = config.get("tracefile", "tracefile")
    lwf_trace = bool(from_trace and trace and Path(trace).is_file() and is_lwf(trace))
    vm_shape: np.ndarray | None = None   # an LWF trace's one VM shape
    if lwf_trace:
        if nodes is None:
            return need("LWF trace")
        ars: list[str] = []
        from lease_manager.workload.lwf import read_lwf

        trace_leases = read_lwf(trace, nodes.types).leases
        vm_shape, why = lwf_shape(trace_leases, ars)
        if why:
            return need("LWF trace", why)
        watts += _with_watts(trace_leases)
        if ars and not ars_are_countable(config, plugins):
            return need("advance reservations that may preempt", _ars_may_preempt(ars[0]))
    injection = config.get("tracefile", "injectionfile")
    if injection and from_trace:   # leases given in code are not merged with it
        injected = _injection_need(config, plugins, injection, nodes, vm_shape, lwf_trace,
                                   watts)
        if isinstance(injected, tuple):
            return need(*injected)
        vm_shape = injected
    if vm_shape is not None and shape is not None:
        shape.append(vm_shape)
    for site_config in ([config.for_site(name) for name in config.sites] if config.sites
                        else [config]):
        found = _power_need(site_config, plugins, None if config.sites else nodes,
                            bool(from_trace and trace and Path(trace).is_file()
                                 and is_task_file(trace)), watts)
        if found:
            return found
    found = _setting_need(config, plugins, named)
    return need(*found) if found is not None else ("", "")


def _setting_need(config: Config, plugins: Plugins, named: bool) -> tuple[str, str] | None:
    """The first setting of the run (beyond its workload and power) that needs
    ``when-planned``, as :func:`first_need`'s name and detail (an empty detail: the name's
    own sentence); None if none does."""
    if config.sites and not named:
        # each site counts on its own table, of the trace's VM shape: every site must host one
        from lease_manager.errors import ConfigError
        from lease_manager.run_inputs import vm_vector
        from lease_manager.workload.site_source import site_nodes

        for name in config.sites:
            site_config = config.for_site(name)
            try:
                vm_vector(site_config, site_nodes(site_config))
            except ConfigError:
                return "several sites", f"site {name!r} hosts no VM of the trace's shape"
    if config.get("scheduling", "migration") != "no" and not named:
        return "migration", ""
    if config.get("preparation", "lease-preparation") == "imagetransfer":
        return "image transfers", ""
    if config.get("malleable", "policy-allocation") != "none":
        return "malleable leases", ""
    if config.get("planning", "policy-planner") != "none":
        return "offline planner", ""
    host_selection = config.get("scheduling", "policy-host-selection")
    if not supports_at_start(plugins, host_selection):
        return ("host selection", f"host selection {host_selection!r} looks at nodes' "
                                  f"future plans (it does not declare "
                                  f"supports_placement_at_start)")
    for annotator in config.get("tracefile", "annotators"):
        if not named and not getattr(plugins.policy("annotator", annotator),
                                     "supports_placement_at_start", False):
            return ("annotator", f"annotator {annotator!r} may make deadline leases or "
                                 f"change VM shapes (it does not declare "
                                 f"supports_placement_at_start)")
    return None


def _ars_may_preempt(where: str) -> str:
    return (f"{where} is an advance reservation, and advance reservations may preempt or "
            f"suspend leases (memory images on particular nodes) unless policy-preemption = "
            f"no-preemption and suspension = none")


def _injection_need(config: Config, plugins: Plugins, injection: str, nodes: NodeSet | None,
                    trace_shape: np.ndarray | None, lwf_trace: bool,
                    watts: list[str]) -> tuple[str, str] | np.ndarray | None:
    """What of an injection file needs ``when-planned`` (its short name and why), else the
    run's one VM shape when the injected requests give it (an LWF trace of no leases; None:
    ``trace_shape``, or ``[tracefile] vm-resources`` after an SWF trace). The requests are
    counted as an LWF trace's are: all of the trace's VM shape, no deadline lease, and advance
    reservations only if none can preempt or suspend a lease. A file that is not there is
    left to the trace reader to report."""
    if nodes is None:
        return "injection file", ("an injection file with several sites (its requests are not "
                                  "checked against each site's VM shape)")
    if not Path(injection).is_file():
        return trace_shape
    if lwf_trace:
        expected = trace_shape   # None: the LWF trace has no leases
    else:
        from lease_manager.run_inputs import vm_vector

        expected = vm_vector(config, nodes)
    ars: list[str] = []
    from lease_manager.workload.lwf import read_lwf

    injected = read_lwf(injection, nodes.types).leases
    vm_shape, why = lwf_shape(injected, ars, expected)
    if why:
        return "injection file", why
    watts += _with_watts(injected)
    if ars and not ars_are_countable(config, plugins):
        return "advance reservations that may preempt", _ars_may_preempt(ars[0])
    return vm_shape if lwf_trace else None


def ars_are_countable(config: Config, plugins: Plugins) -> bool:
    """Whether advance reservations can be counted: with no preemption (the policy declares
    ``preempts_nothing``) and no suspension, one never moves a lease off particular nodes,
    nor lets a lease run in front of it and suspend there."""
    policy = plugins.policy("preemption", config.get("scheduling", "policy-preemption"))
    return (config.get("scheduling", "suspension") == "none"
            and bool(getattr(policy, "preempts_nothing", False)))


def supports_at_start(plugins: Plugins, host_selection: str) -> bool:
    """Whether the host selection policy ``host_selection`` declares at-start support."""
    return bool(getattr(plugins.policy("host-selection", host_selection),
                        "supports_placement_at_start", False))


def _with_watts(leases: list) -> list[str]:
    """Where the first of ``leases`` with its own dynamic power (``watts``) is (or [])."""
    for lease in leases:
        if lease.extra.get(WATTS_ATTRIBUTE) is not None:
            return [f"the lease request at {lease.origin}" if lease.origin
                    else f"lease {lease.id}"]
    return []


def _power_need(config: Config, plugins: Plugins, nodes: NodeSet | None = None,
                task_file: bool = False, watts: list[str] | None = None
                ) -> tuple[str, str] | None:
    """What of a site's ``[power]`` needs ``when-planned`` (None: nothing). Energy is
    counted: it follows from the nodes leases get when they start, and node power states
    from the counts of nodes that plans need (:mod:`~lease_manager.energy.counted_states`).
    A power cap is counted where the site's power is a function of the VMs running
    (:mod:`~lease_manager.energy.counted_cap`): ``nodes`` is the run's one site (None:
    several, whose caps stay when-planned), ``task_file`` whether the trace is one (its
    tasks may have their own ``watts``), ``watts`` where an LWF lease has them."""
    if not (config.get("power", "pstates") or config.get("power", "cubic-law")):
        return None
    where = f"site {config.site_name!r}: " if config.site_name else ""
    if config.get("power", "power-cap") != "none":
        why = _cap_not_counted(config, plugins, nodes, task_file, watts or [])
        if why:
            return "power cap", where + why
    return None


def _cap_not_counted(config: Config, plugins: Plugins, nodes: NodeSet | None,
                     task_file: bool, watts: list[str]) -> str:
    """Why a power cap cannot be counted ('' if it can): see
    :mod:`~lease_manager.energy.counted_cap`."""
    because = NEEDS_WHEN_PLANNED["power cap"] + ", counted only "
    if nodes is None:
        return because + "with one site"
    if isinstance(config.get("power", "power-cap"), str) \
            or config.get("power", "power-cap-window") > 0:
        return because + "under a constant cap in watts"
    switches = getattr(plugins.policy("node-power", config.get("power", "policy-node-power")),
                       "switches_off", True)
    if switches or config.get("power", "initial-state") != "on":
        return because + ("with nodes that never switch (a node-power policy that does not "
                          "switch off, initial-state = on)")
    if config.get("power", "policy-operating-point") not in ("highest", "lowest"):
        return because + ("with every lease at one operating point (policy-operating-point "
                          "= highest or lowest)")
    if task_file:
        return because + "without a task file (its tasks may draw their own watts)"
    if watts:
        return because + f"without leases of their own watts ({watts[0]} has them)"
    from lease_manager.energy.power_model import power_model_from_config

    model = power_model_from_config(config, nodes)
    if model is None or not all(np.ptp(a, axis=0).max(initial=0) == 0 for a in (
            nodes.capacity, model.full, model.idle, model.off_watts)):
        return because + "on identical nodes (same resources, same power)"
    return ""


def choose(config: Config, plugins: Plugins, *, serve: bool, from_trace: bool,
           nodes: NodeSet | None = None) -> PlacementChoice:
    """The run's placement: the one named, or ``auto``'s choice. Naming ``at-start`` for a
    run it cannot serve raises the configuration error naming the feature. ``nodes``: the
    run's site (None: several sites), over whose resource types an LWF trace is read."""
    named = config.get("scheduling", "placement")
    if named == WHEN_PLANNED:
        return PlacementChoice(WHEN_PLANNED, auto=False)
    if named == AUTO and config.haizea:
        return PlacementChoice(WHEN_PLANNED, auto=True, reason="Haizea configuration")
    shape: list[np.ndarray] = []
    name, why = first_need(config, plugins, serve=serve, from_trace=from_trace,
                           named=named == AT_START, nodes=nodes, shape=shape)
    vm_shape = shape[0] if shape and not name else None
    if named == AUTO:
        return PlacementChoice(WHEN_PLANNED if name else AT_START, auto=True, reason=name,
                               vm_shape=vm_shape)
    if name:
        raise config.error("scheduling", "placement",
                           f"at-start cannot serve this run ({name}: {why}); use "
                           f"when-planned or auto")
    return PlacementChoice(AT_START, auto=False, vm_shape=vm_shape)
