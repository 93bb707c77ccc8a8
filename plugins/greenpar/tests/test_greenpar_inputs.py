"""lm-greenpar's inputs: speedup files, options, the annotator, and the shipped solar series
(regenerated from pvlib's TMY3 file, they must be byte-identical)."""

from __future__ import annotations

import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.run import Run
from lm_greenpar.apps import GreenParApps
from lm_greenpar.solar import DAYS, write_series
from lm_greenpar.speedups import SpeedupProfiles, model, rows, servers_for

from lmg_helpers import PLUGINS, ROOT


def test_the_shipped_table_is_the_model():
    shipped = SpeedupProfiles.read()
    assert {(a, v, n): sp for a, v, n, sp in rows()} == shipped.table
    assert shipped.sp("EP", 8, 16) == pytest.approx(model("EP", 8, 16), abs=1e-4)
    assert servers_for(2) == [1, 2] and servers_for(16) == [4, 8, 16]


@pytest.mark.parametrize("text, where", [
    ("app,vms,servers,speedup\nEP,2,1,x\n", ":2:"),
    ("app,vms,servers,speedup\nEP,2,1,0\n", ":2:"),
    ("app,vms\n", ":1:"),
    ("app,vms,servers,speedup\n", "no rows"),
])
def test_a_bad_speedup_file_names_its_line(tmp_path, text, where):
    path = tmp_path / "sp.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=where):
        SpeedupProfiles.read(path)


@pytest.mark.parametrize("option, value", [
    ("apps", "FT:x"), ("apps", "FT:-1"), ("core-map", "2:3"), ("core-map", "a-b:4"),
    ("slowdown", "0.9"),
])
def test_bad_options_are_refused(option, value):
    with pytest.raises(ConfigError, match=option):
        load_config(ROOT / "etc" / "greenpar.ini", PLUGINS.schema, [f"greenpar.{option}={value}"])


def test_the_annotator_maps_sizes_and_draws_the_same_app_per_job():
    config = load_config(ROOT / "etc" / "greenpar.ini", PLUGINS.schema, [])
    with Run(config, PLUGINS, leases=[]) as run:
        annotate = GreenParApps(run.ctx)
        apps = []
        for size, cores in ((2, 2), (7, 4), (15, 8), (32, 16), (100, 32)):
            lease = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(size, [1, 384]), 60,
                          60, source_id="42")
            annotate.annotate(lease)
            assert lease.extra["servers"] == cores // 2 and lease.vms.count == cores
            apps.append(lease.extra["app"])
        assert len(set(apps)) == 1      # one job id, one application
        given = Lease(2, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(4, [1, 384]), 60, 60,
                      extra={"app": "EP"})
        annotate.annotate(given)
        assert given.extra["app"] == "EP"


@pytest.mark.parametrize("day", sorted(DAYS))
def test_the_shipped_solar_series_come_from_pvlib(tmp_path, day):
    actual, forecast, kwh = write_series(tmp_path / day, DAYS[day], 1500.0)
    assert actual.read_bytes() == (ROOT / "etc" / f"greenpar-solar-{day}-actual.csv").read_bytes()
    assert forecast.read_bytes() == (
        ROOT / "etc" / f"greenpar-solar-{day}-forecast.csv").read_bytes()
    assert kwh == pytest.approx({"high": 11.77, "medium": 7.92, "low": 3.67}[day], abs=0.01)
