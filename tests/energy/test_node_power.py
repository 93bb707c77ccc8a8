"""Power model, node power states and energy accounting on hand-computed schedules.

Power model of every scenario unless said otherwise: one level, 100 W idle, 200 W full
(``pstates = 1.0:100:200``); switching off takes 5 s at 50 W, switching on 20 s at 150 W, an
off node draws 5 W. Nodes are visited in node order (``no-policy``).
"""

from __future__ import annotations

import math

import pytest

from lease_manager.kernel.lease import Lease, LeaseType, VMRequest

from support import be, simulate

POWER = ("power.pstates=1.0:100:200", "power.switch-off=5:50", "power.switch-on=20:150",
         "power.off-watts=5", "scheduling.policy-host-selection=no-policy")
SWITCH_OFF = ("power.policy-node-power=switch-off-idle",)


def profile(run) -> list[tuple[float, float]]:
    p = run.energy.profile
    return list(zip(p.times.tolist(), p.watts.tolist()))


def states(run) -> list[tuple[int, str, float, float]]:
    return list(run.node_states.intervals(*run.energy.window))


def test_idle_and_full_power_with_a_lease_on_half_the_cores():
    """
    n0 (4 cores)  [lease 1: 2 VMs of 1 core, 0-100]

    power: 100 W idle + 2/4 x (200 - 100) W = 150 W over [0, 100): 15,000 J.
    The lease's energy is that of its two cores at full power: 2/4 x 200 W x 100 s = 10,000 J.
    """
    lease = be(1, 2, 100, 0)
    run = simulate([lease], *POWER, resources="1 CPU:4 Memory:1024")
    assert profile(run) == [(0, 150), (100, 150)]
    assert run.summary["energy_it_joules"] == 15000
    assert run.summary["energy_joules"] == 15000
    assert run.energy.energy_of(lease) == 10000
    assert states(run) == [(0, "on", 0, 100)]
    assert run.summary["node_switch_ons"] == 0


def test_nodes_switched_off_when_idle_and_booted_for_a_later_lease():
    """idle-timeout 10 s; lease 1: 1 VM, 30 s at 0; lease 2: 2 VMs, 10 s at 100.

    n0  [1: 0-30][idle 30-40][down 40-45][off 45-100][boot 100-120][2: 120-130]
    n1  [idle 0-10][down 10-15][off 15-100 ..........][boot 100-120][2: 120-130]

    power (W): 0-10 300 | 10-15 250 | 15-30 205 | 30-40 105 | 40-45 55 | 45-100 10 |
               100-120 300 | 120-130 400
    energy: 3000 + 1250 + 3075 + 1050 + 275 + 550 + 6000 + 4000 = 19,200 J.
    Lease 2 waits only for the boot: it starts at 120 (wait 20 s).
    """
    one, two = be(1, 1, 30, 0), be(2, 2, 10, 100)
    run = simulate([one, two], *POWER, *SWITCH_OFF, "power.idle-timeout=10",
                   resources="2 CPU:1 Memory:1024")
    assert (two.start, two.end) == (120, 130)
    assert profile(run) == [(0, 300), (10, 250), (15, 205), (30, 105), (40, 55), (45, 10),
                            (100, 300), (120, 400), (130, 400)]
    assert run.summary["energy_it_joules"] == 19200
    # n0: 6000 + 1000 + 250 + 275 + 3000 + 2000; n1: 1000 + 250 + 425 + 3000 + 2000
    assert run.energy.node_energy.tolist() == [12525, 6675]
    assert states(run) == [
        (0, "on", 0, 40), (0, "switching-off", 40, 45), (0, "off", 45, 100),
        (0, "switching-on", 100, 120), (0, "on", 120, 130),
        (1, "on", 0, 10), (1, "switching-off", 10, 15), (1, "off", 15, 100),
        (1, "switching-on", 100, 120), (1, "on", 120, 130)]
    assert run.summary["node_switch_ons"] == 2


def test_a_planned_shutdown_is_cancelled_by_an_arrival():
    """idle-timeout 60 s, one node. Lease 1: 10 s at 0; lease 2: 10 s at 40; lease 3: 10 s
    at 200.

    n0  [1: 0-10][idle 10-40][2: 40-50][idle 50-110][down 110-115][off 115-200][boot 200-220]
        [3: 220-230]

    The shutdown due at 70 (idle since 10) does not happen: lease 2 arrived at 40 and ran at
    once on the node, which is on. Idle again from 50, the node goes down at 110.
    power (W): 0-10 200 | 10-40 100 | 40-50 200 | 50-110 100 | 110-115 50 | 115-200 5 |
               200-220 150 | 220-230 200
    energy: 2000 + 3000 + 2000 + 6000 + 250 + 425 + 3000 + 2000 = 18,675 J.
    """
    leases = [be(1, 1, 10, 0), be(2, 1, 10, 40), be(3, 1, 10, 200)]
    run = simulate(leases, *POWER, *SWITCH_OFF, "power.idle-timeout=60",
                   resources="1 CPU:1 Memory:1024")
    assert [(l.start, l.end) for l in leases] == [(0, 10), (40, 50), (220, 230)]
    assert states(run) == [(0, "on", 0, 110), (0, "switching-off", 110, 115),
                           (0, "off", 115, 200), (0, "switching-on", 200, 220),
                           (0, "on", 220, 230)]
    assert run.summary["energy_it_joules"] == 18675


def test_no_shutdown_when_a_plan_needs_the_node_before_it_could_come_back():
    """idle-timeout 60 s, one node. Lease 1: 10 s at 0; lease 2: an advance reservation for
    [80, 90), asked for at 5.

    At 70 the node has been idle 60 s, but going down (5 s) and booting again (20 s) would
    end at 95, after the reservation's start at 80: it stays on.
    n0  [1: 0-10][idle 10-80][2: 80-90]
    energy: 200 x 10 + 100 x 70 + 200 x 10 = 11,000 J.
    """
    ar = Lease(2, LeaseType.ADVANCE_RESERVATION, 5, VMRequest.uniform(1, [1, 0]), 10, 10,
               start_request=80)
    leases = [be(1, 1, 10, 0), ar]
    run = simulate(leases, *POWER, *SWITCH_OFF, "power.idle-timeout=60",
                   resources="1 CPU:1 Memory:1024")
    assert (ar.start, ar.end) == (80, 90)
    assert states(run) == [(0, "on", 0, 90)]
    assert run.summary["energy_it_joules"] == 11000


def test_a_lease_planned_on_an_off_node_starts_after_its_boot():
    """initial-state off, one node, always-on. Lease 1: 10 s at 0.

    n0  [boot 0-20][1: 20-30]
    energy: 150 x 20 + 200 x 10 = 5,000 J.
    """
    lease = be(1, 1, 10, 0)
    run = simulate([lease], *POWER, "power.initial-state=off",
                   resources="1 CPU:1 Memory:1024")
    assert (lease.start, lease.end) == (20, 30)
    assert states(run) == [(0, "switching-on", 0, 20), (0, "on", 20, 30)]
    assert run.summary["energy_it_joules"] == 5000
    assert run.summary["node_switch_ons"] == 1


def test_a_boot_planned_for_a_reservation_moves_with_it():
    """initial-state off, two nodes, conservative backfilling. Lease 1: 2 VMs, 100 s asked,
    10 s used, at 0; lease 2: 2 VMs, 10 s, at 1 (reserved after lease 1, at 120).

    Lease 2 first holds [120, 130) on both nodes; lease 1 ends early at 30 and lease 2 moves
    to 30: its reservation starts as soon as the nodes, which are on, are free.
    n0, n1  [boot 0-20][1: 20-30][2: 30-40]
    energy: 2 x 150 x 20 + 2 x 200 x 20 = 14,000 J; no node boots twice.
    """
    one, two = be(1, 2, 100, 0, actual=10), be(2, 2, 10, 1)
    run = simulate([one, two], *POWER, "power.initial-state=off",
                   "scheduling.backfilling=conservative", resources="2 CPU:1 Memory:1024")
    assert (one.start, one.end) == (20, 30)
    assert (two.start, two.end) == (30, 40)
    assert run.summary["node_switch_ons"] == 2
    assert run.summary["energy_it_joules"] == 14000


def test_cooling_price_and_carbon():
    """One node, lease 1: 1 VM, 3600 s. IT power 200 W for an hour: 0.2 kWh = 720,000 J.
    COP 2: total = IT x 3/2 = 0.3 kWh; at $0.10/kWh and 0.5 kg/kWh: $0.03, 0.15 kg."""
    run = simulate([be(1, 1, 3600, 0)], *POWER, "power.cop=2", "power.electricity-price=0.1",
                   "power.carbon-rate=0.5", resources="1 CPU:1 Memory:1024")
    s = run.summary
    assert s["energy_it_joules"] == 720000
    assert s["energy_joules"] == pytest.approx(1080000)
    assert s["energy_cost"] == pytest.approx(0.03)
    assert s["carbon_kg"] == pytest.approx(0.15)


def test_without_a_power_section_there_is_no_energy_accounting():
    run = simulate([be(1, 1, 10, 0)])
    assert run.energy is None
    assert "energy_joules" not in run.summary


def test_outputs(tmp_path):
    """``series/power.csv``, ``node_states.csv`` and the leases' ``energy_joules``."""
    run = simulate([be(1, 1, 10, 0)], *POWER, "power.initial-state=off",
                   resources="1 CPU:1 Memory:1024")
    run.write(tmp_path)
    assert (tmp_path / "series" / "power.csv").read_text().splitlines() == [
        "time,site,it_watts,total_watts,green_watts,cap_watts",
        "0,site,150.0,150.0,0,", "20,site,200.0,200.0,0,", "30,site,200.0,200.0,0,"]
    assert (tmp_path / "node_states.csv").read_text().splitlines() == [
        "site,node,state,start,end", "site,0,switching-on,0,20", "site,0,on,20,30"]
    assert (tmp_path / "nodes.csv").read_text().splitlines() == [
        "site,node,energy_it_joules,seconds_on,seconds_off,seconds_switching_on,"
        "seconds_switching_off,switch_ons", "site,0,5000.0,10,0,20,0,1"]
    leases = (tmp_path / "leases.csv").read_text().splitlines()
    assert leases[0].endswith(",nodes,level,ghz,stretched_requested,energy_joules")
    assert leases[1].endswith(",0,0,1,10,2000")


@pytest.mark.parametrize(("option", "value", "message"), [
    ("pstates", "2.4:100", "is not GHz:IDLE-WATTS:FULL-WATTS"),
    ("pstates", "2.4:300:200", "full power is below idle power"),
    ("pstates", "2.4:100:200 1.2:90:150", "lowest frequency first"),
    ("pstates", "2.4:100:inf", "full watts 'inf' is not a number"),
    ("pstates", "2.4:100:3000000000", "must lie in"),
    ("off-watts", "1; 2; 3", "3 values for 1 node groups"),
    ("switch-on", "10", "is not SECONDS:WATTS"),
    ("cubic-law", "65:7.5:0.675:1.8", "is not BETA:ALPHA:FMIN:FMAX:LEVELS"),
])
def test_bad_power_options_are_one_line_errors(option, value, message):
    from lease_manager.errors import ConfigError
    settings = [f"power.{option}={value}"]
    if option != "pstates" and option != "cubic-law":
        settings.append("power.pstates=1:1:2")
    with pytest.raises(ConfigError, match=message) as err:
        simulate([be(1, 1, 10, 0)], *settings, resources="1 CPU:1 Memory:1024")
    assert "\n" not in str(err.value) and f"[power] {option}" in str(err.value)


def test_switching_nodes_off_needs_a_boot_time():
    from lease_manager.errors import ConfigError
    with pytest.raises(ConfigError, match="switch-on time above 0"):
        simulate([be(1, 1, 10, 0)], "power.pstates=1:1:2", *SWITCH_OFF,
                 resources="1 CPU:1 Memory:1024")


def test_cubic_law_levels():
    """Garg et al.'s New York site: beta 65, alpha 7.5, 5 levels from 0.675 to 1.8 GHz, on
    nodes of 2 CPUs. Full power at f: 2 x (65 + 7.5 f^3); idle 2 x 65 when counted."""
    from lease_manager.energy.power_model import cubic_pstates
    levels = cubic_pstates("65:7.5:0.675:1.8:5", 2, True)
    assert [round(p.ghz, 6) for p in levels] == [0.675, 0.95625, 1.2375, 1.51875, 1.8]
    assert levels[-1].full == pytest.approx(2 * (65 + 7.5 * 1.8 ** 3))
    assert {p.idle for p in levels} == {130}
    assert {p.idle for p in cubic_pstates("65:7.5:0.675:1.8:5", 2, False)} == {0}
    assert math.isclose(levels[0].full, 2 * (65 + 7.5 * 0.675 ** 3))


@pytest.mark.parametrize(("gamma", "length"), [(1, 200), (0.5, 150)])
def test_a_lease_at_a_lower_frequency_is_stretched(gamma, length):
    """Levels 1 GHz (80 W idle, 120 W full) and 2 GHz (100 W idle, 200 W full); policy
    ``lowest``. Lease 1: 1 VM on a one-core node, 100 s of work at 2 GHz, at 0.

    T(1 GHz) = 100 x (gamma x (2/1 - 1) + 1): 200 s with gamma 1, 150 s with gamma 0.5.
    n0  [1 at 1 GHz: 0-T]
    power: the busy core at 1 GHz draws its full power, 120 W (an idle core would draw the
    highest level's idle power, 100 W): energy 120 x T = 24,000 J or 18,000 J, against
    200 W x 100 s = 20,000 J at 2 GHz.
    """
    lease = be(1, 1, 100, 0)
    run = simulate([lease], "power.pstates=1.0:80:120 2.0:100:200",
                   "power.policy-operating-point=lowest", f"power.gamma={gamma}",
                   resources="1 CPU:1 Memory:1024")
    assert (lease.start, lease.end, lease.level) == (0, length, 0)
    assert run.summary["energy_it_joules"] == 120 * length
    assert run.energy.lease_values(lease) == (0, 1.0, length, 120 * length)


def test_a_lease_gives_its_own_gamma():
    """As above with gamma 1 in the configuration, but the lease says gamma 0: its run time
    does not depend on the frequency (100 s at 1 GHz). A gamma outside [0, 1] is refused."""
    lease, bad = be(1, 1, 100, 0), be(2, 1, 100, 0)
    lease.extra["gamma"] = "0"
    bad.extra["gamma"] = "2"
    simulate([lease, bad], "power.pstates=1.0:80:120 2.0:100:200",
             "power.policy-operating-point=lowest", resources="1 CPU:1 Memory:1024")
    assert (lease.start, lease.end) == (0, 100)
    assert bad.reason == "bad operating point: gamma '2' is not in [0, 1]"


def test_a_stretched_lease_suspended_and_resumed_keeps_its_work():
    """Lowest level, gamma 1 (T doubles). One node of CPU 100 / Memory 1024, suspend and resume
    at 1024 MB/s (1 s each). Lease 1: best-effort, 100 s of work (200 s at 1 GHz), at 0;
    lease 2: an advance reservation of the node for [50, 60), asked for at 10.

    n0  [1: 0-49][susp 49-50][2: 50-60][resume 60-61][1: 61-212]
    Lease 1 did 49 s at half speed = 24.5 s of work before suspending; the remaining 75.5 s
    take 151 s at 1 GHz.
    """
    node = [100, 1024]
    one = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(1, node), 100, 100)
    two = Lease(2, LeaseType.ADVANCE_RESERVATION, 10, VMRequest.uniform(1, node), 10, 10,
                start_request=50)
    simulate([one, two], "power.pstates=1.0:80:120 2.0:100:200",
             "power.policy-operating-point=lowest", "scheduling.suspend-rate=1024",
             "scheduling.resume-rate=1024", resources="1 CPU:100 Memory:1024")
    assert [(r.kind, r.start, r.end) for r in one.allocations] == [
        ("vm", 0, 49), ("suspend", 49, 50), ("resume", 60, 61), ("vm", 61, 212)]
    assert one.work_done == 100


def test_a_backend_is_told_when_nodes_switch_off_and_on():
    """The scenario of ``test_nodes_switched_off_when_idle_and_booted_for_a_later_lease``
    with an enactment that asks for power calls (as the daemon's does): node 1 is switched
    off at 10, node 0 at 40, both on at 100 (their boots start then). A replay's enactment
    asks for none, so its steps are those of a run without power calls."""
    from lease_manager.config.schema import load_config
    from lease_manager.kernel.engine import ReplayEnactment
    from lease_manager.plugins import Plugins
    from lease_manager.run import Run

    calls = []

    class Recorder(ReplayEnactment):
        power_calls = True

        def power_off(self, node, now):
            calls.append(("off", node, now))

        def power_on(self, node, now):
            calls.append(("on", node, now))

    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [
        "simulation.resources=2 CPU:1 Memory:1024", *POWER, *SWITCH_OFF,
        "power.idle-timeout=10"])
    run = Run(config, plugins, leases=[be(1, 1, 30, 0), be(2, 2, 10, 100)],
              enactment=lambda r: Recorder(r.timeline))
    run.run()
    assert calls[:2] == [("off", 1, 10), ("off", 0, 40)]
    assert sorted(calls[2:]) == [("on", 0, 100), ("on", 1, 100)]


def test_green_production_is_used_first_and_the_grid_pays_and_emits(tmp_path):
    """One node, lease 1: 1 VM, 100 s at 0: IT power 200 W over [0, 100).
    Green production 50 W from 0, 300 W from 40, 0 from 80; electricity $0.1/kWh from 0 and
    $0.2/kWh from 50; 0.5 kg/kWh.

    time     0-40   40-50  50-80  80-100
    power    200    200    200    200
    green    50     300    300    0
    grid     150    0      0      200      -> grid 6,000 + 4,000 J, green 2,000 + 8,000 J
    price    0.1    0.1    0.2    0.2      -> cost (150 x 40 x 0.1 + 200 x 20 x 0.2) / 3.6e6
    """
    green = tmp_path / "green.csv"
    green.write_text("time,watts\n0,50\n40,300\n80,0\n")
    price = tmp_path / "price.csv"
    price.write_text("time,price\n0,0.1\n50,0.2\n")
    run = simulate([be(1, 1, 100, 0)], *POWER, f"power.green-production={green}",
                   f"power.electricity-price={price}", "power.carbon-rate=0.5",
                   resources="1 CPU:1 Memory:1024")
    s = run.summary
    assert s["energy_joules"] == 20000
    assert s["green_used_joules"] == 10000 and s["brown_joules"] == 10000
    assert s["energy_cost"] == pytest.approx((150 * 40 * 0.1 + 200 * 20 * 0.2) / 3.6e6)
    assert s["carbon_kg"] == pytest.approx(10000 * 0.5 / 3.6e6)
    run.write(tmp_path / "out")
    assert (tmp_path / "out" / "series" / "power.csv").read_text().splitlines()[1:] == [
        "0,site,200.0,200.0,50,", "40,site,200.0,200.0,300,", "80,site,200.0,200.0,0,",
        "100,site,200.0,200.0,0,"]


def test_green_scale_scales_the_production_and_its_forecast(tmp_path):
    """The scenario above with a plant twice as large at green-scale 0.5: one node, lease 1
    (1 VM, 100 s at 0) draws 200 W over [0, 100).

    time       0-40   40-80  80-100
    file       100    600    0        (W, before scaling)
    green      50     300    0        (x 0.5)  -> produced 2,000 + 12,000 = 14,000 J
    power      200    200    200
    from green 50     200    0        -> used 2,000 + 8,000 = 10,000 J; grid 6,000 + 4,000
    Unscaled, it would use 100 x 40 + 200 x 40 = 12,000 J of the 28,000 J produced.
    """
    green = tmp_path / "green.csv"
    green.write_text("time,watts\n0,100\n40,600\n80,0\n")
    forecast = tmp_path / "forecast.csv"
    forecast.write_text("issued,time,watts\n0,0,100\n0,40,600\n")
    run = simulate([be(1, 1, 100, 0)], *POWER, f"power.green-production={green}",
                   f"power.green-forecast={forecast}", "power.green-scale=0.5",
                   resources="1 CPU:1 Memory:1024")
    s = run.summary
    assert run.energy.green_produced == 14000
    assert s["green_used_joules"] == 10000 and s["brown_joules"] == 10000
    assert run.energy.model.forecast.at(0).at(50) == 300
    assert run.energy.violations() == []
    run.write(tmp_path / "out")
    assert [row.split(",")[4] for row in (tmp_path / "out" / "series" / "power.csv")
            .read_text().splitlines()[1:]] == ["50", "300", "0", "0"]


def test_green_used_above_production_breaks_the_run(tmp_path, monkeypatch):
    """The invariant "green energy used never above production", made to fire: one node,
    lease 1 (1 VM, 100 s at 0) at 200 W, green 50 W throughout (5,000 J produced, all used).
    The accounting is then made to claim 1 J more green used than produced: the energy check
    names both figures, and the run's invariant check stops the run on it."""
    from lease_manager.energy.energy_accounting import EnergyAccounting
    from lease_manager.observers.invariants import InvariantViolation

    green = tmp_path / "green.csv"
    green.write_text("time,watts\n0,50\n")
    settings = (*POWER, f"power.green-production={green}")
    run = simulate([be(1, 1, 100, 0)], *settings, resources="1 CPU:1 Memory:1024")
    assert run.energy.green_used == run.energy.green_produced == 5000
    assert run.energy.violations() == []   # used = produced is allowed
    run.energy.green_used = 5001
    assert run.energy.violations() == [
        "the site used 5001 J of green energy, more than the 5000.0 J produced"]

    tabulate = EnergyAccounting._tabulate

    def overused(self, start, end):
        tabulate(self, start, end)
        self.green_used = self.green_produced + 1

    monkeypatch.setattr(EnergyAccounting, "_tabulate", overused)
    with pytest.raises(InvariantViolation, match="more than the 5000.0 J produced"):
        simulate([be(1, 1, 100, 0)], *settings, resources="1 CPU:1 Memory:1024")


@pytest.mark.parametrize(("content", "message"), [
    ("time,watts\n0,50\n0,60\n", "green.csv:3: time: 0 is not after the previous row's time 0"),
    ("time,watts\n0,-5\n", "green.csv:2: watts: -5 is not in [0, 1e+12]"),
    ("time,watts\n0,nan\n", "green.csv:2: watts: 'nan' is not a finite number"),
    ("time,watts\n0,\u0665\n", "green.csv:2: watts: '\u0665' is not a number (ASCII digits"),
    ("time,watts\n0,50,1\n", "green.csv:2: expected 2 fields (time,watts), found 3"),
    ("time,watts\n", "green.csv: no rows"),
])
def test_bad_series_files_are_one_line_errors(tmp_path, content, message):
    from lease_manager.errors import InputError
    green = tmp_path / "green.csv"
    green.write_text(content)
    with pytest.raises(InputError) as err:
        simulate([be(1, 1, 10, 0)], *POWER, f"power.green-production={green}",
                 resources="1 CPU:1 Memory:1024")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_missing_series_file_names_the_option(tmp_path):
    from lease_manager.errors import ConfigError
    with pytest.raises(ConfigError, match=r"\[power\] electricity-price: file not found"):
        simulate([be(1, 1, 10, 0)], *POWER, f"power.electricity-price={tmp_path / 'no.csv'}",
                 resources="1 CPU:1 Memory:1024")
