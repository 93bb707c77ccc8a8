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
4.8% of hours at 0 W and 19.5% below 95 W: no site of the bundled data is that windy
(Sand Point's median wind at 10 m is 4.6 m/s).

Rows are at every hour from 0 s, plus one at the end of the year repeating the last hour's
value (so that a window may end there). Kassab et al. scale the model by 2, 5 and 10 for
larger envelopes (``[power] power-cap-scale``) and cut windows of 1,000 hours (``[power]
power-cap-window``). ``sand-point`` (Sand Point, Alaska: windy, power at night on most days) is
the default; ``greensboro`` (North Carolina) has little wind and no power most nights.
"""

from __future__ import annotations

import argparse
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


def production(site: str = "sand-point", *, area: float = 2000.0, efficiency: float = 0.163,
               turbines: float = 1.0, nominal: float = 350.0, hub_height: float = ANEMOMETER,
               shear: float = 1 / 7) -> np.ndarray:
    """The hourly production of a typical year at ``site`` (8,760 values), the wind carried
    from the anemometer's 10 m to ``hub_height`` by the power law of exponent ``shear``."""
    import pvlib

    data, _ = pvlib.iotools.read_tmy3(str(tmy3_path(site)), map_variables=True)
    ghi = data["ghi"].to_numpy(dtype=float)
    speed = data["wind_speed"].to_numpy(dtype=float) * (hub_height / ANEMOMETER) ** shear
    return efficiency * ghi * area / 1000.0 + turbines * wind_power(speed, nominal)


def write_envelope(path: str | Path, watts: np.ndarray) -> None:
    """``time,watts`` rows at every hour, and one at the end repeating the last."""
    values = np.append(watts, watts[-1])
    lines = ["time,watts"] + [f"{h * HOUR},{round(float(w), 6):g}"
                              for h, w in enumerate(values.tolist())]
    Path(path).write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lm-green-envelope",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--site", choices=sorted(SITES), default="sand-point")
    parser.add_argument("--out", required=True, help="the CSV file to write")
    parser.add_argument("--area", type=float, default=2000.0, help="m^2 of solar panels")
    parser.add_argument("--efficiency", type=float, default=0.163)
    parser.add_argument("--turbines", type=float, default=1.0)
    parser.add_argument("--nominal", type=float, default=350.0, help="W per turbine")
    parser.add_argument("--hub-height", type=float, default=ANEMOMETER,
                        help="m; the wind is measured at 10 m")
    parser.add_argument("--shear", type=float, default=1 / 7,
                        help="exponent of the wind's power law with height")
    args = parser.parse_args(argv)
    for name in ("area", "efficiency", "turbines", "nominal", "hub_height", "shear"):
        value = getattr(args, name)
        if not (np.isfinite(value) and 0 <= value <= 1e9):
            flag = name.replace("_", "-")
            print(f"lm-green-envelope: error: --{flag} {value!r} is not in [0, 1e9]",
                  file=sys.stderr)
            return 2
    out = Path(args.out)
    if out.is_dir():
        print(f"lm-green-envelope: error: {out} is a folder", file=sys.stderr)
        return 2
    if args.hub_height <= 0:
        print(f"lm-green-envelope: error: --hub-height {args.hub_height!r} is not above 0",
              file=sys.stderr)
        return 2
    watts = production(args.site, area=args.area, efficiency=args.efficiency,
                       turbines=args.turbines, nominal=args.nominal,
                       hub_height=args.hub_height, shear=args.shear)
    write_envelope(out, watts)
    print(f"{out}: {len(watts)} hours at {args.site}, {float(watts.max()):g} W at most, "
          f"{float(watts.mean()):.1f} W on average, {float((watts <= 0).mean()) * 100:.1f}% "
          f"of hours without power, {float((watts < 95).mean()) * 100:.1f}% below 95 W")
    return 0


if __name__ == "__main__":
    sys.exit(main())
