"""Green production forecasts revised as time passes (``[power] green-forecast``)."""

from __future__ import annotations

import pytest

from lease_manager.energy.forecast import read_forecast
from lease_manager.errors import InputError


def test_the_latest_issue_counts(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("issued,time,watts\n0,0,100\n0,3600,200\n3600,3600,150\n3600,7200,50\n")
    f = read_forecast(path, maximum=1e6)
    assert f.at(0).at(3600) == 200 and f.at(3599).at(5000) == 200
    assert f.at(3600).at(3600) == 150 and f.at(9999).at(8000) == 50
    assert f.next_issue(0) == 3600 and f.next_issue(3600) == float("inf")
    assert f.scaled(0.5).at(0).at(0) == 50


@pytest.mark.parametrize("text, where", [
    ("issued,time,watts\n0,0,x\n", "f.csv:2: watts"),
    ("issued,time,watts\n0,0,1\n0,0,2\n", "f.csv:3: time"),
    ("issued,time,watts\n10,0,1\n5,0,2\n", "f.csv:3: issued"),
    ("issued,time,watts\n0,0\n", "f.csv:2:"),
    ("issued,time,watts\n0,0,-1\n", "f.csv:2: watts"),
])
def test_bad_rows_name_the_line_and_field(tmp_path, text, where):
    path = tmp_path / "f.csv"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_forecast(path, maximum=1e6)
    assert where in str(err.value) and "f.csv" in str(err.value)
