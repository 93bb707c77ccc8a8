"""Shared helpers: build sites, leases and runs for hand-computed scenarios."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable

import pytest

from lease_manager.config import load_config
from lease_manager.lease import Lease, LeaseState, LeaseType, VMRequest
from lease_manager.plugins import Plugins
from lease_manager.run import Run

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
SHARED_TRACES = ROOT.parent / "shared" / "traces"
MIN = 60
HOUR = 3600


def be(lease_id: int, vms: int, duration: float, submit: float, *, actual: float | None = None,
       cpu: float = 1, memory: float = 0) -> Lease:
    """A best-effort lease of ``vms`` identical VMs (CPU ``cpu``, Memory ``memory``)."""
    return Lease(lease_id, LeaseType.BEST_EFFORT, submit, VMRequest.uniform(vms, [cpu, memory]),
                 duration, duration if actual is None else actual)


def simulate(leases: Iterable[Lease], *settings: str, resources: str = "4 CPU:1 Memory:1024",
             plugins: Plugins | None = None) -> Run:
    """Run ``leases`` on a site to completion; ``settings`` are ``section.option=value``."""
    plugins = plugins or Plugins(entry_points=False)
    config = load_config(None, plugins.schema,
                         [f"simulation.resources={resources}", *settings])
    run = Run(config, plugins, leases=list(leases))
    run.run()
    run.table.check()
    return run


def times(run: Run, leases: Iterable[Lease]) -> dict[int, tuple[float, float]]:
    """``{lease id: (start, end)}`` of finished leases."""
    out = {}
    for lease in leases:
        assert lease.state is LeaseState.DONE, lease
        out[lease.id] = (lease.start, lease.end)
    return out


@pytest.fixture
def python() -> str:
    return sys.executable
