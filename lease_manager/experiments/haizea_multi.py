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
from typing import Any

from lease_manager.config.haizea import all_errors, translate
from lease_manager.errors import ConfigError

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


def multi_runs(reader: Any) -> tuple[list[str], list[tuple[str, str]], dict[str, Path],
                                     dict[str, tuple[list[str], dict[str, tuple[str, str, str]]]]]:
    """A ``[multi]`` file's profiles (one per profile and injection file), traces and each
    profile's ``--set`` overrides with where each came from (``section.option`` -> (text,
    value, multi file section)); every error of the file at once otherwise."""
    from lease_manager.experiments.sweep_file import _NAME, trace_name

    parser, where, path = reader.parser, reader.where, reader.path
    errors: list[ConfigError] = []

    def error(message: str, section: str, name: str = "") -> None:
        line = where.get((section, name)) or where.get((section, ""))
        errors.append(ConfigError(message, file=str(path), line=line,
                                  field=f"[{section}] {name}" if name else f"[{section}]"))

    old = pre_09_options(parser)
    if old:    # one line: the file's other errors would only follow from this one
        section, name = min(old, key=lambda key: where.get(key) or 0)
        raise ConfigError(PRE_09_ADVICE, file=str(path), line=where.get((section, name)),
                          field=f"[{section}] {name}")
    control = dict(parser.items(MULTI))
    for name in control:
        if name not in MULTI_OPTIONS:
            error(f"unknown option of Haizea's [multi] ({', '.join(MULTI_OPTIONS[:6])})",
                  MULTI, name)
        elif name.startswith("annotation") and control[name].strip():
            error("annotation files are not supported: give lease attributes as <extra> in "
                  "the LWF files, or with an annotator", MULTI, name)
    here = path.resolve().parent
    tracedir = here / control.get("tracedir", ".").strip()
    traces: list[tuple[str, str]] = []
    resolved: dict[str, Path] = {}
    for written in control.get("tracefiles", "").split():
        full = (tracedir / written).resolve()
        name = trace_name(written)
        if not full.is_file():
            error(f"trace file not found: {full}", MULTI, "tracefiles")
        elif not _NAME.fullmatch(name) or name in resolved:
            error(f"trace {written!r} cannot name a run folder of its own", MULTI, "tracefiles")
        else:
            resolved[name] = full
            traces.append((name, written))
    if not control.get("tracefiles", "").strip():
        error("no trace files given (tracefiles: FILE FILE...)", MULTI, "tracefiles")
    injections: list[Path | None] = []
    injdir = here / control.get("injectiondir", ".").strip()
    for written in control.get("injectionfiles", "").split():
        full = (injdir / written).resolve()
        if not full.is_file():
            error(f"injection file not found: {full}", MULTI, "injectionfiles")
        injections.append(full)
    skip = control.get("skip-no-injection", "false").strip().lower() in ("true", "yes", "1")
    if not (injections and skip):
        injections.append(None)   # Haizea runs every profile without an injection file too

    sections: dict[str, list[str]] = {}
    for section in parser.sections():
        if section == MULTI:
            continue
        profile, colon, haizea_section = (s.strip() for s in section.partition(":"))
        if not colon or not profile or not haizea_section:
            error("not [multi], [common:SECTION] or [PROFILE:SECTION]", section)
            continue
        if profile != "common" and not _NAME.fullmatch(profile):
            error(f"profile name {profile!r} cannot name a run folder", section)
        sections.setdefault(profile, []).append(section)
    names = [p for p in sections if p != "common"] or ["default"]

    profiles: dict[str, tuple[list[str], dict[str, tuple[str, str, str]]]] = {}
    order: list[str] = []
    for profile in names:
        merged = configparser.ConfigParser(interpolation=None)
        lines: dict[tuple[str, str], int] = {}
        origin: dict[tuple[str, str], str] = {}
        for section in sections.get("common", []) + sections.get(profile, []):
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
        raw, found = translate(path, merged, lines, reader.schema.sections)
        for exc in found:   # name the multi file's section, not the merged one
            errors.append(ConfigError(f"profile {profile!r}: {exc.detail}", file=exc.file,
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
                    value = str((here / value).resolve())
            except ValueError as exc:
                errors.append(ConfigError(f"profile {profile!r}: {exc}", file=str(path),
                                          line=line, field=f"[{section}] {name}"))
                continue
            haizea_section = next((origin[key] for key, at in lines.items()
                                   if at == line and key in origin), MULTI)
            settings[f"{section}.{name}"] = (text.strip(), value, haizea_section)
            overrides.append(f"{section}.{name}={value}")
        for injection in injections:
            full_name = profile if injection is None else f"{profile}+{injection.stem}"
            extra = [] if injection is None else [f"tracefile.injectionfile={injection}"]
            profiles[full_name] = (overrides + extra, settings)
            order.append(full_name)
    if errors:
        raise all_errors(errors)
    return order, traces, resolved, profiles


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
