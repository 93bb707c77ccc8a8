"""Several sites in one run (``[site:NAME]`` sections), each with its nodes, scheduler, power
model and economics; arrivals go to the site where they can start first."""

from __future__ import annotations

import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.plugins import Plugins
from lease_manager.run import Run

from support import be

SITE_A = ("site:a.resources=1 CPU:1 Memory:1024", "site:a.pstates=1.0:100:200",
          "site:a.cop=1", "site:a.electricity-price=0.1", "site:a.carbon-rate=0.5")
SITE_B = ("site:b.resources=1 CPU:1 Memory:1024", "site:b.pstates=1.0:50:150",
          "site:b.cop=3", "site:b.electricity-price=0.2", "site:b.carbon-rate=0.1")


def run_sites(leases, *settings):
    plugins = Plugins(entry_points=False)
    run = Run(load_config(None, plugins.schema, list(settings)), plugins, leases=leases)
    run.run()
    run.table.check()
    return run


def test_two_sites_with_their_own_cooling_price_and_carbon():
    """Site a: one node, 100 W idle, 200 W full, COP 1 (total = 2 x IT), $0.1/kWh,
    0.5 kg/kWh. Site b: one node, 50 W idle, 150 W full, COP 3 (total = 4/3 x IT), $0.2/kWh,
    0.1 kg/kWh. Lease 1: 1 VM, 1 h at 0; lease 2: 1 VM, 30 min at 0.

    a  [1: 0-3600]                       IT 200 W x 3600 s = 0.2 kWh; total 0.4 kWh
    b  [2: 0-1800][idle 1800-3600]       IT 150 x 1800 + 50 x 1800 = 0.1 kWh; total 0.1333 kWh

    Both sites are free at 0: lease 1 goes to the first, a; lease 2 could start at 3600 on a
    but at 0 on b. a: $0.04, 0.2 kg; b: $0.02667, 0.01333 kg.
    """
    one, two = be(1, 1, 3600, 0), be(2, 1, 1800, 0)
    run = run_sites([one, two], *SITE_A, *SITE_B)
    assert (one.site, two.site) == ("a", "b")
    assert (two.start, two.end) == (0, 1800)
    s = run.summary
    a, b = s["sites"]["a"], s["sites"]["b"]
    assert (a["energy_it_joules"], a["energy_joules"]) == (720000, 1440000)
    assert a["energy_cost"] == pytest.approx(0.04) and a["carbon_kg"] == pytest.approx(0.2)
    assert b["energy_it_joules"] == 360000 and b["energy_joules"] == pytest.approx(480000)
    assert b["energy_cost"] == pytest.approx(0.2 / 7.5) and b["carbon_kg"] == pytest.approx(
        0.1 / 7.5)
    assert s["energy_joules"] == pytest.approx(1920000)
    assert s["energy_cost"] == pytest.approx(0.04 + 0.2 / 7.5)
    assert s["leases_completed"] == 2


def test_outputs_carry_the_site(tmp_path):
    one, two = be(1, 1, 3600, 0), be(2, 1, 1800, 0)
    run = run_sites([one, two], *SITE_A, *SITE_B)
    run.write(tmp_path)
    rows = (tmp_path / "leases.csv").read_text().splitlines()
    assert rows[0].endswith(",nodes,site,level,ghz,stretched_requested,energy_joules")
    assert [r.split(",")[14] for r in rows[1:]] == ["a", "b"]
    assert (tmp_path / "node_states.csv").read_text().splitlines() == [
        "site,node,state,start,end", "a,0,on,0,3600", "b,0,on,0,3600"]
    power = (tmp_path / "series" / "power.csv").read_text().splitlines()
    assert power[1:] == ["0,a,200.0,400.0,0,", "3600,a,200.0,400.0,0,",
                         "0,b,150.0,200.0,0,", "1800,b,50.0,66.66666666666666,0,",
                         "3600,b,50.0,66.66666666666666,0,"]


def test_each_site_has_its_own_backfilling():
    """Site a off, site b conservative: each scheduler keeps its own mode."""
    run = run_sites([be(1, 1, 10, 0)], *SITE_A, *SITE_B, "site:b.backfilling=conservative")
    modes = {site.name: site.scheduler.backfilling for site in run.sites}
    assert modes == {"a": "aggressive", "b": "conservative"}


def test_site_sections_are_checked():
    plugins = Plugins(entry_points=False)
    with pytest.raises(ConfigError, match=r"\[site:a\] policy-queue: not an option a site"):
        load_config(None, plugins.schema, [*SITE_A, "site:a.policy-queue=fcfs"])
    with pytest.raises(ConfigError, match="every site needs its nodes"):
        load_config(None, plugins.schema, [*SITE_A, "site:b.cop=2"])
    config = load_config(None, plugins.schema, [*SITE_A, "site:b.resources=1 CPU:1"])
    with pytest.raises(ConfigError, match="every site needs the same"):
        Run(config, plugins, leases=[])
    config = load_config(None, plugins.schema, [*SITE_A, "site:b.resources=1 CPU:1 Memory:1"])
    with pytest.raises(ConfigError, match="site 'b' has no power model"):
        Run(config, plugins, leases=[])


def test_two_sites_on_a_real_trace():
    """The first 500 jobs of the 30-day Blue Horizon trace over two sites of 72 nodes (the
    4 jobs of 140 nodes fit neither and are rejected); the invariant check runs per site;
    every lease is accounted once and the sites' energies add up to the total."""
    from lease_manager.run import load_run

    from support import ROOT
    run = load_run(ROOT / "etc" / "sample.ini", [
        "tracefile.max-jobs=500", "site:ny.resources=72 CPU:1 Memory:1024",
        "site:ny.pstates=1.8:65:110", "site:ny.cop=2", "site:ny.electricity-price=0.15",
        "site:fr.resources=72 CPU:1 Memory:1024", "site:fr.pstates=3.2:90:220",
        "site:fr.backfilling=conservative", "site:fr.cop=1.5"])
    s = run.run()
    assert s["leases_total"] == 500 and run.accounting.recorded == 500
    assert s["leases_completed"] == 496 and s["rejected_by_reason"] == {
        "larger than the site": 4}
    sites = s["sites"]
    start, end = s["energy_window"]
    # both sites ran leases: each drew more than its idle nodes would have
    assert sites["ny"]["energy_it_joules"] > 65 * 72 * (end - start)
    assert sites["fr"]["energy_it_joules"] > 90 * 72 * (end - start)
    assert s["energy_joules"] == pytest.approx(sites["ny"]["energy_joules"]
                                               + sites["fr"]["energy_joules"])


def dl(lease_id: int, vms: int, duration: float, submit: float, deadline: float) -> Lease:
    """A deadline lease of ``vms`` one-CPU VMs."""
    return Lease(lease_id, LeaseType.DEADLINE, submit, VMRequest.uniform(vms, [1, 0]),
                 duration, duration, deadline=deadline)


def test_a_site_selection_cycle_decides_the_leases_of_each_cycle_together():
    """``site-selection-cycle = 50``: leases arriving in [0, 50) are decided at 50, those
    arriving in [50, 100) at 100 (earliest-start, ties to the site with fewer waiting, then
    the first).

    lease 1: 100 s at 10; lease 2: 100 s at 30; lease 3: 10 s at 50 (the cycle's end: next one)

    time  0    50        100       150  160
    a          [1--------------------)[3)      1 and 2 decided at 50: 1 -> a (both free),
    b          [2--------------------)         2 -> b (starts at 50, a only at 150)
                                                3 decided at 100: a and b free at 150 -> a
    """
    leases = [be(1, 1, 100, 10), be(2, 1, 100, 30), be(3, 1, 10, 50)]
    run = run_sites(leases, *SITE_A, *SITE_B, "simulation.site-selection-cycle=50")
    assert [(x.site, x.start, x.end) for x in leases] == [("a", 50, 150), ("b", 50, 150),
                                                          ("a", 150, 160)]
    assert run.summary["leases_completed"] == 3


def test_what_if_plans_at_a_level_and_against_the_deadline_changing_nothing():
    """Site a: levels 1 GHz and 2 GHz (gamma 1: 1 GHz takes twice as long). Lease 1 (100 s
    at 2 GHz) holds the node over [0, 100). Lease 2: 100 s of work, deadline 350.

    at 2 GHz: [100, 200) ends by 350        at 1 GHz: [100, 300) ends by 350
    deadline 250: at 1 GHz it would end at 300: None; at 2 GHz (100, 200)
    """
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, ["simulation.resources=1 CPU:1 Memory:1024",
                                                "power.pstates=1.0:100:150 2.0:100:200"])
    run = Run(config, plugins, leases=[])
    sched = run.scheduler
    sched.submit(be(1, 1, 100, 0), 0)
    sched.cycle(0)
    version = run.table.version
    late, tight = dl(2, 1, 100, 0, 350), dl(3, 1, 100, 0, 250)
    assert sched.what_if(late, 0) == (1, 100, 200)          # the policy's level: highest
    assert sched.what_if(late, 0, level=0) == (0, 100, 300)
    assert sched.what_if(tight, 0, level=0) is None
    assert sched.what_if(tight, 0, level=1) == (1, 100, 200)
    assert sched.what_if(dl(4, 2, 100, 0, 1000), 0) is None  # larger than the site
    assert (late.level, late.stretch) == (None, 1.0) and run.table.version == version


def test_utilization_counts_every_sites_nodes():
    """Two one-node sites; one lease of 100 s on each: both nodes busy all through the
    makespan of 100 s: utilisation 1 (the first site's capacity alone would give 2)."""
    run = run_sites([be(1, 1, 100, 0), be(2, 1, 100, 0)], *SITE_A, *SITE_B)
    assert run.summary["makespan"] == 100 and run.summary["utilization"] == 1.0


def test_sites_from_a_csv_file_with_cops_drawn_from_the_seed(tmp_path):
    """Two sites from a CSV file (a and b), a third from a section; a's COP is drawn in
    [0.6, 3.5] from the seed, the same for the same seed and name; --set wins over the file;
    relative files in the table are next to the table."""
    (tmp_path / "sites").mkdir()
    (tmp_path / "sites" / "price.csv").write_text("time,price\n0,0.25\n")
    (tmp_path / "sites" / "table.csv").write_text(
        "name,resources,pstates,cop,electricity-price\n"
        "a,1 CPU:1 Memory:1024,1.0:100:200,uniform:0.6:3.5,price.csv\n"
        "b,2 CPU:1 Memory:1024,1.0:50:150,2,\n")
    ini = tmp_path / "run.ini"
    ini.write_text("[simulation]\nsites-file = sites/table.csv\n"
                   "[site:c]\nresources = 1 CPU:1 Memory:1024\npstates = 1.0:10:20\n")

    def models(*settings):
        plugins = Plugins(entry_points=False)
        run = Run(load_config(ini, plugins.schema, list(settings)), plugins, leases=[])
        return {site.name: site.ctx.power for site in run.sites}

    first = models("simulation.seed=1")
    assert list(first) == ["c", "a", "b"]
    assert 0.6 <= first["a"].cop <= 3.5 and first["b"].cop == 2
    assert models("simulation.seed=1")["a"].cop == first["a"].cop
    assert models("simulation.seed=2")["a"].cop != first["a"].cop
    assert float(first["a"].price.at(0)) == 0.25 and float(first["b"].price.at(0)) == 0
    assert models("site:b.cop=3")["b"].cop == 3


@pytest.mark.parametrize("table, message", [
    ("site,resources\na,1 CPU:1\n", r"table.csv:1: the first line must be a header"),
    ("name,resorces\na,1 CPU:1\n", r"table.csv:1: .*column 'resorces' is not an option"),
    ("name,resources\na,1 CPU:1\na,2 CPU:1\n", r"table.csv:3: .*site 'a' is named twice"),
    ("name,resources\na\n", r"table.csv:2: 1 fields where the header has 2"),
    ("name,resources,cop\na,1 CPU:1 Memory:1024,uniform:3:1\n",
     r"table.csv:2: .*\[site:a\] cop: 'uniform:3:1': need"),
])
def test_a_bad_sites_file_is_one_line_naming_its_line(tmp_path, table, message):
    (tmp_path / "table.csv").write_text(table)
    plugins = Plugins(entry_points=False)
    with pytest.raises(ConfigError, match=message):
        load_config(None, plugins.schema, [f"simulation.sites-file={tmp_path / 'table.csv'}"])


def test_carbon_rates_and_prices_drawn_per_site_from_the_seed():
    """normal:0.2:0.4 per site: each site's own draw (cut at 0), the same for the same seed;
    uniform prices within their range; an empty sites-file is none."""
    settings = [*SITE_A, *SITE_B, "site:a.carbon-rate=normal:0.2:0.4",
                "site:b.carbon-rate=normal:0.2:0.4", "site:b.electricity-price=uniform:1:2",
                "simulation.sites-file="]

    def rates(seed):
        plugins = Plugins(entry_points=False)
        run = Run(load_config(None, plugins.schema, [*settings, f"simulation.seed={seed}"]),
                  plugins, leases=[])
        return [(float(s.ctx.power.carbon.at(0)), float(s.ctx.power.price.at(0)))
                for s in run.sites]

    one = rates(1)
    assert one == rates(1) and one != rates(2)
    assert one[0][0] != one[1][0] and all(r >= 0 for r, _ in one)
    assert 1 <= one[1][1] <= 2 and one[0][1] == 0.1
    draws = [r for seed in range(1, 40) for r, _ in rates(seed)]
    assert min(draws) == 0 and max(draws) > 0.4   # cut at 0; spread 0.4


def test_a_redrawn_normal_draw_draws_again_below_zero():
    """redrawn-normal:0.2:0.4 keeps a site's normal draw when it is at least 0 and draws
    again from the same stream when it is not: never 0, and the same as normal:0.2:0.4
    wherever that was not cut."""
    def rates(seed, kind):
        plugins = Plugins(entry_points=False)
        settings = [*SITE_A, *SITE_B, f"site:a.carbon-rate={kind}:0.2:0.4",
                    f"site:b.carbon-rate={kind}:0.2:0.4", "simulation.sites-file=",
                    f"simulation.seed={seed}"]
        run = Run(load_config(None, plugins.schema, settings), plugins, leases=[])
        return [float(s.ctx.power.carbon.at(0)) for s in run.sites]

    pairs = [(c, r) for seed in range(1, 40)
             for c, r in zip(rates(seed, "normal"), rates(seed, "redrawn-normal"))]
    assert all(r > 0 for _, r in pairs)
    assert all(r == c for c, r in pairs if c > 0)
    assert any(c == 0 for c, _ in pairs)      # some were cut, and drawn again instead


def test_a_bad_draw_is_one_line():
    plugins = Plugins(entry_points=False)
    with pytest.raises(ConfigError, match=r"\[site:a\] carbon-rate: 'normal:0.2' is not "
                                          r"normal:MEAN:SD"):
        load_config(None, plugins.schema, [*SITE_A, "site:a.carbon-rate=normal:0.2"])
