"""lm-green-envelope's weather reader (``--weather``) and the Texas panhandle envelope built
with it from the shipped trace (issue 39, item 1)."""

from __future__ import annotations

import numpy as np
import pytest

from lm_greenpower.envelope import WeatherError, main, read_weather

from lmk_helpers import ROOT

TRACE = ROOT / "traces" / "weather-texas-panhandle-2012.csv"
ENVELOPE = ROOT / "etc" / "kassab-envelope-texas-panhandle-80m.csv"


def _weather(tmp_path, text: str):
    path = tmp_path / "w.csv"
    path.write_text(text)
    return path


def test_read_weather_by_hand(tmp_path, capsys):
    """Three hours, the wind given at 20 m, the paper's model (0.163 x GHI x 2000 / 1000 of
    sun; one 350 W turbine, 350 x (v - 4) / 6 between 4 and 10 m/s, 350 from 10 to 30):

        hour  GHI   v at 20 m   sun    wind at a 20 m hub   total
        0       0   3.0           0      0 (below 4 m/s)        0
        1     500   7.0         163    350 x 3 / 6 = 175      338
        2    1000   12.5        326    350 (rated)            676

    At a 160 m hub the power law multiplies every speed by (160 / 20) ** (1/7) = 1.34590:
    3.0 -> 4.03770 m/s gives 350 x 0.03770 / 6 = 2.1992 W; 7.0 -> 9.42130 gives
    350 x 5.42130 / 6 = 316.2426 W, plus the sun's 163 = 479.2426 W; 12.5 -> 16.82 stays
    rated, 676 W. The envelope repeats the last hour at the end of the year, and writes 6
    significant digits (479.243)."""
    path = _weather(tmp_path, "hour,ghi,wind_speed_20m\n0,0,3\n1,500,7\n2,1000,12.5\n")
    ghi, speed, height = read_weather(path)
    assert ghi.tolist() == [0, 500, 1000] and speed.tolist() == [3, 7, 12.5] and height == 20
    out = tmp_path / "env.csv"
    assert main(["--weather", str(path), "--out", str(out)]) == 0
    assert out.read_text() == "time,watts\n0,0\n3600,338\n7200,676\n10800,676\n"
    assert "3 hours at" in capsys.readouterr().out
    assert main(["--weather", str(path), "--hub-height", "160", "--out", str(out)]) == 0
    watts = np.loadtxt(out, delimiter=",", skiprows=1)[:, 1]
    assert watts.tolist() == [2.1992, 479.243, 676, 676]


@pytest.mark.parametrize("text, message", [
    ("hour,ghi,wind\n0,0,3\n", ":1: the header is 'hour,ghi,wind', not"),
    ("hour,ghi,wind_speed_0m\n0,0,3\n", ":1: field wind_speed_0m: the height 0 m is not above 0"),
    ("hour,ghi,wind_speed_10m\n0,0,3\n1,abc,3\n", ":3: field ghi: 'abc' is not a number"),
    ("hour,ghi,wind_speed_10m\n0,0,-1\n", ":2: field wind_speed_10m: '-1' is not a finite number"),
    ("hour,ghi,wind_speed_10m\n0,0,nan\n", ":2: field wind_speed_10m: 'nan' is not a finite"),
    ("hour,ghi,wind_speed_10m\n0,0,3\n2,0,3\n", ":3: field hour: '2' is not 1"),
    ("hour,ghi,wind_speed_10m\n0,0\n", ":2: 2 fields, not 3"),
    ("hour,ghi,wind_speed_10m\n", ": no rows after the header"),
    ("", ":1: the header is '', not"),
])
def test_bad_weather_is_one_line_naming_file_line_and_field(tmp_path, capsys, text, message):
    path = _weather(tmp_path, text)
    with pytest.raises(WeatherError) as caught:
        read_weather(path)
    assert str(caught.value).startswith(str(path)) and message in str(caught.value)
    assert main(["--weather", str(path), "--out", str(tmp_path / "env.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "env.csv").exists()


def test_a_missing_weather_file_and_two_sources_are_refused(tmp_path, capsys):
    assert main(["--weather", str(tmp_path / "none.csv"), "--out", str(tmp_path / "e")]) == 2
    assert "none.csv: cannot be read" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--weather", str(TRACE), "--site", "sand-point", "--out", str(tmp_path / "e")])


def test_the_texas_envelope_is_the_model_on_the_shipped_trace(tmp_path, capsys):
    """etc/kassab-envelope-texas-panhandle-80m.csv is lm-green-envelope's output on
    traces/weather-texas-panhandle-2012.csv: the wind is given at 80 m, so an 80 m hub (the
    default, and --hub-height 80) leaves it as given."""
    ghi, speed, height = read_weather(TRACE)
    assert len(ghi) == len(speed) == 8760 and height == 80
    for extra in ([], ["--hub-height", "80"]):
        out = tmp_path / "env.csv"
        assert main(["--weather", str(TRACE), "--out", str(out), *extra]) == 0
        assert out.read_text() == ENVELOPE.read_text()
        assert "285.3 W on average, 5.3% of hours without power, 13.2% below 95 W" in \
            capsys.readouterr().out


def test_the_texas_envelopes_statistics():
    """The shipped file's year (its last row repeats the last hour and is left out): 285.3 W
    on average, 462 of 8,760 hours (5.3%) at 0 W and 1,152 (13.2%) below a machine's static
    95 W. The audit's envelope: about 280 W, 5% and 20%; the authors' 279 W, 4.8%, 19.5%."""
    rows = np.loadtxt(ENVELOPE, delimiter=",", skiprows=1)
    assert rows[:, 0].tolist() == [3600.0 * h for h in range(8761)]
    watts = rows[:-1, 1]
    assert rows[-1, 1] == watts[-1]
    assert watts.mean() == pytest.approx(285.343, abs=0.001)
    assert int((watts <= 0).sum()) == 462 and int((watts < 95).sum()) == 1152
    assert watts.min() == 0 and watts.max() == pytest.approx(686.432)
