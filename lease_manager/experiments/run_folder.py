"""A ``simulate`` run's folder: never overwritten silently, and described by ``run.json``.

Without ``--out`` each run gets a folder of its own (``results/NAME``, then ``NAME-2``,
``NAME-3``...). A folder given with ``--out`` that already holds a run is refused unless
``--force``, which first removes that run's outputs (the files and folders lease_manager
writes; anything else in the folder stays). ``run.json`` records what produced the run: the
versions of lease_manager and its plugins, the configuration file and overrides, every option's
effective value (defaults included; per site, in a run with several), the trace's path and
SHA-256, the seed, and a command that reproduces the run.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lease_manager import __version__
from lease_manager.config.schema import SITE_OPTIONS, SITE_SECTIONS, Config
from lease_manager.errors import LeaseManagerError

#: what a run writes in its folder (``--force`` removes exactly these)
RUN_FILES = ("run.json", "summary.json", "leases.csv", "leases.csv.part", "node_states.csv",
             "nodes.csv", "jobs.csv", "schedule.swf")   # the last two: ``export``'s
RUN_FOLDERS = ("series", "plots")


def holds_run(folder: Path) -> bool:
    """Does ``folder`` hold a run's outputs?"""
    return folder.is_dir() and any((folder / name).exists() for name in RUN_FILES)


def fresh_folder(default: Path) -> Path:
    """``default``, or the first of ``default-2``, ``default-3``... that holds no run."""
    candidate, n = default, 1
    while holds_run(candidate) or (candidate.exists() and not candidate.is_dir()):
        n += 1
        candidate = default.with_name(f"{default.name}-{n}")
    return candidate


def claim(out: Path, force: bool) -> None:
    """Make ``out`` ready for a run: refuse one that holds a run unless ``force``, which
    removes that run's outputs first."""
    if out.exists() and not out.is_dir():
        raise LeaseManagerError(f"cannot write results to {out}: it is a file, not a folder")
    if holds_run(out):
        if not force:
            raise LeaseManagerError(f"{out} holds a run already: --force replaces it, or "
                                    f"choose another --out")
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
        for name in RUN_FOLDERS:
            if (out / name).is_dir():
                shutil.rmtree(out / name)


def sha256(path: str | Path) -> str | None:
    """The file's SHA-256 (None if it cannot be read)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _jsonable(value: Any) -> Any:
    """An option's value as JSON can hold it (infinities and tuples as text)."""
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return str(value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool, list)) or value is None:
        return value
    return str(value)


def effective(config: Config) -> dict[str, dict[str, Any]]:
    """Every option's value, by section (defaults included)."""
    out: dict[str, dict[str, Any]] = {}
    for opt in config.schema:
        out.setdefault(opt.section, {})[opt.name] = _jsonable(config.get(opt.section,
                                                                          opt.name))
    return out


def _site_options(config: Config, name: str) -> dict[str, Any]:
    site = config.for_site(name)
    keys = [(section, option) for option, section in SITE_OPTIONS.items()]
    keys += [(o.section, o.name) for s in SITE_SECTIONS for o in config.schema.options_in(s)]
    return {option: _jsonable(site.get(section, option)) for section, option in keys}


def describe(config: Config, overrides: Sequence[str], plugins: Any, out: Path,
             config_path: str | Path, placement: str | None = None) -> dict[str, Any]:
    """What ``run.json`` holds for a ``simulate`` run (``placement``: the one that ran, and
    why ``auto`` chose it)."""
    trace = config.get("tracefile", "tracefile")
    args = ["lease-manager", "simulate", str(config_path)]
    for item in overrides:
        args += ["--set", item]
    args += ["--out", str(out), "--force"]
    return {
        "lease_manager": __version__,
        "plugins": plugins.distributions(),
        "config": str(Path(config_path).resolve()),
        "overrides": list(overrides),
        "effective": effective(config),
        "sites": {name: _site_options(config, name) for name in config.sites},
        "trace": {"path": str(Path(trace).resolve()) if trace else None,
                  "sha256": sha256(trace) if trace else None},
        "seed": config.get("simulation", "seed"),
        **({"placement": placement} if placement is not None else {}),
        "command": " ".join(shlex.quote(a) for a in args),
    }


def write_run_json(out: Path, description: dict[str, Any]) -> None:
    (out / "run.json").write_text(json.dumps(description, indent=2) + "\n")
