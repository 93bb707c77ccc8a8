"""Helpers of the DVFS plugin's tests (a module name of its own, never clashing with other
tests' helpers)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import lm_dvfs
from lease_manager import Lease, LeaseType, Run, VMRequest
from lease_manager.config.schema import load_config
from lease_manager.plugins import Plugins

ROOT = Path(__file__).resolve().parents[3]


def plugins() -> Plugins:
    """The built-in plugins and this one, whether or not it is installed."""
    return Plugins(entry_points=False, extra=[lm_dvfs])


def deadline_lease(lease_id: int, cpus: int, work: float, submit: float, deadline: float,
                   **extra: object) -> Lease:
    """A deadline lease of ``cpus`` one-CPU VMs with ``work`` seconds at f_max."""
    return Lease(lease_id, LeaseType.DEADLINE, submit, VMRequest.uniform(cpus, [1, 0]), work,
                 work, deadline=deadline, extra=dict(extra))


def make_run(leases: Sequence[Lease], *settings: str) -> Run:
    """A run of ``leases`` (not started) with ``settings`` (``section.option=value``)."""
    p = plugins()
    return Run(load_config(None, p.schema, list(settings)), p, leases=list(leases))


def run(leases: Sequence[Lease], *settings: str) -> Run:
    """Run ``leases`` to completion; the invariants hold (``run()`` checks them)."""
    r = make_run(leases, *settings)
    r.run()
    return r
