"""A power cap with ``placement = at-start`` (:mod:`lease_manager.energy.counted_cap`): where
the site's power is a function of the VMs running (nodes always on, identical, one operating
point, a constant cap), the cap is a bound on them, and both placements give the same
schedule, power profile and energy; elsewhere a cap keeps ``when-planned``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.plugins import Plugins
from lease_manager.run import Run

from support import lwf_request, write_lwf_requests


def request(lease_id: int, arrival: int, vms: int, seconds: int, runs: int | None = None
            ) -> str:
    """A best-effort LWF request of ``vms`` VMs (CPU 100, Memory 1024) asking ``seconds``
    and running ``runs`` (``seconds`` if None)."""
    return lwf_request(lease_id, arrival, vms, seconds, runs=runs)


lwf = write_lwf_requests


NO_PREEMPTION = ("scheduling.policy-preemption=no-preemption", "scheduling.suspension=none")

#: 4 nodes of one VM each, idle 100 W, full 200 W, off 5 W, always on
POWER = ("power.pstates=2.0:100:200", "power.off-watts=5")

#: the leases of the test below (lease 1 asks 600 s and runs 500)
CAPPED = (request(1, 0, 1, 600, runs=500), request(2, 10, 2, 300), request(3, 20, 1, 500),
          request(4, 30, 1, 100), request(5, 40, 3, 100))


def capped_run(trace: Path, *settings: str) -> Run:
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [
        "simulation.resources=4 CPU:100 Memory:1024", f"tracefile.tracefile={trace}",
        "scheduling.backfilling=aggressive", *NO_PREEMPTION, *POWER, *settings])
    return Run(config, plugins)


@pytest.mark.parametrize("placement, cap", [
    ("auto", ("power.power-cap=650",)), ("at-start", ("power.power-cap=650",)),
    ("when-planned", ("power.power-cap=650",)),
    ("auto", ("power.power-cap=325", "power.power-cap-scale=2"))])
def test_a_cap_on_nodes_that_stay_on_is_a_bound_on_the_vms_running(tmp_path, placement, cap):
    """4 nodes, always on, VMs of CPU 100 (one a node): the site draws 4 x 100 W idle and
    100 W more per running VM; a cap of 650 W leaves 250 W, so at most 2 VMs run at once
    (3 nodes may be free and a lease still waits). EASY:

             0  20            500 520          820      920
    n0      [1: 0-500          ]   [2: 520-820  ][4: 820-920]
    n1         [3: 20-520        ][2: 520-820  ]
    n2, n3  (idle: the cap leaves no room)

    - 1 (1 VM, asks 600 s, runs 500) starts at 0.
    - 2 (2 VMs for 300 s, at 10): 3 nodes are free but the cap leaves room for 1 VM; EASY's
      reservation at 600 (1's planned end); when 1 ends early (500), 3 still holds 1 VM
      until 520: it moves to 520.
    - 3 (1 VM for 500 s, at 20) fits now and ends (520) before 600: backfilled.
    - 4 (1 VM for 100 s, at 30): no room now; from 500 its 100 s would overlap 2; once 2
      starts it heads the queue and starts when 2 ends (820).
    - 5 (3 VMs, at 40) needs 300 W of dynamic power; the cap never leaves more than
      250 W: rejected with when-planned's reason.

    Power (W): 500 on [0, 20), 600 on [20, 500), 500 on [500, 520), 600 on [520, 820), 500
    on [820, 920); never above 650. Energy: 500 x 20 + 600 x 480 + 500 x 20 + 600 x 300 +
    500 x 100 = 538,000 J, in every placement (and with a cap of 325 W scaled by 2).
    """
    trace = lwf(tmp_path / "capped.lwf", *CAPPED)
    run = capped_run(trace, *cap, f"scheduling.placement={placement}")
    summary = run.run()
    run.table.check()
    assert summary["placement"] == {"auto": "at-start (auto)"}.get(placement, placement)
    assert run.table.counted == (placement != "when-planned")
    out = tmp_path / "out"
    run.write(out)
    with (out / "leases.csv").open() as fh:
        got = {int(r["lease_id"]): (r["state"], r["start"], r["end"], r["reason"])
               for r in csv.DictReader(fh)}
    assert got == {1: ("done", "0", "500", ""), 2: ("done", "520", "820", ""),
                   3: ("done", "20", "520", ""), 4: ("done", "820", "920", ""),
                   5: ("rejected", "", "", "the power cap never has room for it: it needs "
                                           "300 W and at most 250 W are ever left")}
    with (out / "series" / "power.csv").open() as fh:
        rows = [(float(r["time"]), float(r["it_watts"]), float(r["cap_watts"]))
                for r in csv.DictReader(fh)]
    steps = [(t, watts) for (t, watts, _), before in zip(rows, [None, *rows])
             if before is None or before[1] != watts]
    assert steps == [(0, 500), (20, 600), (500, 500), (520, 600), (820, 500), (920, 500)] \
        or steps == [(0, 500), (20, 600), (500, 500), (520, 600), (820, 500)]
    assert all(watts <= cap for _, watts, cap in rows) and {cap for *_, cap in rows} == {650}
    assert json.loads((out / "summary.json").read_text())["energy_joules"] == \
        pytest.approx(538_000)


SWITCHES = ("power.switch-on=10:150", "power.switch-off=10:120")


@pytest.mark.parametrize("settings, why", [
    (("power.policy-node-power=switch-off-idle", "power.idle-timeout=60", *SWITCHES),
     "with nodes that never switch"),
    (("power.initial-state=off", *SWITCHES), "with nodes that never switch"),
    (("power.power-cap={csv}",), "under a constant cap in watts"),
    (("simulation.resources=2 CPU:100 Memory:1024; 2 CPU:200 Memory:1024",),
     "on identical nodes"),
    (("power.pstates=2.0:100:200; 2.0:90:200", "simulation.resources=2 CPU:100 "
      "Memory:1024; 2 CPU:100 Memory:1024"), "on identical nodes"),
])
def test_a_cap_that_counting_cannot_hold_keeps_when_planned(tmp_path, settings, why):
    """A cap on nodes that switch (which node stays on for a plan is when-planned's pin),
    a cap that changes over time, or nodes that differ in resources or power: when-planned,
    and naming at-start is refused in one line."""
    trace = lwf(tmp_path / "capped.lwf", *CAPPED)
    (tmp_path / "cap.csv").write_text("time,watts\n0,650\n500,700\n")
    settings = tuple(s.format(csv=tmp_path / "cap.csv") for s in settings)
    with capped_run(trace, "power.power-cap=650", *settings) as run:
        assert run.placement.label() == "when-planned (auto: power cap)"
    with pytest.raises(ConfigError) as err:
        capped_run(trace, "power.power-cap=650", "scheduling.placement=at-start", *settings)
    assert f"(power cap: a power cap holds each node's power from the plans pinned on it, " \
           f"counted only {why}" in str(err.value)
    assert "\n" not in str(err.value)


def test_the_cap_is_checked_on_a_counted_run(tmp_path, monkeypatch):
    """The invariant "power never above the cap" watches a counted run too: a bound one VM
    too high (3 VMs under 650 W) lets lease 2 start at 10 beside 1 and the run fails with
    the power above the cap."""
    from lease_manager.energy.counted_cap import CountedCap
    from lease_manager.observers.invariants import InvariantViolation

    monkeypatch.setattr(CountedCap, "vm_limit", lambda self: 3)
    trace = lwf(tmp_path / "capped.lwf", *CAPPED)
    run = capped_run(trace, "power.power-cap=650", "scheduling.placement=at-start")
    with pytest.raises(InvariantViolation,
                       match="the site draws 700 W at 10 s, above its power cap of 650 W"):
        run.run()


def ar_at(lease_id: int, start: int, seconds: int) -> str:
    """An advance reservation of 1 VM asked at 0 for ``[start, start + seconds)``."""
    def hms(t: int) -> str:
        return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.00"
    return request(lease_id, 0, 1, seconds).replace(
        "<start/>", f'<start><exact time="{hms(start)}"/></start>')


@pytest.mark.parametrize("asks, joules", [(500, 186_150), (1500, 233_650)])
def test_under_a_cap_switching_nodes_draw_what_the_pins_say(tmp_path, asks, joules):
    """Why a cap on nodes that switch stays when-planned. 2 nodes, switch-off-idle after
    100 s, boot and shutdown 10 s, a cap (1 MW) that never binds. A runs [0, 500) and asks
    ``asks`` s; B, an AR asked at 0, runs [1000, 1100). Under a cap a node stays on until
    the lease pinned on it, so the energy depends on where B was pinned at 0:

    asks 500:  B on A's node n0:   n0 on [0, 1100) (idle 500-1000), n1 off from 100
    asks 1500: B on the other node: it stays on [0, 1100) (idle 0-1000), A's goes off at 600

    Same leases at the same times, same VM counts once A has ended: 186,150 J or 233,650 J
    (150,750 J for both without the cap). Counting, which pins nothing at 0, cannot tell the
    two apart."""
    trace = lwf(tmp_path / "gap.lwf", request(1, 0, 1, asks, runs=500), ar_at(2, 1000, 100))
    run = capped_run(trace, "simulation.resources=2 CPU:100 Memory:1024",
                     "power.switch-on=10:150", "power.switch-off=10:120",
                     "power.policy-node-power=switch-off-idle", "power.idle-timeout=100",
                     "power.power-cap=1000000", "scheduling.placement=when-planned")
    summary = run.run()
    run.write(tmp_path / "out")
    with (tmp_path / "out" / "leases.csv").open() as fh:
        assert [(r["start"], r["end"]) for r in csv.DictReader(fh)] == [("0", "500"),
                                                                        ("1000", "1100")]
    assert summary["energy_joules"] == pytest.approx(joules)
