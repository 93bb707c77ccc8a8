"""Helpers of the consolidation plugin's tests (a module with a name of its own, so that it
never clashes with the core tests' ``conftest``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

import lm_consolidation
from lease_manager import Lease, LeaseType, Reservation, Run, SlotTable, VMRequest
from lease_manager.config.schema import load_config
from lease_manager.kernel.resources import parse_site
from lease_manager.plugins import Plugins

ROOT = Path(__file__).resolve().parents[3]
ETC = ROOT / "etc"
TRACE = ROOT / "traces" / "sdsc-blue-30days.swf"
#: the VM of every hand-built lease: 1 CPU, 1024 MB
VM = (1.0, 1024.0)


def plugins() -> Plugins:
    """The built-in plugins and this one, whether or not it is installed."""
    return Plugins(entry_points=False, extra=[lm_consolidation])


def lease(lease_id: int, vms: int, duration: float, submit: float = 0.0,
          stress: str | None = None, **requirements: float) -> Lease:
    """A best-effort lease of ``vms`` VMs of 1 CPU and 1024 MB; ``stress`` is its stress-on
    attribute and ``req_IO=...`` etc. its ``req-*`` attributes."""
    extra: dict = {}
    if stress is not None:
        extra["stress-on"] = stress
    for key, value in requirements.items():
        extra["req-" + key[len("req_"):].replace("_", "-")] = value
    return Lease(lease_id, LeaseType.BEST_EFFORT, submit, VMRequest.uniform(vms, VM),
                 duration, duration, extra=extra)


def table(resources: str = "3 CPU:4 Memory:4096") -> SlotTable:
    return SlotTable(parse_site(resources))


def reserve(tab: SlotTable, owner: Lease, start: float, end: float,
            vm_nodes: Sequence[int]) -> Reservation:
    """Put ``owner``'s VMs on ``vm_nodes`` (one entry per VM) over ``[start, end)``."""
    vector = owner.vms.vectors[0]
    nodes: list[int] = []
    for n in vm_nodes:
        if n not in nodes:
            nodes.append(n)
    counts = np.array([list(vm_nodes).count(n) for n in nodes], dtype=float)
    res = Reservation(owner, start, end, np.array(nodes, dtype=np.intp),
                      counts[:, None] * vector[None, :], vm_nodes=tuple(vm_nodes),
                      vm_shape=vector.tobytes())
    owner.reservations = [res]
    return tab.add(res)


def make_run(*settings: str, leases: Iterable[Lease] | None = None,
             resources: str = "3 CPU:4 Memory:4096") -> Run:
    plug = plugins()
    config = load_config(None, plug.schema, [f"simulation.resources={resources}", *settings])
    return Run(config, plug, leases=list(leases) if leases is not None else [])


def trace_run(*settings: str, max_jobs: int = 500, resources: str = "18 CPU:8 Memory:8192",
              observers: Iterable[object] = ()) -> Run:
    """The first ``max_jobs`` leases of the 30-day SDSC Blue trace, annotated, with the probe
    (``observers``: more plugin objects, registered before the run is built)."""
    plug = plugins()
    for observer in observers:
        plug.pm.register(observer)
    config = load_config(None, plug.schema, [
        f"simulation.resources={resources}", f"tracefile.tracefile={TRACE}",
        "tracefile.vm-resources=CPU:1 Memory:1024", f"tracefile.max-jobs={max_jobs}",
        "tracefile.annotators=thesis-workload", "accounting.probes=resource-contention",
        "scheduling.backfilling=conservative", *settings])
    return Run(config, plug)
