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

from lease_manager.workload.lwf import is_lwf

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
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
    "LWF trace": "an LWF trace may have several VM shapes, advance reservations and "
                 "suspension with memory images on particular nodes",
    "injection file": "injected requests may have other VM shapes and advance reservations",
    "power model": "node power states are planned per node ([power])",
    "several sites": "site selection has not been proven exact on counted tables",
    "migration": "migration moves memory images between particular nodes",
    "image transfers": "image transfers and caches send images to particular nodes",
    "malleable leases": "resizing a lease changes particular nodes' allocations",
    "offline planner": "the offline plan pins each lease on a node ahead",
    "host selection": "the host selection policy looks at nodes' future plans",
}
#: features that only ``auto`` avoids: a run that names ``at-start`` keeps it (leases of
#: another VM shape are then rejected one by one, with the reason)
AUTO_ONLY = frozenset({"leases given in code", "several sites", "migration"})


@attrs.frozen
class PlacementChoice:
    """The placement a run uses, and how it was chosen."""

    #: ``at-start`` or ``when-planned``
    placement: str
    #: True when ``[scheduling] placement = auto`` chose it
    auto: bool
    #: under ``auto``, the feature that needs ``when-planned`` ('' for ``at-start``)
    reason: str = ""

    @property
    def at_start(self) -> bool:
        return self.placement == AT_START

    def label(self) -> str:
        """``at-start (auto)``, ``when-planned (auto: power model)``, or the placement named."""
        if not self.auto:
            return self.placement
        return f"{self.placement} (auto{': ' + self.reason if self.reason else ''})"


def first_need(config: Config, plugins: Plugins, *, serve: bool, from_trace: bool,
               named: bool = False) -> tuple[str, str]:
    """The first feature of the run that needs ``when-planned``: its short name and a
    sentence saying why (``('', '')``: none, at-start is exact for the run). ``named``:
    for a run that names ``at-start`` (the features of :data:`AUTO_ONLY` are let pass)."""
    def need(name: str, detail: str = "") -> tuple[str, str]:
        return name, detail or NEEDS_WHEN_PLANNED[name]

    if serve:
        return need("daemon")
    if not from_trace and not named:
        return need("leases given in code")
    trace = config.get("tracefile", "tracefile")
    if from_trace and trace and Path(trace).is_file() and is_lwf(trace):
        return need("LWF trace")
    if config.get("tracefile", "injectionfile"):
        return need("injection file")
    if config.get("power", "pstates") or config.get("power", "cubic-law"):
        return need("power model")
    if config.sites and not named:
        return need("several sites")
    if config.get("scheduling", "migration") != "no" and not named:
        return need("migration")
    if config.get("preparation", "lease-preparation") == "imagetransfer":
        return need("image transfers")
    if config.get("malleable", "policy-allocation") != "none":
        return need("malleable leases")
    if config.get("planning", "policy-planner") != "none":
        return need("offline planner")
    host_selection = config.get("scheduling", "policy-host-selection")
    if not supports_at_start(plugins, host_selection):
        return need("host selection", f"host selection {host_selection!r} looks at nodes' "
                                      f"future plans (it does not declare "
                                      f"supports_placement_at_start)")
    return "", ""


def supports_at_start(plugins: Plugins, host_selection: str) -> bool:
    """Whether the host selection policy ``host_selection`` declares at-start support."""
    return bool(getattr(plugins.policy("host-selection", host_selection),
                        "supports_placement_at_start", False))


def choose(config: Config, plugins: Plugins, *, serve: bool, from_trace: bool
           ) -> PlacementChoice:
    """The run's placement: the one named, or ``auto``'s choice. Naming ``at-start`` for a
    run it cannot serve raises the configuration error naming the feature."""
    named = config.get("scheduling", "placement")
    if named == WHEN_PLANNED:
        return PlacementChoice(WHEN_PLANNED, auto=False)
    if named == AUTO and config.haizea:
        return PlacementChoice(WHEN_PLANNED, auto=True, reason="Haizea configuration")
    name, why = first_need(config, plugins, serve=serve, from_trace=from_trace,
                           named=named == AT_START)
    if named == AUTO:
        return PlacementChoice(WHEN_PLANNED if name else AT_START, auto=True, reason=name)
    if name:
        raise config.error("scheduling", "placement",
                           f"at-start cannot serve this run ({name}: {why}); use "
                           f"when-planned or auto")
    return PlacementChoice(AT_START, auto=False)
