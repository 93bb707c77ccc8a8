"""lease_manager: a Haizea-style lease manager for clusters and data centers.

The public API is what this module exports (``__all__``): what plugins and scripts may use.
Everything else may move between releases (a lint rule holds the bundled plugins to it).

- Writing plugins: :data:`hookimpl`, :class:`RunContext` (what hooks and policies receive),
  the policy base classes, :class:`Option` and the option types (``INTEGER``, ``FLOAT``,
  ``STRING``, ``NAMES``, ...), ``MAX_SECONDS`` (the longest duration an option takes), and
  :mod:`characteristics` (workload characteristics: resources a lease stresses and needs).
- What a run's context and the hooks hand out: :class:`Config` (``ctx.config``),
  :class:`NodeSet` and :class:`ResourceTypes` (``ctx.site``), :class:`SlotTableView`
  (``ctx.table``) and its :class:`ChangeWatch`, :class:`SchedulerView` (``ctx.scheduler``),
  :class:`Metrics`, :class:`PowerModel` (``ctx.power``), :class:`StepSeries`
  (``ctx.power_cap``), :class:`SiteView` (what site selection sees of a site).
- Energy: :func:`lease_gamma` and :func:`stretch` (a lease's run time at an operating point),
  :func:`power_model_from_config`, :func:`read_step_series`.
- Offline planning: :class:`Planner` (the policy kind ``planner``), :class:`PowerBoard`
  (the platform on a time grid under an envelope, with Kassab et al.'s PlaceTask),
  :class:`PlanTask`, :class:`Platform`, :class:`Spot`.
- Leases and the schedule: :class:`Lease`, :class:`LeaseState`, :class:`LeaseType`,
  :class:`VMRequest`, :class:`Reservation`, :class:`ReservationKind`, :class:`SlotTable`,
  :class:`Allocation` and :class:`Malleability` (malleable leases), :class:`ExtraAttribute`.
- Workloads: :class:`SWFConversion` and :func:`read_swf_leases` (SWF jobs as leases),
  :func:`write_lwf`, :func:`site_nodes` (a configuration's nodes).
- Running: :func:`load_run`, :class:`Run`, :class:`Plugins`, :func:`load_config`; for scripts
  of experiments, :func:`run_sweep_file` (a sweep file's runs, then their summaries),
  :func:`load_sweep`, :class:`FinishedRun` and :func:`etc_file`, :func:`read_series` and
  :func:`bin_means` (recorded series), :func:`results_with_nm` (a sweep's result table, with
  Kassab et al.'s NM), :func:`read_tasks` (a run folder's leases with their power, as NM reads
  them) and :func:`instance_key` (the runs of one instance).
- Errors: :class:`LeaseManagerError` and its kinds.
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # The public API, spelled once: every name imported here, and only these, is exported
    # (``__all__``). Outside type checking nothing is imported: each name loads its module when
    # first used, so that importing the package costs nothing and the command line can set the
    # process up (one BLAS thread, in ``cli.py``) before numpy is loaded.
    from lease_manager import characteristics as characteristics
    from lease_manager.config.schema import AMOUNTS as AMOUNTS
    from lease_manager.config.schema import BOOLEAN as BOOLEAN
    from lease_manager.config.schema import DURATION as DURATION
    from lease_manager.config.schema import FLOAT as FLOAT
    from lease_manager.config.schema import INTEGER as INTEGER
    from lease_manager.config.schema import INTEGERS as INTEGERS
    from lease_manager.config.schema import NAMES as NAMES
    from lease_manager.config.schema import PATH as PATH
    from lease_manager.config.schema import SITE as SITE
    from lease_manager.config.schema import STRING as STRING
    from lease_manager.config.schema import Config as Config
    from lease_manager.config.schema import Option as Option
    from lease_manager.config.schema import OptionType as OptionType
    from lease_manager.config.schema import load_config as load_config
    from lease_manager.context import RunContext as RunContext
    from lease_manager.context import SchedulerView as SchedulerView
    from lease_manager.energy.operating_points import lease_gamma as lease_gamma
    from lease_manager.energy.operating_points import stretch as stretch
    from lease_manager.energy.power_model import PowerModel as PowerModel
    from lease_manager.energy.power_model import power_model_from_config as power_model_from_config
    from lease_manager.energy.series import StepSeries as StepSeries
    from lease_manager.energy.series import read_step_series as read_step_series
    from lease_manager.errors import ConfigError as ConfigError
    from lease_manager.errors import InputError as InputError
    from lease_manager.errors import LeaseManagerError as LeaseManagerError
    from lease_manager.errors import TraceError as TraceError
    from lease_manager.experiments.relative import instance_key as instance_key
    from lease_manager.experiments.relative import read_tasks as read_tasks
    from lease_manager.experiments.relative import results_with_nm as results_with_nm
    from lease_manager.experiments.sweep import FinishedRun as FinishedRun
    from lease_manager.experiments.sweep import etc_file as etc_file
    from lease_manager.experiments.sweep import run_sweep_file as run_sweep_file
    from lease_manager.experiments.sweep_file import load_sweep as load_sweep
    from lease_manager.hookspecs import hookimpl as hookimpl
    from lease_manager.kernel.extra_attributes import ExtraAttribute as ExtraAttribute
    from lease_manager.kernel.lease import Lease as Lease
    from lease_manager.kernel.lease import LeaseState as LeaseState
    from lease_manager.kernel.lease import LeaseType as LeaseType
    from lease_manager.kernel.lease import VMRequest as VMRequest
    from lease_manager.kernel.malleable import Allocation as Allocation
    from lease_manager.kernel.malleable import Malleability as Malleability
    from lease_manager.kernel.resources import NodeSet as NodeSet
    from lease_manager.kernel.resources import ResourceTypes as ResourceTypes
    from lease_manager.kernel.slottable import ChangeWatch as ChangeWatch
    from lease_manager.kernel.slottable import Reservation as Reservation
    from lease_manager.kernel.slottable import ReservationKind as ReservationKind
    from lease_manager.kernel.slottable import SlotTable as SlotTable
    from lease_manager.kernel.table_view import SlotTableView as SlotTableView
    from lease_manager.kernel.timeutil import MAX_SECONDS as MAX_SECONDS
    from lease_manager.multisite import SiteView as SiteView
    from lease_manager.observers.leases_csv import LeaseColumns as LeaseColumns
    from lease_manager.observers.metrics import Metrics as Metrics
    from lease_manager.observers.metrics import bin_means as bin_means
    from lease_manager.observers.metrics import read_series as read_series
    from lease_manager.planning.board import PlanTask as PlanTask
    from lease_manager.planning.board import Platform as Platform
    from lease_manager.planning.board import PowerBoard as PowerBoard
    from lease_manager.planning.board import Spot as Spot
    from lease_manager.plugins import Plugins as Plugins
    from lease_manager.policies import AdmissionPolicy as AdmissionPolicy
    from lease_manager.policies import AllocationPolicy as AllocationPolicy
    from lease_manager.policies import Annotator as Annotator
    from lease_manager.policies import HostSelectionPolicy as HostSelectionPolicy
    from lease_manager.policies import NodePowerPolicy as NodePowerPolicy
    from lease_manager.policies import OperatingPointPolicy as OperatingPointPolicy
    from lease_manager.policies import Planner as Planner
    from lease_manager.policies import Policy as Policy
    from lease_manager.policies import PreemptionPolicy as PreemptionPolicy
    from lease_manager.policies import PricingPolicy as PricingPolicy
    from lease_manager.policies import QueuePolicy as QueuePolicy
    from lease_manager.policies import SiteSelectionPolicy as SiteSelectionPolicy
    from lease_manager.run import Run as Run
    from lease_manager.run import load_run as load_run
    from lease_manager.workload.lwf_writer import write_lwf as write_lwf
    from lease_manager.workload.site_source import site_nodes as site_nodes
    from lease_manager.workload.swf import SWFConversion as SWFConversion
    from lease_manager.workload.swf import read_swf_leases as read_swf_leases


def _exports() -> dict[str, tuple[str, str]]:
    """Each exported name -> (module, name in it): the imports above, read from this file (a
    line each, as the import sorter writes them; ``tests/test_public_api.py`` checks that this
    reading finds every import of the block)."""
    global _EXPORTS
    if _EXPORTS is None:
        source = __spec__.loader.get_data(__file__).decode()  # type: ignore[union-attr]
        _EXPORTS = {}
        # "    from MODULE import NAME as ALIAS", four spaces in (split by hand: a regular
        # expression took 1.7 M instructions to compile and run, in every process)
        for line in source.splitlines():
            words = line.split(" ") if line.startswith("    from ") else []
            if len(words) == 10 and words[4:9:2] == ["from", "import", "as"]:
                _EXPORTS[words[9]] = (words[5], words[7])
    return _EXPORTS


_EXPORTS: dict[str, tuple[str, str]] | None = None


def __getattr__(name: str) -> object:
    if name == "__all__":
        return ["__version__", *_exports()]
    if name in _exports():
        import importlib

        module, attribute = _EXPORTS[name]  # type: ignore[index]
        if module == __name__:   # a module of this package
            return importlib.import_module(f"{__name__}.{attribute}")
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value   # (asked once)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_exports()})
