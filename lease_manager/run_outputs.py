"""A run's results: its summary (``summary.json``) once the clock has stopped, the final
invariant checks, and the files it writes (``leases.csv``, ``summary.json``, ``series/``, the
energy files, ``decisions.jsonl``).

:class:`~lease_manager.run.Run`'s :meth:`~lease_manager.run.Run.finish`,
:meth:`~lease_manager.run.Run.run` and :meth:`~lease_manager.run.Run.write` call these; they
read the run and change nothing in its schedule.
"""

from __future__ import annotations

import resource
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.errors import LeaseManagerError
from lease_manager.observers.accounting import write_summary
from lease_manager.observers.invariants import stranded

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.observers.decisions import DecisionLog
    from lease_manager.run import Run


def summary_of(run: Run) -> dict[str, Any]:
    """The run's summary once its clock has stopped: the accountant's fields (every lease
    still active accounted for as it is), energy's, the trace's, the placement, planning's,
    then the plugins' fields from ``collect_summary``."""
    active = run.scheduler.active_leases()
    _close_energy(run, active)
    run.accounting.finish(active)
    # every site's nodes count in the utilisation
    capacity = (np.sum([site.nodes.total for site in run.sites], axis=0) if run.sites
                else run.nodes.total)
    summary = run.accounting.summary(capacity)
    if run.energy is not None:
        summary.update(run.energy.summary())
    summary["trace"] = run.trace_stats.as_dict()
    summary["placement"] = run.placement.label()
    if run.planning is not None:
        summary.update(run.planning.summary())
    if run.engine.force_released:
        summary["held_leases_force_released"] = run.engine.force_released
    for extra in run.plugins.pm.hook.collect_summary(ctx=run.ctx):
        for key, value in (extra or {}).items():
            if key in summary:
                raise LeaseManagerError(f"a plugin's summary field {key!r} clashes with "
                                        f"another field of summary.json")
            summary[key] = value
    return summary


def _close_energy(run: Run, active: Iterable[Lease]) -> None:
    """Close the energy accounting: the run ends when its last lease does (later steps, of
    plans that changed, do not count), or when it was stopped with leases unfinished."""
    energy = run.energy
    if energy is None:
        return
    active = list(active)
    end = run.clock.now() if active else max(energy.last_event, run.started_at)
    energy.until = end
    for lease in active:
        energy.add_lease(lease)
    energy.close(run.started_at, end)


def check_invariants(run: Run) -> None:
    """The invariants checked once the run is over (leases stranded, energy, the plan
    against its envelope), with those checked as it went: raise on any violation."""
    invariants = run.invariants
    if invariants is None:
        return
    if run.engine.exhausted:
        invariants.violations += stranded(run.scheduler.active_leases())
    if run.energy is not None:
        invariants.violations += run.energy.violations()
        if run.planning is not None:
            invariants.violations += run.planning.violations(run.energy)
    invariants.verify()


def write_outputs(run: Run, out: Path) -> Path:
    """Write ``leases.csv``, ``summary.json``, recorded series, the energy files and the
    decision log under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    run.accounting.write_leases(out / "leases.csv")
    timings = run.summary.get("simulation")
    if timings:   # the peak so far, completing leases.csv included
        timings["peak_rss_mb"] = max(timings["peak_rss_mb"], peak_rss_mb())
    write_summary(out / "summary.json", run.summary)
    run.metrics.write(out / "series")
    if run.energy is not None:
        run.energy.write(out)
    if run.decisions is not None:
        from lease_manager.observers.decisions import DECISIONS_FILE

        log_node_switches(run, run.decisions)
        run.decisions.write(out / DECISIONS_FILE)
    return out


def log_node_switches(run: Run, decisions: DecisionLog) -> None:
    """The nodes' shutdowns and boots, as lines of the decision log (once)."""
    if run.energy is None or run.switches_logged:
        return
    run.switches_logged = True
    if run.sites:
        for site in run.sites:
            if site.energy is not None:
                decisions.add_node_switches(site.energy.state_intervals(), site.name)
    else:
        decisions.add_node_switches(run.energy.state_intervals())


def peak_rss_mb() -> float:
    """The process's peak resident memory so far, in MB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
