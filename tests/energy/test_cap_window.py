"""``[power] power-cap-window`` and ``power-cap-scale``: envelopes cut from a long series."""

from __future__ import annotations

import pytest

from lease_manager.config.schema import load_config
from lease_manager.energy.power_model import power_cap_from_config, power_model_from_config
from lease_manager.errors import ConfigError
from lease_manager.kernel.resources import parse_site
from lease_manager.plugins import Plugins


def cap(tmp_path, *settings, seed=1):
    path = tmp_path / "cap.csv"
    path.write_text("time,watts\n" + "".join(f"{h * 3600},{h * 10}\n" for h in range(11)))
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [
        "simulation.resources=1 CPU:1 Memory:1", "power.pstates=1:1:2",
        f"power.power-cap={path}", f"simulation.seed={seed}", *settings])
    model = power_model_from_config(config, parse_site("1 CPU:1 Memory:1"))
    return power_cap_from_config(config, model)


def test_a_window_of_the_series_drawn_from_the_seed_scaled_with_nothing_after(tmp_path):
    """Rows every hour, 0 W to 100 W by 10 W; a 3-hour window starts at one of hours 0-7."""
    whole = cap(tmp_path)
    assert whole.values.tolist() == [h * 10 for h in range(11)]
    starts = set()
    for seed in range(30):
        got = cap(tmp_path, "power.power-cap-window=3:00:00", "power.power-cap-scale=2",
                  seed=seed)
        assert got.times.tolist() == [0, 3600, 7200, 10800]
        first = got.values[0] / 20
        assert got.values.tolist() == [20 * (first + k) for k in range(3)] + [0]
        starts.add(first)
        again = cap(tmp_path, "power.power-cap-window=3:00:00", "power.power-cap-scale=2",
                    seed=seed)
        assert again.values.tolist() == got.values.tolist()
    assert starts <= set(range(8)) and len(starts) > 3


def test_a_window_longer_than_the_series_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="power-cap-window.*longer than the cap series"):
        cap(tmp_path, "power.power-cap-window=11:00:00")


def test_a_window_draw_holds_the_start_while_the_window_grows(tmp_path):
    """Rows every hour, 0 W to 100 W by 10 W (last row at hour 10). A 3-hour window starts at
    one of hours 0-7; with ``power-cap-window-draw`` 3 hours, a 5-hour window starts where the
    3-hour one does (drawn among hours 0-7, not 0-5) and goes on 2 more hours:

        hour:          s    s+1  s+2 | s+3  s+4 | (5 h: no power after)
        3 h window:   10s  10s+10 10s+20 | 0
        5 h, draw 3:  10s  10s+10 10s+20   10s+30 10s+40 | 0

    A start of hour 6 or 7 would run past the series' last row: an error naming the option."""
    late = 0
    for seed in range(30):
        short = cap(tmp_path, "power.power-cap-window=3:00:00", seed=seed)
        start = short.values[0] / 10
        settings = ("power.power-cap-window=5:00:00", "power.power-cap-window-draw=3:00:00")
        if start + 5 > 10:
            late += 1
            with pytest.raises(ConfigError, match="power-cap-window.*run past the cap series"):
                cap(tmp_path, *settings, seed=seed)
            continue
        longer = cap(tmp_path, *settings, seed=seed)
        assert longer.times.tolist() == [0, 3600, 7200, 10800, 14400, 18000]
        assert longer.values.tolist() == [10 * (start + k) for k in range(5)] + [0]
    assert late > 0


def test_a_window_draw_of_the_window_itself_changes_nothing(tmp_path):
    for seed in range(10):
        plain = cap(tmp_path, "power.power-cap-window=3:00:00", seed=seed)
        drawn = cap(tmp_path, "power.power-cap-window=3:00:00",
                    "power.power-cap-window-draw=3:00:00", seed=seed)
        assert drawn.times.tolist() == plain.times.tolist()
        assert drawn.values.tolist() == plain.values.tolist()
