"""``lm-greenpar-figures``' arithmetic on hand-made runs: normalised to Offline, changes
against Baseline, means over seeds."""

from __future__ import annotations

import pytest

from lm_greenpar.figures import figure, table


def summary(brown, green, vms, runtime):
    return {"brown_joules": brown, "green_used_joules": green, "greenpar_vms": vms,
            "greenpar_avg_runtime": runtime, "greenpar_sla_violations": 0,
            "greenpar_resizes": 1, "greenpar_objective": 1.0}


def test_fig7_quantities():
    runs = [{"policy": "baseline", "summary": summary(100, 50, 10, 1000)},
            {"policy": "baseline", "summary": summary(120, 50, 10, 1200)},   # mean 110, 1100
            {"policy": "aggressive", "summary": summary(99, 80, 16, 880)},
            {"policy": "offline", "summary": summary(90, 60, 20, 800)}]
    data = figure(runs)
    assert list(data) == ["baseline", "aggressive", "offline"]
    assert data["aggressive"]["brown"] == pytest.approx(99 / 90)
    assert data["aggressive"]["green"] == pytest.approx(80 / 60)
    assert data["aggressive"]["vms"] == pytest.approx(16 / 20)
    assert data["aggressive"]["brown_vs_baseline_%"] == pytest.approx(-10)
    assert data["aggressive"]["runtime_vs_baseline_%"] == pytest.approx(-20)
    assert data["baseline"]["seeds"] == 2
    assert "aggressive" in table(data)
