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


def production(site: str = "sand-point", *, area: float = 2000.0, efficiency: float = 0.163,
               turbines: float = 1.0, nominal: float = 350.0) -> np.ndarray:
    """The hourly production of a typical year at ``site`` (8,760 values)."""
    import pvlib

    data, _ = pvlib.iotools.read_tmy3(str(tmy3_path(site)), map_variables=True)
    ghi = data["ghi"].to_numpy(dtype=float)
    speed = data["wind_speed"].to_numpy(dtype=float)
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
    args = parser.parse_args(argv)
    for name in ("area", "efficiency", "turbines", "nominal"):
        value = getattr(args, name)
        if not (np.isfinite(value) and 0 <= value <= 1e9):
            print(f"lm-green-envelope: error: --{name} {value!r} is not in [0, 1e9]",
                  file=sys.stderr)
            return 2
    out = Path(args.out)
    if out.is_dir():
        print(f"lm-green-envelope: error: {out} is a folder", file=sys.stderr)
        return 2
    watts = production(args.site, area=args.area, efficiency=args.efficiency,
                       turbines=args.turbines, nominal=args.nominal)
    write_envelope(out, watts)
    print(f"{out}: {len(watts)} hours at {args.site}, {float(watts.max()):g} W at most, "
          f"{float(watts.mean()):.1f} W on average, {float((watts <= 0).mean()) * 100:.0f}% "
          f"of hours without power")
    return 0


if __name__ == "__main__":
    sys.exit(main())
