"""lease_manager: a Haizea-style lease manager for clusters and data centers.

The public API is what this module exports (``__all__``): what plugins and scripts may use.
Everything else may move between releases.

- Writing plugins: :data:`hookimpl`, :class:`RunContext` (what hooks and policies receive),
  the policy base classes, :class:`Option` and the option types (``INTEGER``, ``FLOAT``,
  ``STRING``, ``NAMES``, ...), and :mod:`characteristics` (workload characteristics:
  resources a lease stresses and needs).
- Offline planning: :class:`Planner` (the policy kind ``planner``), :class:`PowerBoard`
  (the platform on a time grid under an envelope, with Kassab et al.'s PlaceTask),
  :class:`PlanTask`, :class:`Platform`, :class:`Spot`.
- Leases and the schedule: :class:`Lease`, :class:`LeaseState`, :class:`LeaseType`,
  :class:`VMRequest`, :class:`Reservation`, :class:`ReservationKind`, :class:`SlotTable`.
- Running: :func:`load_run`, :class:`Run`, :class:`Plugins`; for scripts of experiments,
  :func:`run_sweep_file` (a sweep file's runs, then their summaries) and :func:`etc_file`
  (imported when first used), :func:`read_series` and :func:`bin_means` (recorded series),
  :func:`results_with_nm` (a sweep's result table, with Kassab et al.'s NM).
- Errors: :class:`LeaseManagerError` and its kinds.
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING  # noqa: E402

from lease_manager.config.schema import (  # noqa: E402
    AMOUNTS,
    BOOLEAN,
    DURATION,
    FLOAT,
    INTEGER,
    INTEGERS,
    NAMES,
    PATH,
    SITE,
    STRING,
    Option,
    OptionType,
)
from lease_manager.context import RunContext  # noqa: E402
from lease_manager.errors import (  # noqa: E402
    ConfigError,
    InputError,
    LeaseManagerError,
    TraceError,
)
from lease_manager.hookspecs import hookimpl  # noqa: E402
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest  # noqa: E402
from lease_manager.kernel.malleable import Allocation, Malleability  # noqa: E402
from lease_manager.kernel.slottable import Reservation, ReservationKind, SlotTable  # noqa: E402
from lease_manager.observers.metrics import bin_means, read_series  # noqa: E402
from lease_manager.planning.board import PlanTask, Platform, PowerBoard, Spot  # noqa: E402
from lease_manager.plugins import Plugins  # noqa: E402
from lease_manager.policies import (  # noqa: E402
    AdmissionPolicy,
    AllocationPolicy,
    Annotator,
    HostSelectionPolicy,
    NodePowerPolicy,
    OperatingPointPolicy,
    Planner,
    Policy,
    PreemptionPolicy,
    PricingPolicy,
    QueuePolicy,
    SiteSelectionPolicy,
)
from lease_manager.run import Run, load_run  # noqa: E402

__all__ = [
    "__version__", "hookimpl", "RunContext", "Plugins", "Run", "load_run",
    "Option", "OptionType", "AMOUNTS", "BOOLEAN", "DURATION", "FLOAT", "INTEGER", "INTEGERS",
    "NAMES", "PATH", "SITE", "STRING",
    "Policy", "AdmissionPolicy", "Annotator", "HostSelectionPolicy", "PreemptionPolicy",
    "PricingPolicy", "QueuePolicy", "NodePowerPolicy", "OperatingPointPolicy",
    "SiteSelectionPolicy", "AllocationPolicy", "Allocation", "Malleability",
        "Planner", "PowerBoard", "PlanTask", "Platform", "Spot",
    "Lease", "LeaseState", "LeaseType", "VMRequest", "Reservation", "ReservationKind",
    "SlotTable", "characteristics",
    "LeaseManagerError", "InputError", "ConfigError", "TraceError",
    "run_sweep_file", "FinishedRun", "etc_file", "read_series", "bin_means", "results_with_nm",
]

if TYPE_CHECKING:   # what the lazy names below are, for type checkers
    from lease_manager.experiments.relative import results_with_nm  # noqa: F401

#: exported names whose modules load only when first used (start-up stays light)
_LAZY = {"characteristics": "lease_manager",
         "run_sweep_file": "lease_manager.experiments.sweep",
         "FinishedRun": "lease_manager.experiments.sweep",
         "etc_file": "lease_manager.experiments.sweep",
         "results_with_nm": "lease_manager.experiments.relative"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        if name == "characteristics":   # a module of this package
            return importlib.import_module("lease_manager.characteristics")
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lease_manager' has no attribute {name!r}")
