"""The power model of a site's nodes (``[power]``), per node group.

A node that is **on** draws, for each of its cores, the idle power of its highest level when
the core is free and the full power of the level a lease runs at when a lease holds it::

    P_on = idle_top + sum over leases of share x (full[level] - idle_top)

where ``share`` is the part of the node's CPU the lease holds. With one level this is Batsim's
linear model (idle + (full - idle) x load). With several, each core has its own level, as in
Garg et al.'s per-CPU law; Batsim instead gives the whole host one p-state. A lease's own
energy is that of the cores it holds: ``share x full[level]`` over its reservations.

A node that is **off** draws ``off-watts``; **switching on** and **switching off** last the
given seconds and draw the given watts.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lease_manager.energy.forecast import GreenForecast, read_forecast
from lease_manager.energy.series import StepSeries, read_step_series
from lease_manager.numbers import parse_float

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
    from lease_manager.kernel.resources import NodeSet

#: the largest power a node (or a level) may be declared to draw, in watts
MAX_WATTS = 1e9
#: the longest a node may take to switch on or off, in seconds
MAX_SWITCH_SECONDS = 1e6


@attrs.frozen
class PState:
    """One DVFS level: its frequency (GHz) and the node's idle and full power there (W)."""

    ghz: float
    idle: float
    full: float


@attrs.frozen
class GroupPower:
    """The power model of one node group."""

    pstates: tuple[PState, ...]
    off_watts: float = 0.0
    on_seconds: float = 0.0
    on_watts: float = 0.0
    off_seconds: float = 0.0
    off_switch_watts: float = 0.0


class PowerModel:
    """The site's power model, as per-node arrays (index: node)."""

    def __init__(self, groups: Sequence[GroupPower], sizes: Sequence[int], cpu: int,
                 *, cop: float = float("inf"), price: StepSeries | None = None,
                 carbon: StepSeries | None = None, green: StepSeries | None = None,
                 forecast: GreenForecast | None = None) -> None:
        self.groups = tuple(groups)
        #: which group every node belongs to
        self.group_of = np.repeat(np.arange(len(sizes)), sizes)
        g = self.group_of
        #: index of the CPU resource type
        self.cpu = cpu
        self.levels = max(len(gp.pstates) for gp in self.groups)
        # per node and level (a group with fewer levels repeats its highest)
        full = np.array([[gp.pstates[min(k, len(gp.pstates) - 1)].full
                          for k in range(self.levels)] for gp in self.groups])
        ghz = np.array([[gp.pstates[min(k, len(gp.pstates) - 1)].ghz
                         for k in range(self.levels)] for gp in self.groups])
        self.full = full[g]
        self.ghz = ghz[g]
        self.idle = np.array([gp.pstates[-1].idle for gp in self.groups])[g]
        self.off_watts = np.array([gp.off_watts for gp in self.groups])[g]
        self.on_seconds = np.array([gp.on_seconds for gp in self.groups])[g]
        self.on_watts = np.array([gp.on_watts for gp in self.groups])[g]
        self.off_seconds = np.array([gp.off_seconds for gp in self.groups])[g]
        self.off_switch_watts = np.array([gp.off_switch_watts for gp in self.groups])[g]
        #: cooling coefficient of performance (total = IT x (COP + 1) / COP)
        self.cop = cop
        #: price per kWh drawn from the grid, and kg of carbon per kWh drawn, over time
        self.price = price or StepSeries.constant(0.0)
        self.carbon = carbon or StepSeries.constant(0.0)
        #: the site's green production (W) over time, if it has any
        self.green = green
        #: forecasts of the green production, revised as time passes (``[power]
        #: green-forecast``), if the site has them
        self.forecast = forecast

    @property
    def top_level(self) -> int:
        return self.levels - 1

    @property
    def cooling_factor(self) -> float:
        """Total power over IT power."""
        return 1.0 if np.isinf(self.cop) else (self.cop + 1.0) / self.cop


# ------------------------------------------------------------------------------- parsing
def _number(text: str, what: str, low: float, high: float) -> float:
    try:
        value = parse_float(text)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not a number") from None
    if not (low <= value <= high):
        raise ValueError(f"{what} {text!r} must lie in [{low:g}, {high:g}]")
    return value


def parse_pstates(text: str) -> tuple[PState, ...]:
    """``"1.2:95:150 2.4:100:220"``: GHz:idle-W:full-W per level, lowest first."""
    levels = []
    for token in text.split():
        parts = token.split(":")
        if len(parts) != 3:
            raise ValueError(f"{token!r} is not GHz:IDLE-WATTS:FULL-WATTS")
        ghz = _number(parts[0], "frequency", 1e-6, 1e4)
        idle = _number(parts[1], "idle watts", 0, MAX_WATTS)
        full = _number(parts[2], "full watts", 0, MAX_WATTS)
        if full < idle:
            raise ValueError(f"{token!r}: full power is below idle power")
        levels.append(PState(ghz, idle, full))
    if not levels:
        raise ValueError("no levels given (expected e.g. '2.4:100:220')")
    if any(b.ghz <= a.ghz for a, b in zip(levels, levels[1:])):
        raise ValueError("levels must be given lowest frequency first, without repeats")
    return tuple(levels)


def cubic_pstates(text: str, cpus: float, idle_counted: bool) -> tuple[PState, ...]:
    """Levels from Garg et al.'s law ``P(f) = beta + alpha f^3`` per CPU:
    ``"BETA:ALPHA:FMIN:FMAX:LEVELS"`` (levels evenly spaced from FMIN to FMAX).

    A node of ``cpus`` CPUs draws ``cpus x P(f)`` when all are busy at ``f``; idle CPUs draw
    ``beta`` if idle power is counted, nothing if not (the paper counts only running CPUs).
    """
    parts = text.split(":")
    if len(parts) != 5:
        raise ValueError(f"{text!r} is not BETA:ALPHA:FMIN:FMAX:LEVELS")
    beta = _number(parts[0], "beta", 0, MAX_WATTS)
    alpha = _number(parts[1], "alpha", 0, MAX_WATTS)
    fmin = _number(parts[2], "fmin", 1e-6, 1e4)
    fmax = _number(parts[3], "fmax", fmin, 1e4)
    count = _number(parts[4], "levels", 1, 100)
    if not count.is_integer():
        raise ValueError(f"levels {parts[4]!r} is not a whole number")
    n = int(count)
    if n > 1 and fmax <= fmin:
        raise ValueError("fmax must be above fmin when there are several levels")
    freqs = [fmax] if n == 1 else [fmin + k * (fmax - fmin) / (n - 1) for k in range(n)]
    idle = cpus * beta if idle_counted else 0.0
    return tuple(PState(f, idle, cpus * (beta + alpha * f ** 3)) for f in freqs)


def _switch(text: str) -> tuple[float, float]:
    seconds, sep, watts = text.partition(":")
    if not sep:
        raise ValueError(f"{text!r} is not SECONDS:WATTS")
    return (_number(seconds, "seconds", 0, MAX_SWITCH_SECONDS),
            _number(watts, "watts", 0, MAX_WATTS))


def _per_group(text: str, groups: int, parse: Callable[[str], object]) -> list:
    """One value per node group: ``;``-separated, or one value for every group."""
    parts = [p.strip() for p in text.split(";")]
    if len(parts) == 1:
        parts = parts * groups
    if len(parts) != groups:
        raise ValueError(f"{len(parts)} values for {groups} node groups (give one, or one per "
                         f"group separated by ';')")
    return [parse(p) for p in parts]


def power_model_from_config(config: Config, nodes: NodeSet) -> PowerModel | None:
    """The ``[power]`` section's model for ``nodes``, or None when no power model is given."""
    pstates_text = config.get("power", "pstates")
    cubic_text = config.get("power", "cubic-law")
    if not pstates_text and not cubic_text:
        return None
    if pstates_text and cubic_text:
        raise config.error("power", "cubic-law", "give either pstates or cubic-law, not both")
    if "CPU" not in nodes.types.names:
        raise config.error("power", "pstates" if pstates_text else "cubic-law",
                           "a power model needs the site to have a CPU resource")
    cpu = nodes.types.index("CPU")
    sizes = nodes.groups or (nodes.count,)
    first = np.cumsum((0,) + tuple(sizes))[:-1]
    cpus = [float(nodes.capacity[i, cpu]) for i in first]

    def field(option: str, parse: Callable[[str], object]) -> list:
        try:
            return _per_group(config.get("power", option), len(sizes), parse)
        except ValueError as exc:
            raise config.error("power", option, str(exc)) from None

    if pstates_text:
        pstates = field("pstates", parse_pstates)
    else:
        counted = config.get("power", "cubic-idle") == "counted"
        texts = field("cubic-law", str)
        try:
            pstates = [cubic_pstates(t, c, counted) for t, c in zip(texts, cpus)]
        except ValueError as exc:
            raise config.error("power", "cubic-law", str(exc)) from None
    off = field("off-watts", lambda t: _number(t, "watts", 0, MAX_WATTS))
    on = field("switch-on", _switch)
    down = field("switch-off", _switch)
    groups = [GroupPower(p, o, s_on[0], s_on[1], s_off[0], s_off[1])
              for p, o, s_on, s_off in zip(pstates, off, on, down)]
    if (config.get("power", "policy-node-power") != "always-on"
            or config.get("power", "initial-state") == "off"):
        if any(g.on_seconds <= 0 for g in groups):
            raise config.error("power", "switch-on", "nodes that are switched off need a "
                               "switch-on time above 0 seconds")
    green, forecast = _green_from_config(config)
    return PowerModel(groups, sizes, cpu, cop=cop_from_config(config),
                      price=_series_from_config(config, "electricity-price", "price"),
                      carbon=_series_from_config(config, "carbon-rate", "rate"), green=green,
                      forecast=forecast)


def _series_from_config(config: Config, option: str, what: str) -> StepSeries:
    """A ``[power]`` series option: a constant, a value drawn from the seed, or a file."""
    value = config.get("power", option)
    if isinstance(value, tuple):
        return StepSeries.constant(drawn(config, option, value))
    if not isinstance(value, str):
        return StepSeries.constant(value)
    if not Path(value).is_file():
        raise config.error("power", option, f"file not found: {value}")
    return read_step_series(value, what, maximum=1e6)


def _green_from_config(config: Config) -> tuple[StepSeries | None, GreenForecast | None]:
    """The site's green production and its forecast (``[power] green-production``,
    ``green-forecast``), scaled by ``green-scale``; None where not given."""
    green_path = config.get("power", "green-production")
    if green_path and not Path(green_path).is_file():
        raise config.error("power", "green-production", f"file not found: {green_path}")
    green = (read_step_series(green_path, "watts", maximum=MAX_WATTS * 1e3) if green_path
             else None)
    forecast_path = config.get("power", "green-forecast")
    if forecast_path and not Path(forecast_path).is_file():
        raise config.error("power", "green-forecast", f"file not found: {forecast_path}")
    forecast = (read_forecast(forecast_path, maximum=MAX_WATTS * 1e3) if forecast_path
                else None)
    scale = config.get("power", "green-scale")
    if scale != 1.0:
        if green is not None:
            green = StepSeries(green.times, green.values * scale)
        if forecast is not None:
            forecast = forecast.scaled(scale)
    return green, forecast


def drawn(config: Config, option: str, value: tuple[str, float, float],
          floor: float = 0.0) -> float:
    """A ``[power]`` value given as ``uniform:LOW:HIGH``, ``normal:MEAN:SD`` or
    ``redrawn-normal:MEAN:SD``, drawn from the run's seed in a stream of its own per option
    and site: it depends only on the seed, the option and the site's name. A normal draw
    below ``floor`` is cut to it; a redrawn-normal one is drawn again from the same stream
    until it is not (so its first draw is the normal's whenever that is at least ``floor``)."""
    kind, a, b = value
    rng = np.random.default_rng([config.get("simulation", "seed"),
                                 zlib.crc32(f"{option}:{config.site_name or ''}".encode())])
    if kind == "uniform":
        return float(rng.uniform(a, b))
    x = float(rng.normal(a, b))
    if kind == "redrawn-normal":
        # a mean at least ``floor`` (the parser's bound) makes each draw at least even odds
        while x < floor:
            x = float(rng.normal(a, b))
    return max(floor, x)


def cop_from_config(config: Config) -> float:
    """The site's ``[power] cop`` (drawn, if the configuration says so)."""
    cop = config.get("power", "cop")
    return drawn(config, "cop", cop, 1e-9) if isinstance(cop, tuple) else float(cop)


def power_cap_from_config(config: Config, model: PowerModel) -> StepSeries | None:
    """The ``[power] power-cap`` envelope as a series of watts, or None without a cap; cut to
    ``power-cap-window`` and scaled by ``power-cap-scale`` (see :func:`cap_window`)."""
    value = config.get("power", "power-cap")
    if value == "none":
        return None
    if not isinstance(value, str):
        cap = StepSeries.constant(value)
    elif value == "green":
        if model.green is None:
            raise config.error("power", "power-cap", "'green' needs a green-production series")
        cap = model.green
    else:
        if not Path(value).is_file():
            raise config.error("power", "power-cap", f"file not found: {value}")
        cap = read_step_series(value, "watts", maximum=MAX_WATTS * 1e3)
    return cap_window(config, cap)


def cap_window(config: Config, cap: StepSeries) -> StepSeries:
    """``cap`` scaled by ``[power] power-cap-scale`` and, with ``power-cap-window`` W > 0
    seconds, cut to the window ``[s, s + W)`` moved to time 0, with no power after it: ``s`` is
    one of the series' times with ``s + D`` at most its last time, drawn from the run's seed
    (one stream per site), so that every run of a seed has the same envelope. D is
    ``power-cap-window-draw`` (0: W): with D fixed, a longer W keeps the start of the window
    D would give and extends it."""
    scale = float(config.get("power", "power-cap-scale"))
    window = float(config.get("power", "power-cap-window"))
    if scale != 1.0:
        cap = StepSeries(cap.times, cap.values * scale)
    if window <= 0:
        return cap
    draw = float(config.get("power", "power-cap-window-draw")) or window
    name = "power-cap-window" if draw == window else "power-cap-window-draw"
    starts = cap.times[cap.times + draw <= cap.times[-1]]
    if not len(starts):
        raise config.error("power", name,
                           f"{draw:g} s is longer than the cap series "
                           f"({float(cap.times[-1] - cap.times[0]):g} s from its first row to "
                           f"its last)")
    rng = np.random.default_rng([config.get("simulation", "seed"),
                                 zlib.crc32(f"power-cap-window:{config.site_name or ''}"
                                            .encode())])
    start = float(starts[int(rng.integers(len(starts)))])
    if start + window > cap.times[-1]:
        raise config.error("power", "power-cap-window",
                           f"the window drawn from the seed starts at {start:g} s: "
                           f"{window:g} s from there run past the cap series' last row "
                           f"({float(cap.times[-1]):g} s)")
    inside = (cap.times >= start) & (cap.times < start + window)
    times = np.concatenate([[0.0], cap.times[inside] - start, [window]])
    values = np.concatenate([[float(cap.at(start))], cap.values[inside], [0.0]])
    keep = np.append(times[1:] != times[:-1], True)    # the start's own row, once
    return StepSeries(times[keep], values[keep])
