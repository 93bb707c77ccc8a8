"""NM across a sweep's profiles (``lease-manager report``) and lm-kassab-figures, on a
three-planner toy: the hand-computed instance of ``test_greenpower_planners``.

Makespans: bs-lpt 10, lpt 11, lptpn 12: C* = 10. Energy (p x phi): T1 75, T2 40, T3 60,
T4 70, 245 in all.
  bs-lpt: everything ends by 10                                     NM 0
  lpt:    T4 runs 9-11: 1 s x 35 W after C*                         NM 35/245 = 0.143
  lptpn:  T2 runs 8-12: 2 s x 10 W after C*                         NM 20/245 = 0.082
NM whole counts each task that ends after C* whole: lpt T4 (70) 0.286, lptpn T2 (40) 0.163.
Against C* x 0.9 = 9 (the sensitivity table):
  bs-lpt: T1 7-10 (1 s x 25 W), T4 8-10 on m1 (1 s x 35 W)   NM 60/245 = 0.245
          (whole: T1 75 + T4 70 = 145/245 = 0.592)
  lpt:    T1 7-10 (25), T4 9-11 (2 s x 35 W: 70)             NM 95/245 = 0.388, whole 0.592
  lptpn:  T2 8-12 (3 s x 10 W)                               NM 30/245 = 0.122
          (whole: T2 40/245 = 0.163)
"""

from __future__ import annotations

import pytest

from lease_manager.experiments.relative import results_with_nm
from lease_manager.experiments.report import report_command
from lease_manager.experiments.sweep import run_sweep
from lease_manager.experiments.sweep_file import load_sweep
from lm_greenpower.figures import main

from lmk_helpers import plugins


def toy_sweep(tmp_path):
    """The instance of ``test_greenpower_planners`` (its platform: lmk_helpers.PLATFORM) as a
    sweep of three planners."""
    (tmp_path / "tasks.csv").write_text("id,duration,watts\nT1,3,25\nT2,4,10\nT3,4,15\n"
                                        "T4,2,35\n")
    (tmp_path / "cap.csv").write_text("time,watts\n0,40\n4,25\n7,100\n")
    (tmp_path / "base.ini").write_text(
        "[simulation]\nresources = 2 CPU:2 Memory:1024\n"
        "[tracefile]\nvm-resources = CPU:1 Memory:1\n"
        "[power]\npstates = 1:10:10\nswitch-on = 1:20\nswitch-off = 1:15\n"
        "initial-state = off\npolicy-node-power = switch-off-idle\npower-cap = cap.csv\n"
        "[planning]\ninterval = 1\n")
    (tmp_path / "toy.ini").write_text(
        "[sweep]\nbase = base.ini\ntraces = tasks.csv\nseeds = 1\naxes = planner\n\n"
        "[common:greenpower]\nmax-watts = 35\n\n[axis:planner]\n"
        "lpt = planning.policy-planner=lpt\nlptpn = planning.policy-planner=lptpn\n"
        "bs-lpt = planning.policy-planner=bs-lpt\n")
    out = tmp_path / "out"
    outcome = run_sweep(load_sweep(tmp_path / "toy.ini", plugins()), out, jobs=1)
    assert outcome.done == 3 and not outcome.failed
    return out


def test_nm_on_a_three_planner_toy(tmp_path, capsys):
    out = toy_sweep(tmp_path)
    nm = {r["profile"]: r["nm"] for r in results_with_nm(out).rows}
    assert nm == {"bs-lpt": 0, "lpt": pytest.approx(35 / 245), "lptpn": pytest.approx(20 / 245)}
    whole = {r["profile"]: r["nm_whole"] for r in results_with_nm(out).rows}
    assert whole == {"bs-lpt": 0, "lpt": pytest.approx(70 / 245),
                     "lptpn": pytest.approx(40 / 245)}
    assert report_command(str(out)) == 0
    assert "nm" in capsys.readouterr().out
    assert main([str(out), "--plots"]) == 0
    text = capsys.readouterr().out
    assert "phi_max    lpt  lptpn  bs-lpt" in text
    assert "     35  0.143  0.082   0.000" in text
    assert "    lpt  0.143     0.000     0%     0.286" in text
    assert " bs-lpt  0.000 / 0.000  0.122 / 0.592  0.245 / 0.592" in text
    assert "    lpt  0.143 / 0.286  0.265 / 0.592  0.388 / 0.592" in text
    assert "  lptpn  0.082 / 0.163  0.102 / 0.163  0.122 / 0.163" in text
    assert (out / "plots" / "kassab-nm-trace-x1.png").stat().st_size > 1000


def test_the_best_planner_grid_of_figs_4_and_5(tmp_path, capsys):
    """A 2 x 2 grid (p_max 10 and 100, phi_max 35 and 70) of lpt and lptpn on the toy's four
    tasks. p_max's values also pick the envelope: the toy's stepped one at 10, 1,000 W at 100;
    phi_max is only a label here (the tasks keep their own watts).

    Stepped envelope: lpt ends at 11 (C*, NM 0), lptpn at 12 (T2 runs 8-12: 1 s x 10 W after
    C*, NM 10/245): lpt is best. 1,000 W: both boot both machines 0-1 and start every task at
    1, ending at 5: NM 0 for both, a tie. Mean NM over the 4 points: lpt 0, lptpn
    (2 x 10/245) / 4 = 0.020; NM whole (T2 counted whole, 40): (2 x 40/245) / 4 = 0.082.

    Against C* x 0.95 the stepped map turns (the test's toy of ``test_nm_on_a_three_planner_toy``
    gives the rest of each plan: lpt T1 7-10, lptpn's other tasks end by 9):

        stepped, C* x 0.95 = 10.45   lpt:   T4 9-11: 0.55 s x 35 W = 19.25   NM 0.079
                                            (whole: T4, 70)                  0.286
                                     lptpn: T2 8-12: 1.55 s x 10 W = 15.5    NM 0.063
                                            (whole: T2, 40)                  0.163
        1,000 W, C* x 0.95 = 4.75    both:  T2 and T3 1-5: 0.25 s x 25 W     NM 0.026

    so lptpn is best at p_max 10 under both readings, and 100 stays a tie.

    Both phi_max (35 and 70) lie in the paper's lower area (<= 75 W). Orders best there (a
    tie counts for each): at C* lpt 4 points, lptpn 2; against C* x 0.95 lptpn 4, lpt 2.
    ``--map-factor 1`` draws the lowered maps against C* itself: the map at C* again.
    """
    (tmp_path / "tasks.csv").write_text("id,duration,watts\nT1,3,25\nT2,4,10\nT3,4,15\n"
                                        "T4,2,35\n")
    (tmp_path / "step.csv").write_text("time,watts\n0,40\n4,25\n7,100\n")
    (tmp_path / "flat.csv").write_text("time,watts\n0,1000\n")
    (tmp_path / "base.ini").write_text(
        "[simulation]\nresources = 2 CPU:2 Memory:1024\n"
        "[tracefile]\nvm-resources = CPU:1 Memory:1\n"
        "[power]\npstates = 1:10:10\nswitch-on = 1:20\nswitch-off = 1:15\n"
        "initial-state = off\npolicy-node-power = switch-off-idle\n"
        "[planning]\ninterval = 1\n")
    (tmp_path / "grid.ini").write_text(
        "[sweep]\nbase = base.ini\ntraces = tasks.csv\nseeds = 1\n"
        "axes = planner, pmax, phimax\n\n"
        "[axis:planner]\nlpt = planning.policy-planner=lpt\n"
        "lptpn = planning.policy-planner=lptpn\n\n"
        f"[axis:pmax]\n10 = greenpower.max-length=10\n    power.power-cap={tmp_path}/step.csv\n"
        f"100 = greenpower.max-length=100\n    power.power-cap={tmp_path}/flat.csv\n\n"
        "[axis:phimax]\n35 = greenpower.max-watts=35\n70 = greenpower.max-watts=70\n")
    out = tmp_path / "out"
    outcome = run_sweep(load_sweep(tmp_path / "grid.ini", plugins()), out, jobs=1)
    assert outcome.done == 8 and not outcome.failed
    assert main([str(out), "--plots"]) == 0
    text = capsys.readouterr().out
    assert ("phi\\p   10        100\n"
            "   70  lpt  lpt/lptpn\n"
            "   35  lpt  lpt/lptpn\n") in text
    assert ("mean NM over the grid's 4 points, best first (GA left out)\n"
            "planner     NM  NM whole\n"
            "    lpt  0.000     0.000\n"
            "  lptpn  0.020     0.082\n") in text
    assert "planner of least mean NM whole (GA left out)" in text
    for name in ("NM", "NM whole"):
        assert (f"planner of least mean {name} against C* x 0.95 (GA left out), phi_max down, "
                "p_max across\n"
                "phi\\p     10        100\n"
                "   70  lptpn  lpt/lptpn\n"
                "   35  lptpn  lpt/lptpn\n") in text
    assert ("   35  lpt  lpt/lptpn\n"
            "orders best, phi_max <= 75 (4 points): lpt 4, lptpn 2\n") in text
    assert ("   35  lptpn  lpt/lptpn\n"
            "orders best, phi_max <= 75 (4 points): lptpn 4, lpt 2\n") in text
    assert "phi_max > 75" not in text
    assert (out / "plots" / "kassab-best-trace-x1.png").stat().st_size > 1000
    assert not (out / "plots" / "kassab-nm-trace-x1.png").exists()

    assert main([str(out), "--map-factor", "1", "--map-factor", "0.95"]) == 0
    text = capsys.readouterr().out
    for factor, p10, tally in (("1", "lpt", "lpt 4, lptpn 2"), ("0.95", "lptpn", "lptpn 4, lpt 2")):
        for name in ("NM", "NM whole"):
            assert (f"planner of least mean {name} against C* x {factor} (GA left out), "
                    "phi_max down, p_max across\n") in text
        assert f"   35  {p10}  lpt/lptpn\norders best, phi_max <= 75 (4 points): {tally}\n" in text
    assert main([str(out), "--map-factor", "0"]) == 2
    assert capsys.readouterr().err == ("lm-kassab-figures: error: --map-factor 0: give a "
                                       "factor in (0, 1]\n")

    # --versus: lpt beats lptpn at both stepped points (0 against 10/245, and 0 against 40/245
    # whole) and ties at both 1,000 W points; over the one seed's mean, 0 against 0.020.
    # Sign test: 2 wins, 0 losses: p = 2 x (1/2)^2 = 0.5; at phi_max >= 70, 1 / 0: p = 1.
    assert main([str(out), "--versus", "lpt,lptpn"]) == 0
    text = capsys.readouterr().out
    assert "paired sign tests over 4 instances (1 seeds; lower NM" in text
    assert "      NM  lpt vs lptpn         2         0     2  0.5           1 / 0 / 0" in text
    assert "NM whole  lpt vs lptpn         2         0     2  0.5           1 / 0 / 0" in text
    assert main([str(out), "--versus", "lpt,lptpn", "--phi-min", "70"]) == 0
    text = capsys.readouterr().out
    assert "paired sign tests over 2 instances (1 seeds, phi_max >= 70; lower NM" in text
    assert "      NM  lpt vs lptpn         1         0     1  1           1 / 0 / 0" in text
    assert main([str(out), "--versus", "lpt,ga"]) == 2
    assert capsys.readouterr().err == ("lm-kassab-figures: error: --versus lpt,ga: no runs of "
                                       "planner 'ga' (planners here: lpt, lptpn)\n")
