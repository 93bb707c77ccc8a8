"""Haizea 1.0 and 1.1 configuration files, read as they are.

A configuration file with a ``[general]`` section is Haizea's. Every section and option Haizea
1.0 and 1.1 define is translated here to lease_manager's options (:data:`HAIZEA_OPTIONS`),
accepted with Haizea's meaning, or refused with one line that says why and what to use
instead. Sections of lease_manager's own schema (``[power]``, say) may be added to a Haizea file
and are read as usual. Every error of the file is reported at once (:class:`ConfigErrors`), each
with its line.

Haizea's defaults hold where Haizea has a default: a Haizea file that leaves out
``policy-preemption`` gets Haizea's ``no-preemption``, one that leaves out ``clock`` runs a
trace on the simulated clock (Haizea's real clock cannot replay a trace), prices are per
node-hour, and so on (see :data:`HAIZEA_DEFAULTS`). Relative paths are read relative to the
configuration file, like every lease_manager path.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from lease_manager.errors import ConfigError, ConfigErrors, all_errors

__all__ = ["ConfigErrors", "HAIZEA_DEFAULTS", "HAIZEA_OPTIONS", "all_errors", "translate"]

#: every Haizea 1.0 and 1.1 section
HAIZEA_SECTIONS = ("general", "simulation", "scheduling", "accounting", "deploy-imagetransfer",
                   "tracefile", "opennebula", "pricing")

#: a translation's result: lease_manager options ``(section, option, text)`` to set
Settings = list[tuple[str, str, str]]

OPENNEBULA = ("OpenNebula enactment is not supported: run `lease-manager serve` with "
              "[daemon] enactment = process or slurm instead")


def _choice(value: str, allowed: Iterable[str], what: str) -> str:
    word = value.strip()
    if word not in allowed:
        raise ValueError(f"{word!r} is not one of {', '.join(allowed)} ({what})")
    return word


def _seconds(value: str) -> str:
    """Haizea's time options are whole seconds (its OPTTYPE_TIMEDELTA reads an integer)."""
    word = value.strip()
    if not re.fullmatch(r"\d+", word):
        raise ValueError(f"{word!r} is not a whole number of seconds")
    return word


def _megabytes(value: str) -> str:
    word = value.strip()
    if not re.fullmatch(r"\d+", word):
        raise ValueError(f"{word!r} is not a whole number of MB")
    return word


def _yes_no(value: str) -> str:
    word = value.strip().lower()
    if word in ("true", "yes", "on", "1"):
        return "yes"
    if word in ("false", "no", "off", "0"):
        return "no"
    raise ValueError(f"{value.strip()!r} is not True/False")


# --------------------------------------------------------------------------- translations
# Each takes the option's text (and the whole file's values, for options that depend on
# others) and returns the lease_manager settings, or raises ValueError with the reason.

Values = dict[tuple[str, str], str]
Translation = Callable[[str, Values], Settings]


def _to(section: str, option: str, convert: Callable[[str], str] = str.strip) -> Translation:
    return lambda value, values: [(section, option, convert(value))]


def _accept(check: Callable[[str], object] = lambda v: v) -> Translation:
    """Accepted with Haizea's meaning, which needs no lease_manager setting (the reason is in
    :data:`HAIZEA_OPTIONS`' notes and the README's migration table)."""
    def translate(value: str, values: Values) -> Settings:
        check(value)
        return []
    return translate


def _refuse(reason: str) -> Translation:
    def translate(value: str, values: Values) -> Settings:
        raise ValueError(reason)
    return translate


def _loglevel(value: str, values: Values) -> Settings:
    level = _choice(value, ("STATUS", "INFO", "DEBUG", "VDEBUG"), "Haizea's log levels")
    return [("accounting", "decision-log", "yes")] if level in ("DEBUG", "VDEBUG") else []


def _mode(value: str, values: Values) -> Settings:
    word = value.strip()
    if word == "simulated":
        return []
    if word == "opennebula":
        raise ValueError(OPENNEBULA)
    raise ValueError(f"{word!r} is not one of simulated, opennebula")


def _preparation(value: str, values: Values) -> Settings:
    word = _choice(value, ("unmanaged", "imagetransfer"), "lease preparation")
    return [("preparation", "lease-preparation", word)]


def _failure(value: str, values: Values) -> Settings:
    _choice(value, ("cancel", "exit", "exit-raise"), "lease failure handling")
    return []


def _persistence(value: str, values: Values) -> Settings:
    return []   # a replay keeps nothing on disk; the daemon's state is [daemon] state-dir


def _clock(value: str, values: Values) -> Settings:
    return [("simulation", "clock", _choice(value, ("simulated", "real"), "clock"))]


def _starttime(value: str, values: Values) -> Settings:
    word = value.strip()
    if not re.fullmatch(r"\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?", word):
        raise ValueError(f"{word!r} is not a date and time (YYYY-MM-DD HH:MM:SS)")
    return [("simulation", "starttime", word)]


def _resources(value: str, values: Values) -> Settings:
    # Haizea 1.1 parses only "4 CPU:100,Memory:1024" (1.0 and we: "4 CPU:100 Memory:1024")
    return [("simulation", "resources", value.strip().replace(",", " "))]


def _bandwidth(value: str) -> str:
    word = value.strip()
    if not re.fullmatch(r"\d+", word):
        raise ValueError(f"{word!r} is not a whole number of Mb/s")
    return word


def _stop_when(value: str, values: Values) -> Settings:
    word = _choice(value, ("all-leases-done", "besteffort-submitted", "besteffort-done",
                           "exact"), "stop condition")
    if word == "besteffort-submitted":
        raise ValueError("stopping when every best-effort lease has been submitted is not "
                         "supported: use stop-when = besteffort-done, or time with runtime")
    if word == "exact":
        when = values.get(("simulation", "stop-when-time"))
        if when is None:
            raise ValueError("stop-when = exact needs stop-when-time")
        return [("simulation", "stop-when", "time"), ("simulation", "runtime", when.strip())]
    return [("simulation", "stop-when", word)]


def _status_interval(value: str, values: Values) -> Settings:
    word = value.strip()
    if not re.fullmatch(r"\d+", word):
        raise ValueError(f"{word!r} is not a whole number of minutes")
    return []   # `simulate` shows the simulated time in its progress bar


def _mapper(value: str, values: Values) -> Settings:
    """Haizea's ``greedy`` mapper, or 1.1's ``deadline`` mapper: the same greedy mapping,
    whose preemptions plan each deadline victim again by its deadline or are given up; our
    preemption always does that (kernel/scheduler/preemption.py), so both map to ours."""
    if value.strip() not in ("greedy", "deadline"):
        raise ValueError(f"{value.strip()!r}: the mappers are Haizea's greedy and deadline "
                         "mappers (host order is chosen with policy-host-selection)")
    return []


def _policy(option: str) -> Translation:
    def translate(value: str, values: Values) -> Settings:
        word = value.strip()
        if "." in word:
            raise ValueError(f"{word!r}: Haizea policy classes cannot be loaded; write the "
                             "policy as a lease_manager plugin and name it here")
        return [("scheduling", option, word)]
    return translate


def _host_selection(value: str, values: Values) -> Settings:
    word = value.strip()
    if word == "greedy":   # Haizea's score exactly (policies/host_selection.py)
        word = "haizea-greedy"
    return _policy("policy-host-selection")(word, values)


def _preemption(value: str, values: Values) -> Settings:
    word = value.strip()
    if word == "ar-preempts-everything":   # Haizea's: advance reservations preempt
        word = "ar-preempts-be"            # best-effort leases only (1.0 and 1.1 alike)
    return _policy("policy-preemption")(word, values)


def _pricing(value: str, values: Values) -> Settings:
    word = value.strip()
    if word in ("maximum", "adaptive", "random"):
        raise ValueError(f"Haizea's {word!r} pricing (prices a simulated user accepts or "
                         "rejects) is not supported: use free or constant, or lease_manager's "
                         "maximum or adaptive in a lease_manager configuration")
    return _policy("policy-pricing")(value, values)


def _migration(value: str, values: Values) -> Settings:
    word = _choice(value, ("no", "yes", "yes-notransfer"), "migration")
    return [("scheduling", "migration", word)]


def _enactment_overhead(value: str, values: Values) -> Settings:
    return [("scheduling", "enactment-overhead", _seconds(value)),
            ("scheduling", "overhead-in-shutdown", "yes")]


#: Haizea 1.0's and 1.1's probe names (all but disk-usage are probes of the same names here)
HAIZEA_PROBES = ("ar", "best-effort", "immediate", "cpu-utilization", "lease", "lease-extras",
                 "deadline", "price", "disk-usage")


def _probes(value: str, values: Values) -> Settings:
    names = value.replace(",", " ").split()
    unknown = [n for n in names if n not in HAIZEA_PROBES and n != "usage"]
    if unknown:
        import difflib
        close = difflib.get_close_matches(unknown[0], HAIZEA_PROBES, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{unknown[0]!r} is not one of Haizea's probes{hint}: "
                         f"{', '.join(HAIZEA_PROBES)} (and lease_manager's usage)")
    if "disk-usage" in names:
        raise ValueError("the disk-usage probe is not supported: with image caches, the "
                         "transfers are in leases.csv's plans")
    return [("accounting", "probes", ", ".join(dict.fromkeys(names)))]


def _datafile(value: str, values: Values) -> Settings:
    return [("accounting", "datafile", value.strip())] if value.strip() else []


def _deploy(option: str, convert: Callable[[str], str] = str.strip) -> Translation:
    return lambda value, values: [("preparation", option, convert(value))]


def _runtime_overhead(value: str, values: Values) -> Settings:
    return [("tracefile", "runtime-slowdown-overhead", value.strip()),
            ("tracefile", "runtime-slowdown-as", "haizea")]


def _add_overhead(value: str, values: Values) -> Settings:
    word = _choice(value, ("none", "besteffort", "all"), "leases with overheads added")
    return [("tracefile", "add-overhead", word)]


def _override_memory(value: str, values: Values) -> Settings:
    word = value.strip()
    if word == "-1":   # Haizea's NO_MEMORY_OVERRIDE
        return []
    return [("tracefile", "override-memory", word)]


def _pricing_rate(option: str) -> Translation:
    return lambda value, values: [("pricing", option, value.strip()),
                                  ("pricing", "unit", "node-hour")]


#: (Haizea section, option) -> its translation. Options not here are Haizea's own (unknown
#: to it as well) and are errors, with a suggestion.
HAIZEA_OPTIONS: dict[tuple[str, str], Translation] = {
    ("general", "loglevel"): _loglevel,
    ("general", "logfile"): _accept(),                 # Haizea's daemon log: `serve` logs
    ("general", "mode"): _mode,
    ("general", "lease-preparation"): _preparation,
    ("general", "lease-failure-handling"): _failure,
    ("general", "persistence-file"): _persistence,
    ("simulation", "clock"): _clock,
    ("simulation", "starttime"): _starttime,
    ("simulation", "resources"): _resources,
    ("simulation", "imagetransfer-bandwidth"): _to("preparation", "imagetransfer-bandwidth",
                                                   _bandwidth),
    ("simulation", "stop-when"): _stop_when,
    ("simulation", "stop-when-time"): _accept(),       # read by stop-when = exact
    ("simulation", "status-message-interval"): _status_interval,
    ("simulation", "sanity-check"): _accept(_yes_no),   # invariants are checked on every run
    ("scheduling", "mapper"): _mapper,
    ("scheduling", "policy-admission"): _policy("policy-admission"),
    ("scheduling", "policy-preemption"): _preemption,
    ("scheduling", "policy-host-selection"): _host_selection,
    ("scheduling", "policy-pricing"): _pricing,
    ("scheduling", "wakeup-interval"): _accept(_seconds),   # the real clock wakes on events
    ("scheduling", "backfilling"): _to("scheduling", "backfilling"),
    ("scheduling", "backfilling-reservations"): _to("scheduling", "backfilling-reservations"),
    ("scheduling", "suspension"): _to("scheduling", "suspension"),
    ("scheduling", "suspend-rate"): _to("scheduling", "suspend-rate"),
    ("scheduling", "resume-rate"): _to("scheduling", "resume-rate"),
    ("scheduling", "suspendresume-exclusion"): _to("scheduling", "suspendresume-exclusion"),
    ("scheduling", "scheduling-threshold-factor"): _to("scheduling",
                                                       "scheduling-threshold-factor"),
    ("scheduling", "override-suspend-time"): _to("scheduling", "override-suspend-time",
                                                 _seconds),
    ("scheduling", "override-resume-time"): _to("scheduling", "override-resume-time",
                                                _seconds),
    ("scheduling", "force-scheduling-threshold"): _to("scheduling",
                                                      "force-scheduling-threshold", _seconds),
    ("scheduling", "migration"): _migration,
    ("scheduling", "non-schedulable-interval"): _accept(_seconds),
    ("scheduling", "shutdown-time"): _to("scheduling", "shutdown-time", _seconds),
    ("scheduling", "enactment-overhead"): _enactment_overhead,
    ("accounting", "datafile"): _datafile,
    ("accounting", "probes"): _probes,
    ("accounting", "attributes"): _accept(),           # set by Haizea's [multi] only
    ("deploy-imagetransfer", "transfer-mechanism"): _deploy("transfer-mechanism"),
    ("deploy-imagetransfer", "avoid-redundant-transfers"): _deploy("avoid-redundant-transfers",
                                                                  _yes_no),
    ("deploy-imagetransfer", "force-imagetransfer-time"): _deploy("force-imagetransfer-time",
                                                                 _seconds),
    ("deploy-imagetransfer", "diskimage-reuse"): _deploy("diskimage-reuse"),
    ("deploy-imagetransfer", "diskimage-cache-size"): _deploy("diskimage-cache-size",
                                                             _megabytes),
    ("tracefile", "tracefile"): _to("tracefile", "tracefile"),
    ("tracefile", "injectionfile"): _to("tracefile", "injectionfile"),
    ("tracefile", "imagefile"): _to("tracefile", "imagefile"),
    ("tracefile", "annotationfile"): _refuse("annotation files are not supported: give "
                                             "lease attributes as <extra> in the LWF file, or "
                                             "with an annotator ([tracefile] annotators)"),
    ("tracefile", "runtime-slowdown-overhead"): _runtime_overhead,
    ("tracefile", "add-overhead"): _add_overhead,
    ("tracefile", "bootshutdown-overhead"): _to("tracefile", "bootshutdown-overhead",
                                                _seconds),
    ("tracefile", "override-memory"): _override_memory,
    ("opennebula", "host"): _refuse(OPENNEBULA),
    ("opennebula", "port"): _refuse(OPENNEBULA),
    ("opennebula", "stop-when-no-more-leases"): _refuse(OPENNEBULA),
    ("opennebula", "dry-run"): _refuse(OPENNEBULA),
    ("pricing", "rate"): _pricing_rate("rate"),
    ("pricing", "seed"): lambda v, _: [("simulation", "seed", v.strip())],
    ("pricing", "min-rate"): _refuse("Haizea's random pricing policy is not supported: use "
                                     "constant, maximum or adaptive"),
    ("pricing", "max-rate"): _refuse("Haizea's random pricing policy is not supported: use "
                                     "constant, maximum or adaptive"),
}

#: Haizea's defaults where they differ from lease_manager's (set unless the file sets them)
HAIZEA_DEFAULTS: Settings = [
    ("scheduling", "policy-preemption", "no-preemption"),
    ("scheduling", "policy-host-selection", "haizea-greedy"),
    ("scheduling", "overhead-in-shutdown", "yes"),
    ("scheduling", "shutdown-after-early-end", "no"),
    ("scheduling", "suspendresume-model", "haizea"),
    ("scheduling", "reevaluation", "replan"),          # Haizea's only re-evaluation
    ("scheduling", "migration-bandwidth", "12.5"),     # Haizea's hard-coded 100 Mb/s
    ("scheduling", "preemption-order", "least-preemptable-first"),
    ("pricing", "unit", "node-hour"),
]

#: Haizea 1.0's required options (1.1 requires the rates only with suspension)
HAIZEA_REQUIRED = (("general", "mode"), ("simulation", "resources"),
                   ("scheduling", "suspension"))


def translate_override(section: str, name: str, value: str
                       ) -> list[tuple[str, str, str]] | None:
    """lease_manager's settings for ``--set SECTION.NAME=VALUE`` given with Haizea's names on a
    Haizea file (None if Haizea has no such option); ConfigError if Haizea's rules refuse it."""
    translation = HAIZEA_OPTIONS.get((section, name))
    if translation is None:
        return None
    try:
        return list(translation(value, {(section, name): value}))
    except ValueError as exc:
        raise ConfigError(str(exc), file="--set", field=f"[{section}] {name}") from None
    except KeyError as exc:     # a translation that reads another option of the file
        raise ConfigError(f"give it in the file: its meaning depends on {exc}", file="--set",
                          field=f"[{section}] {name}") from None


def translate(path: Path, parser: configparser.ConfigParser,
              where: dict[tuple[str, str], int], own_sections: Iterable[str]
              ) -> tuple[dict[tuple[str, str], tuple[str, str]], list[ConfigError]]:
    """lease_manager's raw settings ``(section, option) -> (text, "FILE:LINE")`` for a Haizea
    file, and every error found in it (each naming its line)."""
    import difflib

    own = set(own_sections)
    raw: dict[tuple[str, str], tuple[str, str]] = {}
    errors: list[ConfigError] = []
    values: Values = {(s, o): v for s in parser.sections() for o, v in parser.items(s)}
    for section in parser.sections():
        sec_line = where.get((section, ""))
        if section == "multi" or section.startswith("common:"):
            errors.append(ConfigError("a Haizea multi-configuration file is a sweep: run "
                                      "`lease-manager sweep` on it", file=str(path),
                                      line=sec_line, field=f"[{section}]"))
            continue
        if section not in HAIZEA_SECTIONS:
            if section in own:   # a lease_manager section added to a Haizea file
                for name, value in parser.items(section):
                    line = where.get((section, name), sec_line)
                    raw[(section, name)] = (value, f"{path}:{line}")
                continue
            close = difflib.get_close_matches(section, HAIZEA_SECTIONS, n=1, cutoff=0.6)
            hint = f" (did you mean [{close[0]}]?)" if close else ""
            errors.append(ConfigError(f"unknown section{hint}", file=str(path), line=sec_line,
                                      field=f"[{section}]"))
            continue
        for name, value in parser.items(section):
            line = where.get((section, name), sec_line)
            field = f"[{section}] {name}"
            translation = HAIZEA_OPTIONS.get((section, name))
            if translation is None:
                names = [o for s, o in HAIZEA_OPTIONS if s == section]
                close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                errors.append(ConfigError(f"unknown Haizea option{hint}", file=str(path),
                                          line=line, field=field))
                continue
            try:
                settings = translation(value, values)
            except ValueError as exc:
                errors.append(ConfigError(str(exc), file=str(path), line=line, field=field))
                continue
            for our_section, our_name, text in settings:
                raw[(our_section, our_name)] = (text, f"{path}:{line}")
    errors += _missing_required(path, parser, where)
    source = f"{path}:{where.get(('general', ''), 1)}"
    for section, name, text in HAIZEA_DEFAULTS:
        raw.setdefault((section, name), (text, source))
    if ("simulation", "clock") not in raw:
        raw[("simulation", "clock")] = ("simulated", source)
    return raw, errors


def _missing_required(path: Path, parser: configparser.ConfigParser,
                      where: dict[tuple[str, str], int]) -> list[ConfigError]:
    """The options a Haizea file must give and does not (each error naming its section's
    line): Haizea's required ones, and the rates suspension needs."""
    errors = []
    opennebula = parser.get("general", "mode", fallback="").strip() == "opennebula"
    for section, name in HAIZEA_REQUIRED:
        if opennebula and section == "simulation":
            continue      # refused for its mode: a missing simulation option would lead
        if not parser.has_option(section, name):
            errors.append(ConfigError(f"required option is missing (add it to [{section}])",
                                      file=str(path), line=where.get((section, "")),
                                      field=f"[{section}] {name}"))
    if (parser.get("scheduling", "suspension", fallback="none").strip() != "none"
            and parser.has_section("scheduling")):
        for name in ("suspend-rate", "resume-rate"):
            if not parser.has_option("scheduling", name):
                errors.append(ConfigError("required with suspension (add it to [scheduling])",
                                          file=str(path),
                                          line=where.get(("scheduling", "")),
                                          field=f"[scheduling] {name}"))
    return errors
