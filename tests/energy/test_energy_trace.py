"""Energy accounting on a real trace: the 30-day SDSC Blue Horizon trace on 144 one-core nodes
(``etc/sample.ini``), aggressive backfilling, with the invariant check on."""

from __future__ import annotations

import csv

import pytest

from lease_manager.run import load_run

from support import ROOT

SAMPLE = ROOT / "etc" / "sample.ini"
IDLE, FULL = 100.0, 200.0
POWER = (f"power.pstates=2.4:{IDLE:g}:{FULL:g}", "power.switch-on=60:150",
         "power.switch-off=30:120", "power.off-watts=5")


def replay(*settings: str, out=None):
    run = load_run(SAMPLE, list(settings))
    summary = run.run()
    run.table.check()
    if out is not None:
        run.write(out)
    return run, summary


def test_always_on_energy_is_idle_power_plus_busy_node_seconds(tmp_path):
    """energy = idle x nodes x run length + (full - idle) x busy node-seconds (one VM holds a
    whole one-core node), the busy node-seconds summed from ``leases.csv``."""
    run, s = replay(*POWER, out=tmp_path)
    start, end = s["energy_window"]
    assert start == 0 and end == s["makespan"]       # the trace's first job arrives at 0
    with (tmp_path / "leases.csv").open() as fh:
        busy = sum(int(r["vms"]) * (float(r["end"]) - float(r["start"]))
                   for r in csv.DictReader(fh))
    expected = IDLE * 144 * (end - start) + (FULL - IDLE) * busy
    assert s["energy_it_joules"] == pytest.approx(expected, rel=1e-4)
    assert s["node_switch_ons"] == 0
    # the series integrates to the summary's energy
    with (tmp_path / "series" / "power.csv").open() as fh:
        rows = [(float(r["time"]), float(r["it_watts"])) for r in csv.DictReader(fh)]
    integral = sum(w * (t2 - t1) for (t1, w), (t2, _) in zip(rows, rows[1:]))
    assert integral == pytest.approx(s["energy_it_joules"], rel=1e-9)


def test_switching_idle_nodes_off_saves_energy_and_costs_waiting():
    """The first 1,000 jobs: switching a node off after 5 idle minutes uses less energy than
    keeping every node on, and the leases wait longer (boots of 60 s)."""
    on_run, on = replay(*POWER, "tracefile.max-jobs=1000")
    off_run, off = replay(*POWER, "tracefile.max-jobs=1000",
                          "power.policy-node-power=switch-off-idle", "power.idle-timeout=300")
    assert off["leases_completed"] == on["leases_completed"]
    assert off["energy_it_joules"] < 0.95 * on["energy_it_joules"]
    assert off["node_switch_ons"] > 0
    assert off["avg_wait"] >= on["avg_wait"]
