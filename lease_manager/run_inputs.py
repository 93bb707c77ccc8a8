"""A run's workload: its trace file read into leases, and each lease annotated and checked as
it arrives.

The trace is an SWF log, an LWF document or a task file (``[tracefile] tracefile``), with
Haizea's injection file, disk images and overheads applied on the way
(:mod:`lease_manager.workload`). :class:`~lease_manager.run.Run` calls these when it is built.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.energy.power_model import power_cap_from_config
from lease_manager.energy.series import StepSeries
from lease_manager.errors import TraceError
from lease_manager.input_files import input_problem
from lease_manager.kernel.resources import NodeSet, parse_amounts
from lease_manager.workload.swf import SWFConversion, SWFReader, TraceStats, swf_leases
from lease_manager.workload.tasks import is_task_file, read_tasks
from lease_manager.workload.trace_kind import is_lwf

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.kernel.lease import Lease
    from lease_manager.planning.mode import PlanningMode


def vm_vector(cfg: Config, nodes: NodeSet) -> np.ndarray:
    """The per-VM capacity of trace leases (``[tracefile] vm-resources``), validated against
    the site's resource types and nodes."""
    types = nodes.types
    try:
        vector = types.vector(parse_amounts(cfg.get("tracefile", "vm-resources")))
    except ValueError as exc:
        raise cfg.error("tracefile", "vm-resources", str(exc)) from None
    if not (vector > 0).any():
        raise cfg.error("tracefile", "vm-resources", "a VM must need some resource")
    if not (nodes.capacity >= vector).all(axis=1).any():
        raise cfg.error("tracefile", "vm-resources",
                        f"a VM ({types.format(vector)}) fits on no node of the site")
    return vector


def swf_conversion(cfg: Config, nodes: NodeSet) -> SWFConversion:
    """How SWF jobs become leases under ``cfg``'s ``[tracefile]`` options."""
    return SWFConversion(
        vm_vector=vm_vector(cfg, nodes), procs_per_vm=cfg.get("tracefile", "procs-per-vm"),
        paradigm=cfg.get("tracefile", "paradigm"), queues=cfg.get("tracefile", "queues"),
        window_start=cfg.get("tracefile", "window-start"),
        window_length=cfg.get("tracefile", "window-length"),
        max_jobs=cfg.get("tracefile", "max-jobs"), rebase=cfg.get("tracefile", "rebase"))


def trace_leases(cfg: Config, nodes: NodeSet, stats: TraceStats
                 ) -> tuple[Iterator[Lease], SWFReader | None]:
    """The leases of the run's trace file, read as they are needed (an SWF log's) or at once,
    counted in ``stats``; and the SWF reader (None for an LWF document or a task file)."""
    path = _trace_path(cfg)
    reader = None
    if is_lwf(path):
        from lease_manager.workload.lwf import read_lwf

        workload = read_lwf(path, nodes.types)
        stats.read = stats.replayed = len(workload.leases)
        leases: Iterable[Lease] = workload.leases
    elif is_task_file(path):
        tasks = read_tasks(path, vm_vector(cfg, nodes))
        stats.read = stats.replayed = len(tasks)
        leases = tasks
    else:
        reader = SWFReader(path, skip_bad_lines=cfg.get("tracefile", "skip-bad-lines"))
        leases = swf_leases(reader, swf_conversion(cfg, nodes), stats)
    return iter(_with_haizea_inputs(cfg, nodes, leases)), reader


def _trace_path(cfg: Config) -> str:
    """``[tracefile] tracefile``, checked: given, readable, a file."""
    path = cfg.get("tracefile", "tracefile")
    if not path:
        raise cfg.error("tracefile", "tracefile", "no trace file given (set it in "
                                                  "[tracefile] or with --set)")
    problem = input_problem(path, limit=None)
    if problem:
        raise cfg.error("tracefile", "tracefile", f"{path} {problem}")
    if not Path(path).is_file():
        raise cfg.error("tracefile", "tracefile", f"trace file not found: {path}")
    return str(path)


def _with_haizea_inputs(cfg: Config, nodes: NodeSet, leases: Iterable[Lease]
                        ) -> Iterable[Lease]:
    """``leases`` with Haizea's injection file merged in, its disk images given and its
    overheads added (``[tracefile] injectionfile``, ``imagefile``, ``add-overhead``...)."""
    injection = cfg.get("tracefile", "injectionfile")
    if injection:
        if not Path(injection).is_file():
            raise cfg.error("tracefile", "injectionfile", f"file not found: {injection}")
        from lease_manager.workload.convert import merge_workloads
        from lease_manager.workload.lwf import read_lwf

        leases = merge_workloads(leases, read_lwf(injection, nodes.types).leases)
    imagefile = cfg.get("tracefile", "imagefile")
    if imagefile:   # Haizea's: disk images given to the leases in order
        from lease_manager.workload.overheads import read_image_file, with_images

        leases = with_images(leases, read_image_file(imagefile))
    add, memory = cfg.get("tracefile", "add-overhead"), cfg.get("tracefile", "override-memory")
    if add != "none" or memory >= 0:   # Haizea's overheads (workload/overheads.py)
        from lease_manager.workload.overheads import with_overheads

        names = nodes.types.names
        leases = with_overheads(
            leases, add=add, slowdown_percent=cfg.get("tracefile", "runtime-slowdown-overhead"),
            boot=cfg.get("tracefile", "bootshutdown-overhead"), memory=memory,
            slowdown_as=cfg.get("tracefile", "runtime-slowdown-as"),
            memory_index=names.index("Memory") if "Memory" in names else None)
    return leases


def planned(arrivals: Iterable[Lease], mode: PlanningMode, cfg: Config,
            power: PowerModel | None) -> Iterator[Lease]:
    """The arrivals as the offline planner's plan gives them, under the power envelope
    (``[power] power-cap``; none: unbounded)."""
    leases = list(arrivals)   # (read, annotated and checked before the envelope is)
    assert power is not None, "planning needs a power model"
    cap = power_cap_from_config(cfg, power)
    return iter(mode.plan(leases, cap if cap is not None else StepSeries.constant(math.inf)))


def checked(leases: Iterable[Lease], annotators: Sequence[Any],
            oversize_reason: Callable[[Lease], str] | None, field: str) -> Iterator[Lease]:
    """``leases`` as they arrive, each annotated; with ``oversize_reason`` (``[tracefile]
    oversized = error``), one too large for the site stops the run with a one-line error
    naming its file, line and ``field``."""
    for lease in leases:
        for annotator in annotators:
            annotator.annotate(lease)
        if oversize_reason is not None:
            reason = oversize_reason(lease)
            if reason:
                file, _, line = (lease.origin or "").rpartition(":")
                raise TraceError(reason, file=file or None,
                                 line=int(line) if line.isdigit() else None, field=field)
        yield lease
