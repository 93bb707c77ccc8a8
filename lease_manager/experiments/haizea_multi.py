"""Haizea's multi-configuration files (a ``[multi]`` section) run as sweeps.

Haizea's ``haizea-generate-configs`` expands such a file into one configuration per profile,
trace and injection file; ``lease-manager sweep`` runs the same runs directly::

    [multi]
    tracedir: traces
    tracefiles: 30days.lwf 15days.lwf        # separated by white space, as in Haizea
    injectiondir: injections                 # optional
    injectionfiles: ar1.lwf ar2.lwf          # each run also without one, as in Haizea
    skip-no-injection: False                 # Haizea 1.1: not the runs without one
    datadir: /var/tmp/haizea                 # Haizea's data files: here, the run folders

    [common:general]                         # Haizea sections: every profile
    mode: simulated
    [nobackfilling:scheduling]               # profile "nobackfilling"
    backfilling: off

Every profile's Haizea options are translated as in a Haizea configuration file
(:mod:`lease_manager.config.haizea`); every error of the file is reported at once, each at the
line that set the option. A run with injection file ``ar1.lwf`` belongs to profile
``PROFILE+ar1`` (run folders ``OUT/PROFILE+ar1/TRACE/seed-N``).
"""

from __future__ import annotations

import configparser
from pathlib import Path

from lease_manager.config.haizea import all_errors, translate
from lease_manager.errors import ConfigError
from lease_manager.experiments.sweep_runs import (
    RUN_FOLDER_NAME,
    RunsFileReader,
    RunSpec,
    Sweep,
    checked_config,
    trace_name,
)

MULTI = "multi"
MULTI_OPTIONS = ("tracedir", "tracefiles", "injectiondir", "injectionfiles", "datadir",
                 "skip-no-injection", "annotationdir", "annotationfiles", "skip-no-annotation")
#: options only Haizea's multi files before 0.9 (its Technology Previews) have, by section
#: (``*``: any profile's section of that name); 0.9 renamed or reshaped each of them
PRE_09 = (("multi", "basedatadir"), ("*:simulation", "nodes"),
          ("*:scheduling", "diskimage-transfer"), ("*:simulation", "suspendresume-rate"))
PRE_09_ADVICE = ("a multi-configuration file of Haizea before 0.9, whose options 0.9 "
                 "changed: write it in Haizea 1.0's format (datadir for basedatadir, "
                 "'resources: NODES CPU:100 Memory:1024' for nodes and resources, "
                 "[general] lease-preparation for diskimage-transfer, [scheduling] "
                 "suspend-rate and resume-rate for suspendresume-rate; see 'Coming from "
                 "Haizea' in docs/haizea.md), then run it with `lease-manager sweep`")


def load_multi(reader: RunsFileReader) -> Sweep:
    """Haizea's ``[multi]`` file as a sweep."""
    profiles, traces, resolved, settings = multi_runs(reader)
    runs: list[RunSpec] = []
    for profile in profiles:
        overrides, merged = settings[profile]
        config = checked_config(reader, profile, None, merged, overrides,
                                resolved[traces[0][0]])
        seed = config.get("simulation", "seed")
        for name, written in traces:
            runs.append(RunSpec(
                run_id=f"{profile}/{name}/seed-{seed}", profile=profile, trace=name,
                trace_path=written, seed=seed, base=None,
                settings=tuple((key, text) for key, (text, _, _) in merged.items()),
                overrides=tuple(overrides + [f"tracefile.tracefile={resolved[name]}",
                                             f"simulation.seed={seed}"])))
    return Sweep(path=reader.path, base=None, profiles=tuple(profiles), traces=tuple(traces),
                 seeds=tuple(dict.fromkeys(r.seed for r in runs)), runs=tuple(runs))


#: a ``[multi]`` file's profile: its ``--set`` overrides, and ``section.option`` -> (text,
#: value, multi file section)
Profile = tuple[list[str], dict[str, tuple[str, str, str]]]


def multi_runs(reader: RunsFileReader) -> tuple[list[str], list[tuple[str, str]],
                                                 dict[str, Path], dict[str, Profile]]:
    """A ``[multi]`` file's profiles (one per profile and injection file), traces and each
    profile's ``--set`` overrides with where each came from (``section.option`` -> (text,
    value, multi file section)); every error of the file at once otherwise."""
    old = pre_09_options(reader.parser)
    if old:    # one line: the file's other errors would only follow from this one
        section, name = min(old, key=lambda key: reader.where.get(key) or 0)
        raise ConfigError(PRE_09_ADVICE, file=str(reader.path),
                          line=reader.where.get((section, name)), field=f"[{section}] {name}")
    multi = _MultiFile(reader)
    control = multi.control()
    traces, resolved = multi.traces(control)
    injections = multi.injections(control)
    sections = multi.profile_sections()
    names = [p for p in sections if p != "common"] or ["default"]
    profiles: dict[str, Profile] = {}
    order: list[str] = []
    for profile in names:
        overrides, settings = multi.settings(profile, sections.get("common", []) +
                                             sections.get(profile, []))
        for injection in injections:
            full_name = profile if injection is None else f"{profile}+{injection.stem}"
            extra = [] if injection is None else [f"tracefile.injectionfile={injection}"]
            profiles[full_name] = (overrides + extra, settings)
            order.append(full_name)
    if multi.errors:
        raise all_errors(multi.errors)
    return order, traces, resolved, profiles


class _MultiFile:
    """Reads a ``[multi]`` file's parts, collecting every error (in the file's order)."""

    def __init__(self, reader: RunsFileReader) -> None:
        self.reader = reader
        self.errors: list[ConfigError] = []
        self.here = reader.path.resolve().parent

    def error(self, message: str, section: str, name: str = "") -> None:
        where = self.reader.where
        line = where.get((section, name)) or where.get((section, ""))
        self.errors.append(ConfigError(message, file=str(self.reader.path), line=line,
                                       field=f"[{section}] {name}" if name else f"[{section}]"))

    def control(self) -> dict[str, str]:
        """The ``[multi]`` section's options (unknown ones and annotation files refused)."""
        control = dict(self.reader.parser.items(MULTI))
        for name in control:
            if name not in MULTI_OPTIONS:
                self.error(f"unknown option of Haizea's [multi] ({', '.join(MULTI_OPTIONS[:6])})",
                           MULTI, name)
            elif name.startswith("annotation") and control[name].strip():
                self.error("annotation files are not supported: give lease attributes as "
                           "<extra> in the LWF files, or with an annotator", MULTI, name)
        return control

    def traces(self, control: dict[str, str]) -> tuple[list[tuple[str, str]], dict[str, Path]]:
        """The traces, as (name, path as written), and each name's file."""
        tracedir = self.here / control.get("tracedir", ".").strip()
        traces: list[tuple[str, str]] = []
        resolved: dict[str, Path] = {}
        for written in control.get("tracefiles", "").split():
            full = (tracedir / written).resolve()
            name = trace_name(written)
            if not full.is_file():
                self.error(f"trace file not found: {full}", MULTI, "tracefiles")
            elif not RUN_FOLDER_NAME.fullmatch(name) or name in resolved:
                self.error(f"trace {written!r} cannot name a run folder of its own", MULTI,
                           "tracefiles")
            else:
                resolved[name] = full
                traces.append((name, written))
        if not control.get("tracefiles", "").strip():
            self.error("no trace files given (tracefiles: FILE FILE...)", MULTI, "tracefiles")
        return traces, resolved

    def injections(self, control: dict[str, str]) -> list[Path | None]:
        """The injection files, then ``None`` (no injection) unless ``skip-no-injection``."""
        injections: list[Path | None] = []
        injdir = self.here / control.get("injectiondir", ".").strip()
        for written in control.get("injectionfiles", "").split():
            full = (injdir / written).resolve()
            if not full.is_file():
                self.error(f"injection file not found: {full}", MULTI, "injectionfiles")
            injections.append(full)
        skip = control.get("skip-no-injection", "false").strip().lower() in ("true", "yes", "1")
        if not (injections and skip):
            injections.append(None)   # Haizea runs every profile without an injection file too
        return injections

    def profile_sections(self) -> dict[str, list[str]]:
        """Profile (or ``common``) -> its ``[PROFILE:SECTION]`` sections, in order."""
        sections: dict[str, list[str]] = {}
        for section in self.reader.parser.sections():
            if section == MULTI:
                continue
            profile, colon, haizea_section = (s.strip() for s in section.partition(":"))
            if not colon or not profile or not haizea_section:
                self.error("not [multi], [common:SECTION] or [PROFILE:SECTION]", section)
                continue
            if profile != "common" and not RUN_FOLDER_NAME.fullmatch(profile):
                self.error(f"profile name {profile!r} cannot name a run folder", section)
            sections.setdefault(profile, []).append(section)
        return sections

    def settings(self, profile: str, sections: list[str]) -> Profile:
        """One profile's Haizea options (``sections``: common ones first), translated."""
        reader = self.reader
        merged, lines, origin = self.merged(sections)
        raw, found = translate(reader.path, merged, lines, reader.schema.sections)
        for exc in found:   # name the multi file's section, not the merged one
            self.errors.append(ConfigError(f"profile {profile!r}: {exc.detail}", file=exc.file,
                                           line=exc.line, field=exc.field))
        settings: dict[str, tuple[str, str, str]] = {}
        overrides: list[str] = []
        for (section, name), (text, source) in raw.items():
            opt = reader.schema.option(section, name)
            if opt is None or (section, name) in (("tracefile", "tracefile"),
                                                  ("tracefile", "injectionfile")):
                continue
            value = text.strip()
            line = int(source.rpartition(":")[2])
            try:
                if opt.type.is_path(opt.convert(text)):
                    value = str((self.here / value).resolve())
            except ValueError as exc:
                self.errors.append(ConfigError(f"profile {profile!r}: {exc}",
                                               file=str(reader.path), line=line,
                                               field=f"[{section}] {name}"))
                continue
            haizea_section = next((origin[key] for key, at in lines.items()
                                   if at == line and key in origin), MULTI)
            settings[f"{section}.{name}"] = (text.strip(), value, haizea_section)
            overrides.append(f"{section}.{name}={value}")
        return overrides, settings

    def merged(self, sections: list[str]) -> tuple[configparser.ConfigParser,
                                                    dict[tuple[str, str], int],
                                                    dict[tuple[str, str], str]]:
        """``sections`` merged as one Haizea file, with each option's line and section."""
        parser, where = self.reader.parser, self.reader.where
        merged = configparser.ConfigParser(interpolation=None)
        lines: dict[tuple[str, str], int] = {}
        origin: dict[tuple[str, str], str] = {}
        for section in sections:
            target = section.partition(":")[2].strip()
            if not merged.has_section(target):
                merged.add_section(target)
                lines[(target, "")] = where.get((section, ""), 1)
            for name, value in parser.items(section):
                merged.set(target, name, value)
                lines[(target, name)] = where.get((section, name), where.get((section, ""), 1))
                origin[(target, name)] = section
        if not merged.has_section("tracefile"):
            merged.add_section("tracefile")
        return merged, lines, origin


def pre_09_options(parser: configparser.ConfigParser) -> list[tuple[str, str]]:
    """The ``(section, option)`` pairs of ``parser`` that only a multi file of Haizea before
    0.9 has (:data:`PRE_09`)."""
    found = []
    for wanted, name in PRE_09:
        for section in parser.sections():
            named = section == wanted or (wanted.startswith("*:") and
                                          section.partition(":")[2].strip() == wanted[2:])
            if named and parser.has_option(section, name):
                found.append((section, name))
    return found
