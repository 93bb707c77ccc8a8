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

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # what the exported names are, for type checkers
    from lease_manager import characteristics  # noqa: F401
    from lease_manager.config.schema import (  # noqa: F401
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
    from lease_manager.context import RunContext  # noqa: F401
    from lease_manager.errors import (  # noqa: F401
        ConfigError,
        InputError,
        LeaseManagerError,
        TraceError,
    )
    from lease_manager.experiments.relative import results_with_nm  # noqa: F401
    from lease_manager.experiments.sweep import FinishedRun, etc_file, run_sweep_file  # noqa: F401
    from lease_manager.hookspecs import hookimpl  # noqa: F401
    from lease_manager.kernel.extra_attributes import ExtraAttribute  # noqa: F401
    from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest  # noqa: F401
    from lease_manager.kernel.malleable import Allocation, Malleability  # noqa: F401
    from lease_manager.kernel.slottable import (  # noqa: F401
        Reservation,
        ReservationKind,
        SlotTable,
    )
    from lease_manager.observers.metrics import bin_means, read_series  # noqa: F401
    from lease_manager.planning.board import PlanTask, Platform, PowerBoard, Spot  # noqa: F401
    from lease_manager.plugins import Plugins  # noqa: F401
    from lease_manager.policies import (  # noqa: F401
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
    from lease_manager.run import Run, load_run  # noqa: F401

__all__ = [
    "__version__", "hookimpl", "RunContext", "Plugins", "Run", "load_run",
    "Option", "OptionType", "AMOUNTS", "BOOLEAN", "DURATION", "FLOAT", "INTEGER", "INTEGERS",
    "NAMES", "PATH", "SITE", "STRING",
    "Policy", "AdmissionPolicy", "Annotator", "HostSelectionPolicy", "PreemptionPolicy",
    "PricingPolicy", "QueuePolicy", "NodePowerPolicy", "OperatingPointPolicy",
    "SiteSelectionPolicy", "AllocationPolicy", "Allocation", "Malleability",
    "Planner", "PowerBoard", "PlanTask", "Platform", "Spot",
    "Lease", "LeaseState", "LeaseType", "VMRequest", "Reservation", "ReservationKind",
    "ExtraAttribute",
    "SlotTable", "characteristics",
    "LeaseManagerError", "InputError", "ConfigError", "TraceError",
    "run_sweep_file", "FinishedRun", "etc_file", "read_series", "bin_means", "results_with_nm",
]

#: every exported name loads its module when first used: importing the package costs nothing,
#: so that the command line can set the process up (one BLAS thread, in ``cli.py``) before
#: numpy is loaded
_LAZY = {"AMOUNTS": "lease_manager.config.schema",
         "BOOLEAN": "lease_manager.config.schema",
         "DURATION": "lease_manager.config.schema",
         "FLOAT": "lease_manager.config.schema",
         "INTEGER": "lease_manager.config.schema",
         "INTEGERS": "lease_manager.config.schema",
         "NAMES": "lease_manager.config.schema",
         "PATH": "lease_manager.config.schema",
         "SITE": "lease_manager.config.schema",
         "STRING": "lease_manager.config.schema",
         "Option": "lease_manager.config.schema",
         "OptionType": "lease_manager.config.schema",
         "RunContext": "lease_manager.context",
         "ConfigError": "lease_manager.errors",
         "InputError": "lease_manager.errors",
         "LeaseManagerError": "lease_manager.errors",
         "TraceError": "lease_manager.errors",
         "hookimpl": "lease_manager.hookspecs",
         "ExtraAttribute": "lease_manager.kernel.extra_attributes",
         "Lease": "lease_manager.kernel.lease",
         "LeaseState": "lease_manager.kernel.lease",
         "LeaseType": "lease_manager.kernel.lease",
         "VMRequest": "lease_manager.kernel.lease",
         "Allocation": "lease_manager.kernel.malleable",
         "Malleability": "lease_manager.kernel.malleable",
         "Reservation": "lease_manager.kernel.slottable",
         "ReservationKind": "lease_manager.kernel.slottable",
         "SlotTable": "lease_manager.kernel.slottable",
         "bin_means": "lease_manager.observers.metrics",
         "read_series": "lease_manager.observers.metrics",
         "PlanTask": "lease_manager.planning.board",
         "Platform": "lease_manager.planning.board",
         "PowerBoard": "lease_manager.planning.board",
         "Spot": "lease_manager.planning.board",
         "Plugins": "lease_manager.plugins",
         "AdmissionPolicy": "lease_manager.policies",
         "AllocationPolicy": "lease_manager.policies",
         "Annotator": "lease_manager.policies",
         "HostSelectionPolicy": "lease_manager.policies",
         "NodePowerPolicy": "lease_manager.policies",
         "OperatingPointPolicy": "lease_manager.policies",
         "Planner": "lease_manager.policies",
         "Policy": "lease_manager.policies",
         "PreemptionPolicy": "lease_manager.policies",
         "PricingPolicy": "lease_manager.policies",
         "QueuePolicy": "lease_manager.policies",
         "SiteSelectionPolicy": "lease_manager.policies",
         "Run": "lease_manager.run",
         "load_run": "lease_manager.run",
         "characteristics": "lease_manager",
         "run_sweep_file": "lease_manager.experiments.sweep",
         "FinishedRun": "lease_manager.experiments.sweep",
         "etc_file": "lease_manager.experiments.sweep",
         "results_with_nm": "lease_manager.experiments.relative"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        if name == "characteristics":   # a module of this package
            return importlib.import_module("lease_manager.characteristics")
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value   # (asked once)
        return value
    raise AttributeError(f"module 'lease_manager' has no attribute {name!r}")
