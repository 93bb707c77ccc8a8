"""Sweep files: many runs of the same traces under named profiles and seeds.

A *sweep file* is Haizea's multi-configuration file with a ``[sweep]`` control section (a
Haizea ``[multi]`` file runs as it is: :mod:`lease_manager.experiments.haizea_multi`)::

    [sweep]
    base = sample.ini                 # optional: a configuration the overrides apply to
    traces = ../traces/a.swf, ../traces/b.swf
    seeds = 1-3                       # or 1, 2, 3 (default: the configuration's seed)
    axes = paradigm, cores            # optional: profiles crossed from these axes
    profiles = off, easy              # optional: which profiles, in which order

    [common:tracefile]                # applies to every profile
    max-jobs = 500

    [axis:paradigm]                   # one value per line: NAME = section.option=value
    cloud = tracefile.paradigm=cloud
    hpc = tracefile.paradigm=hpc

    [axis:cores]                      # a value may set several options, one per line
    8 = simulation.resources=18 CPU:8 Memory:8192
    16 = simulation.resources=9 CPU:16 Memory:16384
        tracefile.procs-per-vm=1

    [off:scheduling]                  # applies to profile "off"
    backfilling = off

Axes cross: the profiles above are ``cloud-8``, ``cloud-16``, ``hpc-8``, ``hpc-16`` (values
joined by ``-`` in the order of ``axes``, the first axis varying slowest), plus the profiles
named by ``[PROFILE:SECTION]`` sections. A section named after a crossed profile
(``[hpc-16:scheduling]``) adds to it. Each option belongs to one axis. Without ``axes`` the
profiles are those the sections name (or ``default``).

A profile's configuration is the base file, then the ``common:`` options, then its axis values',
then its own, then ``tracefile.tracefile=TRACE`` and ``simulation.seed=SEED``; it expands to one
run per (profile, trace, seed). Everything is validated against the full schema before any run
starts; errors name the file, the line and the option.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from lease_manager.config.schema import SITE_PREFIX, _suggest, load_config, site_option
from lease_manager.errors import ConfigError
from lease_manager.experiments.sweep_runs import (
    RUN_FOLDER_NAME,
    RunsFileReader,
    RunSpec,
    Sweep,
    checked_config,
    trace_name,
)

__all__ = ["RunSpec", "Sweep", "load_sweep", "only_profiles", "parse_seeds", "trace_name",
           "with_overrides", "with_seeds"]

SWEEP_SECTION = "sweep"
SWEEP_OPTIONS = ("base", "traces", "tracedir", "seeds", "axes", "profiles")
COMMON = "common"
AXIS = "axis"
#: options that the [sweep] section sets for every run, not the profiles
RESERVED = {("tracefile", "tracefile"): "traces", ("simulation", "seed"): "seeds"}


#: most seeds one sweep may list: each is a run per profile and trace, and ``0-100000000000``
#: used to be expanded (and checked for repeats in a list) without end
MAX_SEEDS = 10_000


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"1, 2, 5"``, ``"1-10"`` or a mix (``"1-3 7"``) -> the seeds, in order, once each; at
    most :data:`MAX_SEEDS` of them, in ASCII digits (``١-٣`` is refused, not read as 1-3)."""
    seeds: list[int] = []
    seen: set[int] = set()
    for part in re.split(r"[,\s]+", re.sub(r"\s*-\s*", "-", text.strip())):
        if not part:
            continue
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part)
        if not m:
            raise ValueError(f"{part!r} is not a seed (a non-negative integer in ASCII digits) "
                             "or a range A-B")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"the range {part!r} is empty")
        if len(seeds) + (hi - lo + 1) > MAX_SEEDS:
            raise ValueError(f"more than {MAX_SEEDS:,} seeds (each is a run per profile and "
                             "trace)")
        for seed in range(lo, hi + 1):
            if seed in seen:
                raise ValueError(f"seed {seed} is given twice")
            seen.add(seed)
            seeds.append(seed)
    if not seeds:
        raise ValueError("no seeds given")
    return tuple(seeds)


def _split_paths(text: str) -> list[str]:
    """Trace paths: separated by commas or lines, or else by white space (as in Haizea)."""
    parts = re.split(r"[,\n]", text) if ("," in text or "\n" in text) else text.split()
    return [p.strip() for p in parts if p.strip()]


class _Reader(RunsFileReader):
    """Reads one sweep file: errors name the file, the line and the option."""

    # ------------------------------------------------------------------ [sweep]
    def control(self) -> dict[str, str]:
        if not self.parser.has_section(SWEEP_SECTION):
            raise ConfigError(f"no [{SWEEP_SECTION}] section (it lists the traces, seeds and "
                              "profiles)", file=self.file)
        control = dict(self.parser.items(SWEEP_SECTION))
        for name in control:
            if name not in SWEEP_OPTIONS:
                raise self.err(f"unknown option{_suggest(name, SWEEP_OPTIONS)}; [sweep] takes "
                               f"{', '.join(SWEEP_OPTIONS)}", SWEEP_SECTION, name,
                               field=f"[sweep] {name}")
        return control

    def base(self, control: dict[str, str]) -> Path | None:
        if not control.get("base", "").strip():
            return None
        base = (self.here / control["base"].strip()).resolve()
        if not base.is_file():
            raise self.err(f"base configuration not found: {base}", SWEEP_SECTION, "base",
                           field="[sweep] base")
        return base

    def traces(self, control: dict[str, str]) -> tuple[list[tuple[str, str]], dict[str, Path]]:
        if not control.get("traces", "").strip():
            raise self.err("no traces given (traces = path, path...)", SWEEP_SECTION, "traces",
                           field="[sweep] traces")
        tracedir = self.here / control.get("tracedir", "").strip()
        traces: list[tuple[str, str]] = []
        resolved: dict[str, Path] = {}
        for written in _split_paths(control["traces"]):
            full = (tracedir / written).resolve()
            if not full.is_file():
                raise self.err(f"trace file not found: {full}", SWEEP_SECTION, "traces",
                               field="[sweep] traces")
            name = trace_name(written)
            if not RUN_FOLDER_NAME.fullmatch(name):   # a folder: ".." would climb out of OUT
                raise self.err(f"trace {written!r}: its name {name!r} cannot name a run folder "
                               "(letters, digits, '_', '.', '+' or '-', starting with a "
                               "letter or digit); rename the file", SWEEP_SECTION, "traces",
                               field="[sweep] traces")
            if name in resolved:
                raise self.err(f"two traces are named {name!r} ({resolved[name]} and {full}); "
                               "run folders are named after the trace file", SWEEP_SECTION,
                               "traces", field="[sweep] traces")
            resolved[name] = full
            traces.append((name, written))
        return traces, resolved

    def seeds(self, control: dict[str, str]) -> tuple[int, ...] | None:
        if not control.get("seeds", "").strip():
            return None
        try:
            return parse_seeds(control["seeds"])
        except ValueError as exc:
            raise self.err(str(exc), SWEEP_SECTION, "seeds", field="[sweep] seeds") from None

    # ------------------------------------------------------------------ settings
    def setting(self, cfg_section: str, name: str, text: str, section: str, field: str,
                at: str | None = None) -> tuple[str, str, str, str]:
        """One validated ``section.option`` setting: (key, text, value, sweep file section);
        errors point at the line of option ``at`` of ``section`` (default: ``name``)."""
        at = name if at is None else at
        if cfg_section.startswith(SITE_PREFIX):
            opt = site_option(self.schema, name)
            if opt is None:
                raise self.err("not an option a site may set (resources, backfilling, "
                               "backfilling-reservations and the [power] options)", section,
                               at, field=field)
        else:
            opt = self.schema.option(cfg_section, name)
        if opt is None:
            known = [o.name for o in self.schema.options_in(cfg_section)]
            raise self.err(f"unknown option{_suggest(name, known)}", section, at, field=field)
        if (cfg_section, name) in RESERVED:
            raise self.err(f"set by [sweep] {RESERVED[(cfg_section, name)]}, not per profile",
                           section, at, field=field)
        try:
            converted = opt.convert(text)
        except ValueError as exc:
            raise self.err(str(exc), section, at, field=field) from None
        value = text.strip()
        # a path, relative to the sweep file (a number-or-file option given a number is not)
        if opt.type.is_path(converted):
            value = str((self.here / value).resolve())
        return f"{cfg_section}.{name}", text.strip(), value, section

    def profile_sections(self) -> tuple[list[str], dict[str, list[tuple[str, str, str, str]]]]:
        """``[common:SECTION]`` and ``[PROFILE:SECTION]``: the profiles named, in order, and
        every profile's settings (``common`` for the shared ones)."""
        named: list[str] = []
        options: dict[str, list[tuple[str, str, str, str]]] = {}
        for section in self.parser.sections():
            if section == SWEEP_SECTION or section.partition(":")[0].strip() == AXIS:
                continue
            profile, colon, cfg_section = (s.strip() for s in section.partition(":"))
            if not colon or not profile or not cfg_section:
                hint = _suggest(section, [SWEEP_SECTION])
                raise self.err(f"section [{section}] is not [{SWEEP_SECTION}], "
                               f"[common:SECTION], [axis:NAME] or [PROFILE:SECTION]{hint}",
                               section)
            if cfg_section not in self.schema.sections:
                raise self.err(f"unknown configuration section [{cfg_section}]"
                               f"{_suggest(cfg_section, self.schema.sections)}", section)
            if profile != COMMON:
                self.check_name(profile, section)
                if profile not in named:
                    named.append(profile)
            for name, text in self.parser.items(section):
                options.setdefault(profile, []).append(
                    self.setting(cfg_section, name, text, section, f"[{section}] {name}"))
        return named, options

    def check_name(self, name: str, section: str, option: str = "") -> None:
        if not RUN_FOLDER_NAME.fullmatch(name) or name == COMMON:
            raise self.err(f"{name!r} cannot name a profile: letters, digits, '_', '.', '+' "
                           "or '-' (it names a folder)", section, option)

    # ------------------------------------------------------------------ axes
    def axes(self, control: dict[str, str]) -> list[tuple[str, list[tuple[str, list]]]]:
        """``[sweep] axes`` and their ``[axis:NAME]`` sections: for each axis in order, its
        values in order, each with the settings it makes."""
        names = [a for a in re.split(r"[,\s]+", control.get("axes", "").strip()) if a]
        declared = [s for s in self.parser.sections()
                    if s.partition(":")[0].strip() == AXIS]
        for section in declared:
            axis = section.partition(":")[2].strip()
            if axis not in names:
                raise self.err(f"axis {axis!r} is not in [sweep] axes{_suggest(axis, names)}",
                               section)
        if len(set(names)) != len(names):
            raise self.err("an axis is listed twice", SWEEP_SECTION, "axes",
                           field="[sweep] axes")
        axes = []
        owner: dict[str, str] = {}   # option -> the axis that sets it
        for axis in names:
            section = f"{AXIS}:{axis}"
            if not self.parser.has_section(section):
                raise self.err(f"no [{section}] section gives the values of axis {axis!r}",
                               SWEEP_SECTION, "axes", field="[sweep] axes")
            values = []
            for value, text in self.parser.items(section):
                values.append((value, self.axis_value(axis, value, text, owner)))
            if not values:
                raise self.err(f"axis {axis!r} has no values", section)
            axes.append((axis, values))
        return axes

    def axis_value(self, axis: str, value: str, text: str,
                   owner: dict[str, str]) -> list[tuple[str, str, str, str]]:
        """The settings of one axis value: ``section.option=value``, one per line."""
        section = f"{AXIS}:{axis}"
        field = f"[{section}] {value}"
        self.check_name(value, section, value)
        settings = []
        for line in (ln.strip() for ln in text.splitlines()):
            if not line:
                continue
            key, eq, setting = line.partition("=")
            cfg_section, dot, name = key.strip().rpartition(".")
            if not eq or not dot:
                raise self.err(f"{line!r} is not section.option=value", section, value,
                               field=field)
            if (cfg_section not in self.schema.sections
                    and not cfg_section.startswith(SITE_PREFIX)):   # site:NAME.option is fine
                raise self.err(f"unknown configuration section [{cfg_section}]"
                               f"{_suggest(cfg_section, self.schema.sections)}", section,
                               value, field=field)
            item = self.setting(cfg_section, name.strip().lower(), setting, section, field,
                                at=value)
            if owner.setdefault(item[0], axis) != axis:
                raise self.err(f"{item[0]} is set by axes {owner[item[0]]!r} and {axis!r}: "
                               "each option belongs to one axis", section, value, field=field)
            settings.append((item[0], item[1], item[2], section))
        if not settings:
            raise self.err(f"axis value {value!r} sets nothing", section, value, field=field)
        return settings


def _crossed(axes: list[tuple[str, list[tuple[str, list]]]]) -> dict[str, list]:
    """Profile name -> the settings of its axis values (the first axis varies slowest)."""
    crossed: dict[str, list] = {}
    if not axes:
        return crossed
    for combo in itertools.product(*(values for _, values in axes)):
        crossed["-".join(value for value, _ in combo)] = [s for _, st in combo for s in st]
    return crossed


def _profiles(reader: _Reader, control: dict[str, str], named: list[str],
              sections: dict[str, str], crossed: dict[str, list]) -> list[str]:
    """The profiles to run, in order: ``[sweep] profiles`` if given (which must include every
    profile named by a section; ``sections``: where each is first named), else the crossed
    ones, then those named by sections."""
    known = list(crossed) + [p for p in named if p not in crossed]
    if not control.get("profiles", "").strip():
        return known or ["default"]
    profiles = [p for p in re.split(r"[,\s]+", control["profiles"].strip()) if p]
    for p in profiles:
        reader.check_name(p, SWEEP_SECTION, "profiles")
        if crossed and p not in crossed and p not in named:
            raise reader.err(f"profile {p!r} is neither crossed from the axes nor named by a "
                             f"section{_suggest(p, known)}", SWEEP_SECTION, "profiles",
                             field="[sweep] profiles")
    if len(set(profiles)) != len(profiles):
        raise reader.err("a profile is listed twice", SWEEP_SECTION, "profiles",
                         field="[sweep] profiles")
    for p in named:
        if p not in profiles:
            raise reader.err(f"profile {p!r} is not in [sweep] profiles"
                             f"{_suggest(p, profiles)}", sections[p])
    return profiles


def load_sweep(path: str | Path, plugins: Any = None) -> Sweep:
    """Read and validate a sweep file against the schema of ``plugins`` (default: installed)."""
    from lease_manager.plugins import Plugins

    plugins = plugins if plugins is not None else Plugins()
    reader = _Reader(Path(path), plugins)
    if reader.parser.has_section("multi") and not reader.parser.has_section(SWEEP_SECTION):
        from lease_manager.experiments.haizea_multi import load_multi

        return load_multi(reader)   # Haizea's multi-configuration file
    control = reader.control()
    base = reader.base(control)
    traces, resolved = reader.traces(control)
    seeds = reader.seeds(control)
    named, options = reader.profile_sections()
    crossed = _crossed(reader.axes(control))
    first_section = {p: items[0][3] for p, items in options.items()}
    profiles = _profiles(reader, control, named, first_section, crossed)
    runs: list[RunSpec] = []
    for profile in profiles:
        items = options.get(COMMON, []) + crossed.get(profile, []) + options.get(profile, [])
        merged: dict[str, tuple[str, str, str]] = {}
        for key, text, value, section in items:
            merged[key] = (text, value, section)   # later ones override earlier ones
        overrides = [f"{key}={value}" for key, (_, value, _) in merged.items()]
        config = checked_config(reader, profile, base, merged, overrides,
                                 resolved[traces[0][0]])
        profile_seeds = seeds if seeds is not None else (config.get("simulation", "seed"),)
        for name, written in traces:
            for seed in profile_seeds:
                runs.append(RunSpec(
                    run_id=f"{profile}/{name}/seed-{seed}", profile=profile, trace=name,
                    trace_path=written, seed=seed, base=str(base) if base else None,
                    settings=tuple((key, text) for key, (text, _, _) in merged.items()),
                    overrides=tuple(overrides + [f"tracefile.tracefile={resolved[name]}",
                                                 f"simulation.seed={seed}"])))
    all_seeds = tuple(dict.fromkeys(r.seed for r in runs))
    return Sweep(path=reader.path, base=base, profiles=tuple(profiles), traces=tuple(traces),
                 seeds=all_seeds, runs=tuple(runs))


def only_profiles(sweep: Sweep, names: Sequence[str]) -> Sweep:
    """``sweep`` restricted to the profiles ``names`` (``--only``), in the sweep's order."""
    for name in names:
        if name not in sweep.profiles:
            raise ConfigError(f"--only: no profile {name!r} in the sweep"
                              f"{_suggest(name, sweep.profiles)}", file=str(sweep.path))
    keep = [p for p in sweep.profiles if p in names]
    runs = tuple(r for r in sweep.runs if r.profile in keep)
    return attrs.evolve(sweep, profiles=tuple(keep), runs=runs,
                        seeds=tuple(dict.fromkeys(r.seed for r in runs)))


def with_overrides(sweep: Sweep, items: Sequence[str], schema: Any) -> Sweep:
    """``sweep`` with ``section.option=value`` ``items`` applied to every run, last (a quick
    look with ``tracefile.max-jobs=500``, say); checked against ``schema`` first."""
    if not items:
        return sweep
    for spec in sweep.runs[:1]:
        load_config(spec.base, schema, [*spec.overrides, *items])   # raises ConfigError
    extra = tuple(item.partition("=")[::2] for item in items)
    runs = tuple(attrs.evolve(r, settings=r.settings + extra, overrides=r.overrides + tuple(items))
                 for r in sweep.runs)
    return attrs.evolve(sweep, runs=runs)


def with_seeds(sweep: Sweep, seeds: Sequence[int]) -> Sweep:
    """``sweep`` with every (profile, trace) run once per seed of ``seeds`` instead."""
    runs: list[RunSpec] = []
    seen: set[tuple[str, str]] = set()
    for r in sweep.runs:
        if (r.profile, r.trace) in seen:
            continue
        seen.add((r.profile, r.trace))
        kept = tuple(o for o in r.overrides if not o.startswith("simulation.seed="))
        for seed in seeds:
            runs.append(attrs.evolve(r, run_id=f"{r.profile}/{r.trace}/seed-{seed}", seed=seed,
                                     overrides=kept + (f"simulation.seed={seed}",)))
    return attrs.evolve(sweep, runs=tuple(runs), seeds=tuple(seeds))
