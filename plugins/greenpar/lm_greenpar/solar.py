"""Solar production and its forecasts from pvlib's bundled TMY3 weather (Greensboro, NC).

pvlib ships NREL's typical meteorological year file ``723170TYA.CSV`` (Greensboro Piedmont
Triad International airport): hourly global horizontal irradiance (GHI) and total cloud cover
(tenths), local standard time, each row the hour ending at its time. TMY3 data are produced by
NREL for the U.S. Department of Energy and are in the public domain; pvlib (BSD-3-Clause)
redistributes the file.

- **Production**: GHI scaled so that the year's highest hour is the plant's peak (GreenPar:
  1.5 kW, the cluster's peak power), held over each hour.
- **Forecast** (GreenPar's predictor, section 4): E_p(t) = B(t) x (1 - CloudCover(t)), hourly,
  48 hours ahead, issued every hour; B(t) is that hour of the day on the best day (most energy)
  of the 30 days before. We have no archived weather forecasts: the cloud cover "forecast" is
  the observed cloud cover, so the errors come from the model itself (cloud cover does not map
  linearly to irradiance). The correction from recent production that the paper cites ([17])
  is read as: the ratio of the last hour's production to its forecast (clamped to [0.25, 4])
  scales the next three hours, weights 1, 2/3, 1/3.

``lm-greenpar-solar --day 06-30 --out etc/greenpar-solar-high`` writes
``PREFIX-actual.csv`` (``time,watts``) and ``PREFIX-forecast.csv`` (``issued,time,watts``) for
48 hours from midnight of that day (time 0), the format of ``[power] green-production`` and
``green-forecast``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

import numpy as np

TMY3_FILE = "723170TYA.CSV"
HOURS = 48
#: the days of the shipped series, chosen like GreenPar's (5/9, 6/16, 5/15 of 2011 at Rutgers:
#: 12, 8 and 2.84 kWh at a 1.5 kW peak): the TMY3 year's sunniest day (11.8 kWh), a summer
#: day of 7.9 kWh, and a cloudy spring day of 3.7 kWh (no day of May or June is below 4 kWh)
DAYS = {"high": "06-30", "medium": "06-21", "low": "04-13"}


def tmy3() -> tuple[np.ndarray, np.ndarray]:
    """Hourly GHI (W/m2) and total cloud cover (0-1) over the TMY3 year (8,760 hours; hour
    ``h`` is [h, h + 1) of the year in local standard time)."""
    import pvlib

    path = os.path.join(os.path.dirname(pvlib.__file__), "data", TMY3_FILE)
    data, _ = pvlib.iotools.read_tmy3(path, map_variables=True)
    ghi = data["ghi"].to_numpy(dtype=float)
    cloud = data["TotCld (tenths)"].to_numpy(dtype=float) / 10.0
    return ghi, np.clip(cloud, 0.0, 1.0)


def day_index(day: str) -> int:
    """0-based day of the (non-leap) TMY year of ``MM-DD``."""
    month, dom = (int(x) for x in day.split("-"))
    lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if not (1 <= month <= 12 and 1 <= dom <= lengths[month - 1]):
        raise ValueError(f"{day!r} is not a day MM-DD")
    return sum(lengths[: month - 1]) + dom - 1


def production(ghi: np.ndarray, peak: float) -> np.ndarray:
    """Watts of a plant whose peak, at the year's highest irradiance, is ``peak``."""
    return ghi / ghi.max() * peak


def daily_kwh(watts: np.ndarray, day: int) -> float:
    return float(watts[day * 24:(day + 1) * 24].sum()) / 1000.0


def forecasts(watts: np.ndarray, cloud: np.ndarray, day: int, hours: int = HOURS
              ) -> list[tuple[int, np.ndarray]]:
    """``(issue hour, watts for hours issue..issue+47)`` for every hour of the window, hours
    counted from midnight of ``day``."""
    first = day * 24
    out = []
    for issue in range(hours):
        h = first + issue
        # B: the best of the 30 days before the issue's day
        today = h // 24
        days = [d for d in range(today - 30, today) if d >= 0]
        best = max(days, key=lambda d: watts[d * 24:(d + 1) * 24].sum())
        base = watts[best * 24:(best + 1) * 24]
        target = np.arange(h, h + 48)
        pred = base[target % 24] * (1.0 - cloud[target % len(cloud)])
        # correction from the last hour's production
        last = h - 1
        last_pred = base[last % 24] * (1.0 - cloud[last % len(cloud)])
        if last_pred > 0.05 * watts.max():
            ratio = float(np.clip(watts[last % len(watts)] / last_pred, 0.25, 4.0))
            weights = np.maximum(0.0, 1.0 - np.arange(48) / 3.0)
            pred = pred * (1.0 + (ratio - 1.0) * weights)
        out.append((issue, pred))
    return out


def write_series(prefix: Path, day: str, peak: float) -> tuple[Path, Path, float]:
    """Write ``PREFIX-actual.csv`` and ``PREFIX-forecast.csv``; return them and the day's
    kWh."""
    ghi, cloud = tmy3()
    watts = production(ghi, peak)
    d = day_index(day)
    actual = prefix.with_name(prefix.name + "-actual.csv")
    forecast = prefix.with_name(prefix.name + "-forecast.csv")
    with actual.open("w", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["time", "watts"])
        for h in range(HOURS):
            out.writerow([h * 3600, round(float(watts[(d * 24 + h) % len(watts)]), 3)])
        out.writerow([HOURS * 3600, 0])
    with forecast.open("w", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["issued", "time", "watts"])
        for issue, pred in forecasts(watts, cloud, d):
            for k, w in enumerate(pred):
                out.writerow([issue * 3600, (issue + k) * 3600, round(float(w), 3)])
    return actual, forecast, daily_kwh(watts, d)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lm-greenpar-solar", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--day", required=True, help="MM-DD, or high, medium, low")
    parser.add_argument("--peak", type=float, default=1500.0, help="plant peak, W (1500)")
    parser.add_argument("--out", required=True, help="prefix of the two CSV files")
    args = parser.parse_args(argv)
    day = DAYS.get(args.day, args.day)
    try:
        actual, forecast, kwh = write_series(Path(args.out), day, args.peak)
    except ValueError as exc:
        print(f"lm-greenpar-solar: {exc}", file=sys.stderr)
        return 2
    print(f"{day}: {kwh:.2f} kWh; wrote {actual} and {forecast}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
