"""The task generator green-tasks and the envelope from pvlib's weather data."""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager import Lease, LeaseType, VMRequest
from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lm_greenpower.envelope import main as envelope_main
from lm_greenpower.envelope import production, wind_power
from lm_greenpower.workload import GreenTasks, exponential_length, hyper_gamma_length

from lmk_helpers import ROOT, plugins


class Ctx:
    def __init__(self, *settings):
        p = plugins()
        self.config = load_config(None, p.schema,
                                  ["simulation.resources=1 CPU:1 Memory:1", *settings])

    def rng(self, name):
        return np.random.default_rng([self.config.get("simulation", "seed"), len(name)])


def annotated(*settings, n=200):
    gen = GreenTasks(Ctx(*settings))
    leases = [Lease(i, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(1, [1, 1]), 60, 60)
              for i in range(n)]
    for lease in leases:
        gen.annotate(lease)
    return leases


def test_hyper_gamma_lengths_and_uniform_powers_from_the_seed():
    leases = annotated("greenpower.lengths=hyper-gamma", "greenpower.watts=uniform",
                       "greenpower.max-watts=15", "planning.interval=360")
    lengths = [l.requested_duration / 360 for l in leases]
    assert all(1 < p < 500 and p == int(p) for p in lengths)
    assert all(l.actual_duration == l.requested_duration for l in leases)
    assert {int(l.extra["watts"]) for l in leases} == set(range(1, 16))
    again = annotated("greenpower.lengths=hyper-gamma", "greenpower.watts=uniform",
                      "greenpower.max-watts=15", "planning.interval=360")
    assert [l.requested_duration for l in again] == [l.requested_duration for l in leases]
    other = annotated("greenpower.lengths=hyper-gamma", "simulation.seed=2")
    assert [l.requested_duration for l in other] != [l.requested_duration for l in leases]


def test_the_draws_follow_the_models():
    rng = np.random.default_rng(0)
    hg = np.array([hyper_gamma_length(rng, 500) for _ in range(4000)])
    # the second component, e^Gamma(312, 0.03) / 60, lies mostly in 50-500, its median near
    # e^9.35 / 60 = 190; the first, e^Gamma(4.2, 0.94) / 60, is mostly below 2 (drawn again)
    # and gives about a quarter of the lengths, short ones
    long = hg[hg >= 20]
    assert 170 < np.median(long) < 210
    assert 0.2 < (hg < 20).mean() < 0.35
    ex = np.array([exponential_length(rng, 40) for _ in range(4000)])
    assert ex.min() >= 1 and ex.max() == 40
    # E[min(max(1, floor X), 40)], X exponential of mean 20: sum over k = 1..40 of e^(-k/20),
    # plus P(X < 1): 16.86 + 0.05 = 16.91 (the sample mean's sd is about 0.2)
    assert abs(ex.mean() - 16.91) < 0.6


def test_bad_generator_settings_are_one_line():
    with pytest.raises(ConfigError, match="min-watts: 20 is above max-watts 10"):
        GreenTasks(Ctx("greenpower.watts=uniform", "greenpower.min-watts=20",
                       "greenpower.max-watts=10"))


def test_the_wind_curve():
    assert wind_power(np.array([3.0, 4, 7, 10, 29, 30]), 350).tolist() == [
        0, 0, 175, 350, 350, 0]


def test_the_shipped_envelope_is_what_the_model_gives_on_pvlibs_data(tmp_path, capsys):
    """etc/kassab-envelope-sand-point.csv is reproduced exactly by lm-green-envelope."""
    out = tmp_path / "env.csv"
    assert envelope_main(["--site", "sand-point", "--out", str(out)]) == 0
    shipped = ROOT / "etc" / "kassab-envelope-sand-point.csv"
    assert out.read_text() == shipped.read_text()
    watts = production("sand-point")
    assert len(watts) == 8760 and 590 < watts.max() < 610
    assert "8760 hours at sand-point" in capsys.readouterr().out
    assert envelope_main(["--out", str(tmp_path), "--area", "1"]) == 2


def test_the_hub_height_envelope_is_what_the_model_gives_at_80_m(tmp_path, capsys):
    """etc/kassab-envelope-sand-point-80m.csv is lm-green-envelope's output at an 80 m hub.
    The power law carries 6 m/s at 10 m to 6 x 8 ** (1/7) = 8.0755 m/s at 80 m, where the
    curve gives 350 x 4.0755 / 6 = 237.7 W (at night: no sun). More hours reach the rated
    speed, and a few cross the 30 m/s cut-out."""
    out = tmp_path / "env.csv"
    assert envelope_main(["--site", "sand-point", "--hub-height", "80", "--out", str(out)]) == 0
    assert out.read_text() == (ROOT / "etc" / "kassab-envelope-sand-point-80m.csv").read_text()
    assert "184.7 W on average, 14.5% of hours without power, 40.0% below 95 W" in \
        capsys.readouterr().out
    low, high = production("sand-point"), production("sand-point", hub_height=80)
    assert high.mean() > low.mean() and (high < low).sum() < (high > low).sum() / 10
    assert float(wind_power(np.array([6.0 * 8 ** (1 / 7)]), 350)[0]) == pytest.approx(237.7,
                                                                                      abs=0.05)
    assert envelope_main(["--out", str(tmp_path / "x.csv"), "--hub-height", "0"]) == 2
    assert "--hub-height 0.0 is not above 0" in capsys.readouterr().err


def test_config_doc_lists_the_options_and_planners(capsys):
    from lease_manager import cli

    assert cli.main(["config-doc"]) == 0
    doc = capsys.readouterr().out
    for text in ("## [greenpower]", "### `ga-patience`", "### `max-watts`", "## [planning]",
                 "### `policy-planner`", "bs-twoqs", "stripe-lpp", "### `look-back`",
                 "### `power-cap-window`"):
        assert text in doc
