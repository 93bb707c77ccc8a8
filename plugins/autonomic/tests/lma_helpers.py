"""Helpers of the autonomic plugin's tests (a module name of its own, so that it never
clashes with the core's or the consolidation plugin's test helpers)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import lease_manager
import lm_autonomic
import lm_consolidation
from lease_manager import Lease, LeaseType, Run, VMRequest
from lease_manager.config.schema import load_config
from lease_manager.plugins import Plugins

ROOT = Path(__file__).resolve().parents[3]
ETC = ROOT / "etc"
TRACE = ROOT / "traces" / "sdsc-blue-30days.swf"


def plugins(*extra) -> Plugins:
    return Plugins(entry_points=False, extra=[lm_consolidation, lm_autonomic, *extra])


def lease(lease_id: int, vms: int, duration: float, submit: float, stress: str | None,
          vm=(1.0, 1024.0), **extra) -> Lease:
    """A best-effort lease of ``vms`` VMs (``vm`` per VM) with a ``stress-on`` attribute;
    ``extra`` keys are added to ``lease.extra`` with ``_`` read as ``-``."""
    attrs: dict = {}
    if stress is not None:
        attrs["stress-on"] = stress
    attrs.update({k.replace("_", "-"): v for k, v in extra.items()})
    return Lease(lease_id, LeaseType.BEST_EFFORT, submit, VMRequest.uniform(vms, vm),
                 duration, duration, extra=attrs)


class Snapshots:
    """Records the autonomic policy's monitoring structures at the end of every cycle
    (after the policy's own end-of-cycle update) and at every arrival decision."""

    def __init__(self) -> None:
        self.at: dict[float, dict] = {}
        self.run: Run | None = None   # set by make_run (a test may look inside the run)

    @lease_manager.hookimpl(trylast=True)
    def scheduling_cycle_end(self, ctx, now: float) -> None:
        run = self.run
        assert run is not None
        policy = run.policies["queue"]
        mon = policy.monitor
        mon.check()
        self.at[now] = {
            "MD": mon.monitoring_data.as_dict(),
            "SMD": mon.scheduled_monitoring_data.as_dict(),
            "MJ": mon.monitored_jobs.as_dict(),
            "prepending": sorted(policy.prepending),
            "held": sorted(run.scheduler.held),
            "full": sorted(mon.full),
        }


def make_run(leases: Iterable[Lease], *settings: str, resources: str,
             extra=()) -> Run:
    plug = plugins(*extra)
    config = load_config(None, plug.schema, [
        f"simulation.resources={resources}", "scheduling.policy-queue=autonomic",
        "scheduling.policy-host-selection=no-policy", "scheduling.backfilling=aggressive",
        "accounting.check-invariants=yes", *settings])
    run = Run(config, plug, leases=list(leases))
    for plugin in extra:
        if isinstance(plugin, Snapshots):
            plugin.run = run
    return run
