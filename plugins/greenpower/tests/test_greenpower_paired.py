"""The paired sign test of ``lm-kassab-figures --versus`` (:mod:`lm_greenpower.paired`), on
hand-computed counts."""

from __future__ import annotations

import pytest

from lm_greenpower.paired import parse_pair, sign_test, split, versus


def test_the_exact_two_sided_sign_test_by_hand():
    """p = min(1, 2 x sum_{i <= min(w, l)} C(n, i) / 2^n), n = w + l:
    16 / 1: 2 x (1 + 17) / 2^17 = 36 / 131,072 = 0.000275;  3 / 1: 2 x (1 + 4) / 16 = 0.625;
    5 / 0 and 0 / 5: 2 / 32 = 0.0625;  14 / 13: the tail is half of 2^27, so 1;  no pair: 1."""
    assert sign_test(16, 1) == pytest.approx(36 / 2 ** 17)
    assert sign_test(3, 1) == pytest.approx(0.625)
    assert sign_test(5, 0) == sign_test(0, 5) == pytest.approx(0.0625)
    assert sign_test(14, 13) == 1.0
    assert sign_test(0, 0) == 1.0


def run(planner, seed, phimax, nm, whole=None):
    return {"planner": planner, "seed": seed, "pmax": None, "phimax": phimax, "nm": nm,
            "nm_whole": nm if whole is None else whole}


def test_wins_losses_ties_by_instance_and_by_seed():
    """Two seeds, three phi_max each; A against B (lower NM wins):

        seed 1:  phi 15  A 0    B 0     tie      seed 2:  phi 15  A 0.1  B 0.3  A
                 phi 30  A 0.1  B 0.2   A                 phi 30  A 0.4  B 0.1  B
                 phi 45  A 0.3  B 0.2   B                 phi 45  A 0.2  B 0.4  A

    instances: A 3, B 2, tie 1; p = 2 x (1 + 5 + 10) / 32 = 1. Seed means: seed 1 A 0.4 / 3,
    B 0.4 / 3: a tie; seed 2 A 0.7 / 3 < B 0.8 / 3: A; p = 2 x 1 / 2 = 1. Mean of A - B over
    the six: (0 - 0.1 + 0.1 - 0.2 + 0.3 - 0.2) / 6 = -0.1 / 6. A planner C's runs are
    ignored, and a run without NM (B's at seed 3) leaves its instance out."""
    a = [(1, 15, 0.0), (1, 30, 0.1), (1, 45, 0.3), (2, 15, 0.1), (2, 30, 0.4), (2, 45, 0.2)]
    b = [(1, 15, 0.0), (1, 30, 0.2), (1, 45, 0.2), (2, 15, 0.3), (2, 30, 0.1), (2, 45, 0.4)]
    runs = [run("A", *x) for x in a] + [run("B", *x) for x in b]
    runs += [run("C", 1, 15, 9.0), run("A", 3, 15, 0.0), run("B", 3, 15, None)]
    got = versus(runs, "A", "B")
    assert got["instances"] == (3, 2, 1)
    assert got["seeds"] == (1, 0, 1)
    assert got["p"] == 1.0 and got["p_seeds"] == 1.0
    assert got["mean"] == pytest.approx(-0.1 / 6)
    assert versus(runs, "A", "D")["mean"] is None                # no instance in common
    assert split([(0.0, 1e-13), (0.0, 1.0)]) == (1, 0, 1)     # within TIE: a tie


def test_a_pair_must_name_two_planners_that_ran():
    assert parse_pair("lpt, lpp", ["lpp", "lpt"]) == ("lpt", "lpp")
    for bad in ("lpt", "lpt,lpt", "lpt,", "a,b,c"):
        with pytest.raises(ValueError, match="give two different planners"):
            parse_pair(bad, ["lpt"])
