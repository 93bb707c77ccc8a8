"""What a file of runs becomes: the runs of a sweep, as plain data, and the checks shared by
sweep files (:mod:`lease_manager.experiments.sweep_file`) and Haizea's multi-configuration files
(:mod:`lease_manager.experiments.haizea_multi`)."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from lease_manager.config.schema import load_config, read_ini
from lease_manager.errors import ConfigError, LeaseManagerError

#: what may name a run folder (a profile or a trace): '..' would climb out of OUT
RUN_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
#: options that list policies by name (the schema checks single names, not lists)
POLICY_LISTS = {"probe": ("accounting", "probes"), "annotator": ("tracefile", "annotators")}


@attrs.frozen
class RunSpec:
    """One run of a sweep: everything a worker needs, as plain data."""

    run_id: str                             #: ``PROFILE/TRACE/seed-N``: the folder under OUT
    profile: str
    trace: str                              #: the trace's name (file name without .swf[.gz])
    trace_path: str                         #: as written in the sweep file
    seed: int
    base: str | None                        #: absolute path of the base configuration
    #: ``section.option`` -> value as written (common options, then the profile's)
    settings: tuple[tuple[str, str], ...]
    #: ``section.option=value`` overrides for :func:`load_config` (paths made absolute)
    overrides: tuple[str, ...]

    def meta(self) -> dict[str, Any]:
        """What ``run.json`` records: enough to rebuild the result table from the folder."""
        return {"run_id": self.run_id, "profile": self.profile, "trace": self.trace,
                "trace_path": self.trace_path, "seed": self.seed, "base": self.base,
                "settings": dict(self.settings), "overrides": list(self.overrides),
                "command": self.command()}

    def command(self, out: str | Path | None = None) -> str:
        """The ``lease-manager simulate`` command that reproduces this run alone."""
        args = ["lease-manager", "simulate", self.base or os.devnull]   # no base: empty file
        for item in self.overrides:
            args += ["--set", item]
        if out is not None:
            args += ["--out", str(out)]
        return " ".join(shlex.quote(a) for a in args)

    def task(self, out: str | Path) -> dict[str, Any]:
        """The worker's argument (see :func:`execute_run`). Its folder is always a folder
        three levels inside ``out`` (the worker clears it first)."""
        root = Path(out).resolve()
        parts = self.run_id.split("/")
        run_dir = (root / self.run_id).resolve()
        if (len(parts) != 3 or any(p in ("", ".", "..") for p in parts)
                or run_dir.parent.parent.parent != root):
            raise LeaseManagerError(f"run id {self.run_id!r} does not name a folder inside "
                                    f"{root}")
        return {"run_id": self.run_id, "dir": str(run_dir), "base": self.base,
                "overrides": list(self.overrides), "meta": self.meta()}


@attrs.frozen
class Sweep:
    """A parsed, validated sweep file."""

    path: Path
    base: Path | None
    profiles: tuple[str, ...]
    traces: tuple[tuple[str, str], ...]     #: (name, path as written)
    seeds: tuple[int, ...]
    runs: tuple[RunSpec, ...]

    def describe(self) -> str:
        def n(count: int, word: str) -> str:
            return f"{count} {word}" + ("" if count == 1 else "s")

        return (f"{n(len(self.runs), 'run')} ({n(len(self.profiles), 'profile')} x "
                f"{n(len(self.traces), 'trace')} x {n(len(self.seeds), 'seed')})")


def trace_name(path: str) -> str:
    """A trace's name in run folders: its file name without ``.gz`` and ``.swf``."""
    name = Path(path).name
    for suffix in (".gz", ".swf"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


class RunsFileReader:
    """Reads a file of runs (a sweep file, or Haizea's multi-configuration file): errors
    name the file, the line and the option."""

    def __init__(self, path: Path, plugins: Any) -> None:
        self.path = path
        self.plugins = plugins
        self.schema = plugins.schema
        self.parser, self.where = read_ini(path, "sweep file")
        self.file = str(path)
        self.here = path.resolve().parent

    def err(self, message: str, section: str, name: str = "",
            field: str | None = None) -> ConfigError:
        line = self.where.get((section, name)) or self.where.get((section, ""))
        return ConfigError(message, file=self.file, line=line, field=field)


def checked_config(reader: RunsFileReader, profile: str, base: Path | None,
                   merged: dict[str, tuple[str, str, str]], overrides: list[str],
                   trace: Path) -> Any:
    """A profile's whole configuration, validated (policy lists included)."""
    try:
        config = load_config(base, reader.schema, overrides + [f"tracefile.tracefile={trace}"])
        # lists of policy names are checked when a run starts; check them now
        for kind, (section, name) in POLICY_LISTS.items():
            for policy in config.get(section, name):
                try:
                    reader.plugins.policy(kind, policy)
                except ConfigError as exc:
                    raise config.error(section, name, exc.detail) from None
    except ConfigError as exc:
        raise _located(exc, profile, merged, reader.err, reader.file) from None
    return config


def _located(exc: ConfigError, profile: str, merged: dict[str, tuple[str, str, str]],
             err: Callable[..., ConfigError], file: str) -> ConfigError:
    """An error about a profile's whole configuration, at the sweep file's line of the option
    it names (``merged``: ``section.option`` -> (text, value, sweep file section))."""
    m = re.fullmatch(r"\[(.+)\] (.+)", exc.field or "")
    key = f"{m.group(1)}.{m.group(2)}" if m else None
    if key in merged:
        section, name = merged[key][2], key.partition(".")[2]
        return err(f"profile {profile!r}: {exc.detail}", section, name,
                   field=f"[{section}] {name}")
    if exc.file == "--set" or exc.file is None:
        return ConfigError(f"profile {profile!r}: {exc.detail}", file=file, field=exc.field)
    return exc
