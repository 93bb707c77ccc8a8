"""Helpers of lm-greenpar's tests: GreenPar jobs, speedup tables and green series in files,
and runs on small sites."""

from __future__ import annotations

from pathlib import Path

from lease_manager.config.schema import load_config
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.plugins import Plugins
from lease_manager.run import Run

ROOT = Path(__file__).resolve().parents[3]
PLUGINS = Plugins()


def job(lease_id: int, app: str, servers: int, runtime: float, submit: float = 0.0) -> Lease:
    """A job of ``app`` asking for ``servers`` servers (2 VMs each) that runs ``runtime``
    seconds there (its request: three times that)."""
    return Lease(lease_id, LeaseType.BEST_EFFORT, submit,
                 VMRequest.uniform(2 * servers, [1.0, 384.0]), 3 * runtime, runtime,
                 extra={"app": app, "servers": servers})


def speedups(path: Path, table: dict[str, dict[int, dict[int, float]]]) -> Path:
    """Write ``{app: {vms: {servers: speedup}}}`` as a speedup file."""
    lines = ["app,vms,servers,speedup"]
    for app, by_v in table.items():
        for v, by_n in by_v.items():
            lines += [f"{app},{v},{n},{sp}" for n, sp in by_n.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def green(path: Path, steps: list[tuple[float, float]]) -> tuple[Path, Path]:
    """The same ``(time, watts)`` steps as actual production and as one forecast issued at
    0: ``path``-actual.csv and ``path``-forecast.csv."""
    actual = path.with_name(path.name + "-actual.csv")
    forecast = path.with_name(path.name + "-forecast.csv")
    actual.write_text("time,watts\n" + "".join(f"{t:g},{w:g}\n" for t, w in steps))
    forecast.write_text("issued,time,watts\n" + "".join(f"0,{t:g},{w:g}\n" for t, w in steps))
    return actual, forecast


def simulate(leases, policy: str, *settings: str, servers: int = 16, watts: str = "0:100",
             solar: tuple[Path, Path] | None = None) -> Run:
    """Run ``leases`` under allocation ``policy`` on ``servers`` dual-core servers drawing
    IDLE:BUSY ``watts``; brown energy at 0.1 $/kWh."""
    idle, busy = watts.split(":")
    options = [f"simulation.resources={servers} CPU:2 Memory:4096",
               f"power.pstates=1.0:{idle}:{busy}", "power.electricity-price=0.1",
               f"malleable.policy-allocation={policy}", "malleable.epoch=900",
               "accounting.probes=greenpar-accounting", *settings]
    if solar is not None:
        options += [f"power.green-production={solar[0]}", f"power.green-forecast={solar[1]}"]
    run = Run(load_config(None, PLUGINS.schema, options), PLUGINS, leases=list(leases))
    run.run()
    run.table.check()
    return run


def allocations(lease: Lease) -> list[tuple[float, int]]:
    """``(time, servers)`` of each of the lease's allocations."""
    assert lease.malleable is not None
    return [(t, n) for t, n, _, _ in lease.malleable.history]
