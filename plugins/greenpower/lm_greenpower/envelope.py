"""``lm-green-envelope``: a year of hourly green power from real weather, through Kassab et
al.'s production model (section 5.1), as a ``time,watts`` CSV for ``[power] power-cap``.

The weather is one of the TMY3 files pvlib ships (``pvlib/data``; pvlib is BSD-3-Clause; TMY3
is NREL's Typical Meteorological Year 3, from the National Solar Radiation Database
1991-2005 update, a US Government work): hourly global horizontal irradiance (W/m^2) and wind
speed (m/s) for a typical year. The model is the one the authors' simulator uses:

- solar: ``efficiency x GHI x area / 1000`` (0.163, 2000 m^2; with the /1000 the paper's
  "about 350 W" scale is kept, as in the authors' code);
- wind, per turbine: ``nominal x (v - 4) / 6`` for 4 < v < 10 m/s, ``nominal`` for
  10 <= v < 30, else 0 (nominal 350).

TMY3 wind speeds are measured at 10 m. ``--hub-height H`` carries them to a turbine's hub at
``H`` m by the power law ``v x (H / 10) ** shear`` (``--shear``, 1/7, the textbook exponent of
open terrain); the paper gives no height, and the default (10 m) leaves the speeds as measured.
``etc/kassab-envelope-sand-point-80m.csv`` is Sand Point at an 80 m hub: 185 W on average,
14.5% of hours at 0 W, 40% below a machine's 95 W. The authors' released envelope (a column of
a French wind-farm power file, which has no licence and is not copied here) averages 279 W, with
4.8% of hours at 0 W and 19.5% below 95 W: no TMY3 site pvlib ships is that windy (Sand
Point's median wind at 10 m is 4.6 m/s); the Texas panhandle's modelled wind below is.

``--weather FILE`` reads the weather from a CSV instead (``read_weather``): a header
``hour,ghi,wind_speed_<H>m`` naming the height ``H`` (m) at which the wind is given, then one
row an hour from hour 0. ``traces/weather-texas-panhandle-2012.csv`` is one: NREL's WIND
Toolkit wind at 80 m and NSRDB irradiance for one point of the Texas panhandle in 2012, as the
HOPP package ships them (provenance and licence in ``traces/weather-texas-panhandle-2012.md``).
``etc/kassab-envelope-texas-panhandle-80m.csv`` is it at an 80 m hub: 285 W on average, 5.3% of
hours at 0 W, 13.2% below 95 W. ``--hub-height`` defaults to the height the wind is given at.

Rows are at every hour from 0 s, plus one at the end of the year repeating the last hour's
value (so that a window may end there). Kassab et al. scale the model by 2, 5 and 10 for
larger envelopes (``[power] power-cap-scale``) and cut windows of 1,000 hours (``[power]
power-cap-window``). ``sand-point`` (Sand Point, Alaska: windy, power at night on most days) is
the default; ``greensboro`` (North Carolina) has little wind and no power most nights.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

#: the TMY3 files pvlib ships, by the name ``--site`` takes
SITES = {"sand-point": "703165TY.csv", "greensboro": "723170TYA.CSV"}
HOUR = 3600


def tmy3_path(site: str) -> Path:
    """The bundled TMY3 file of ``site``."""
    import pvlib

    return Path(pvlib.__file__).parent / "data" / SITES[site]


def wind_power(speed: np.ndarray, nominal: float) -> np.ndarray:
    """One turbine's power at each wind speed (m/s)."""
    return np.where((speed > 4) & (speed < 10), nominal * (speed - 4) / 6,
                    np.where((speed >= 10) & (speed < 30), nominal, 0.0))


#: the height (m) at which TMY3 files give the wind speed
ANEMOMETER = 10.0


class WeatherError(ValueError):
    """A weather file that cannot be read, as one line naming the file, line and field."""


def tmy3_weather(site: str) -> tuple[np.ndarray, np.ndarray, float]:
    """GHI (W/m^2), wind speed (m/s) and the wind's height (m) of ``site``'s TMY3 year."""
    import pvlib

    data, _ = pvlib.iotools.read_tmy3(str(tmy3_path(site)), map_variables=True)
    return (data["ghi"].to_numpy(dtype=float), data["wind_speed"].to_numpy(dtype=float),
            ANEMOMETER)


_WIND_COLUMN = re.compile(r"wind_speed_([0-9]+(?:\.[0-9]+)?)m")


def _number(path: str | Path, line: int, field: str, text: str) -> float:
    """``text`` as a finite number of at least 0, or a WeatherError naming where it is."""
    try:
        value = float(text)
    except ValueError:
        raise WeatherError(f"{path}:{line}: field {field}: {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise WeatherError(f"{path}:{line}: field {field}: {text!r} is not a finite number "
                           "of at least 0")
    return value


def read_weather(path: str | Path) -> tuple[np.ndarray, np.ndarray, float]:
    """GHI (W/m^2), wind speed (m/s) and the wind's height (m) of a weather CSV: the header
    ``hour,ghi,wind_speed_<H>m``, then one row an hour, numbered from 0."""
    try:
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as exc:
        raise WeatherError(f"{path}: cannot be read ({exc})") from None
    header = rows[0] if rows else []
    match = _WIND_COLUMN.fullmatch(header[2]) if len(header) == 3 else None
    if header[:2] != ["hour", "ghi"] or match is None:
        raise WeatherError(f"{path}:1: the header is {','.join(header)!r}, not "
                           "'hour,ghi,wind_speed_<H>m'")
    height = float(match.group(1))
    if height <= 0:
        raise WeatherError(f"{path}:1: field {header[2]}: the height {height:g} m is not above 0")
    ghi, speed = [], []
    for index, row in enumerate(rows[1:]):
        line = index + 2
        if len(row) != 3:
            raise WeatherError(f"{path}:{line}: {len(row)} fields, not 3 (hour,ghi,{header[2]})")
        if row[0].strip() != str(index):
            raise WeatherError(f"{path}:{line}: field hour: {row[0]!r} is not {index} "
                               "(one row an hour, numbered from 0)")
        ghi.append(_number(path, line, "ghi", row[1]))
        speed.append(_number(path, line, header[2], row[2]))
    if not ghi:
        raise WeatherError(f"{path}: no rows after the header")
    return np.array(ghi), np.array(speed), height


def power(ghi: np.ndarray, speed: np.ndarray, measured_at: float, *, area: float = 2000.0,
          efficiency: float = 0.163, turbines: float = 1.0, nominal: float = 350.0,
          hub_height: float | None = None, shear: float = 1 / 7) -> np.ndarray:
    """The paper's production at each hour: the sun on the panels plus the turbines, the wind
    carried from ``measured_at`` to ``hub_height`` (``None``: left where it was measured) by
    the power law of exponent ``shear``."""
    hub = measured_at if hub_height is None else hub_height
    carried = speed * (hub / measured_at) ** shear
    return efficiency * ghi * area / 1000.0 + turbines * wind_power(carried, nominal)


def production(site: str = "sand-point", *, area: float = 2000.0, efficiency: float = 0.163,
               turbines: float = 1.0, nominal: float = 350.0, hub_height: float = ANEMOMETER,
               shear: float = 1 / 7) -> np.ndarray:
    """The hourly production of a typical year at ``site`` (8,760 values), the wind carried
    from the anemometer's 10 m to ``hub_height`` by the power law of exponent ``shear``."""
    ghi, speed, height = tmy3_weather(site)
    return power(ghi, speed, height, area=area, efficiency=efficiency, turbines=turbines,
                 nominal=nominal, hub_height=hub_height, shear=shear)


def write_envelope(path: str | Path, watts: np.ndarray) -> None:
    """``time,watts`` rows at every hour, and one at the end repeating the last."""
    values = np.append(watts, watts[-1])
    lines = ["time,watts"] + [f"{h * HOUR},{round(float(w), 6):g}"
                              for h, w in enumerate(values.tolist())]
    Path(path).write_text("\n".join(lines) + "\n")


def _parser() -> argparse.ArgumentParser:
    """The command line of ``lm-green-envelope``."""
    parser = argparse.ArgumentParser(prog="lm-green-envelope",
                                     description=(__doc__ or "").splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--site", choices=sorted(SITES),
                        help="a TMY3 year that pvlib ships (default: sand-point)")
    source.add_argument("--weather", metavar="FILE",
                        help="a CSV of hourly weather: hour,ghi,wind_speed_<H>m")
    parser.add_argument("--out", required=True, help="the CSV file to write")
    parser.add_argument("--area", type=float, default=2000.0, help="m^2 of solar panels")
    parser.add_argument("--efficiency", type=float, default=0.163)
    parser.add_argument("--turbines", type=float, default=1.0)
    parser.add_argument("--nominal", type=float, default=350.0, help="W per turbine")
    parser.add_argument("--hub-height", type=float, default=None,
                        help="m (default: the height the wind is given at; TMY3: 10 m)")
    parser.add_argument("--shear", type=float, default=1 / 7,
                        help="exponent of the wind's power law with height")
    return parser


def _error(message: str) -> int:
    """Print one error line and give the exit status of bad input."""
    print(f"lm-green-envelope: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for name in ("area", "efficiency", "turbines", "nominal", "hub_height", "shear"):
        value = getattr(args, name)
        if value is not None and not (np.isfinite(value) and 0 <= value <= 1e9):
            return _error(f"--{name.replace('_', '-')} {value!r} is not in [0, 1e9]")
    out = Path(args.out)
    if out.is_dir():
        return _error(f"{out} is a folder")
    if args.hub_height is not None and args.hub_height <= 0:
        return _error(f"--hub-height {args.hub_height!r} is not above 0")
    if args.weather is not None:
        try:
            ghi, speed, height = read_weather(args.weather)
        except WeatherError as exc:
            return _error(str(exc))
        where = args.weather
    else:
        where = args.site or "sand-point"
        ghi, speed, height = tmy3_weather(where)
    watts = power(ghi, speed, height, area=args.area, efficiency=args.efficiency,
                  turbines=args.turbines, nominal=args.nominal, hub_height=args.hub_height,
                  shear=args.shear)
    write_envelope(out, watts)
    print(f"{out}: {len(watts)} hours at {where}, {float(watts.max()):g} W at most, "
          f"{float(watts.mean()):.1f} W on average, {float((watts <= 0).mean()) * 100:.1f}% "
          f"of hours without power, {float((watts < 95).mean()) * 100:.1f}% below 95 W")
    return 0


if __name__ == "__main__":
    sys.exit(main())
