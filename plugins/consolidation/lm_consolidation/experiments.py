"""Helpers the thesis experiment runners share (``lm-thesis-ch6`` here, ``lm-thesis-ch7`` in
the autonomic plugin): finding the configurations and the plugins a run needs."""

from __future__ import annotations

import argparse
import re
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Sequence


def default_configs_dir(pattern: str, package_file: str) -> Path:
    """``./etc`` if it holds configurations matching ``pattern``, else the ``etc/`` of the
    checkout ``package_file`` (a module of a plugin under ``plugins/``) comes from."""
    here = Path.cwd() / "etc"
    if any(here.glob(pattern)):
        return here
    checkout = Path(package_file).resolve().parents[3] / "etc"   # plugins/NAME/PACKAGE/x.py
    return checkout if any(checkout.glob(pattern)) else here


def find_configs(directory: Path, pattern: str, name: re.Pattern[str],
                 only: Sequence[str] = ()) -> list[Path]:
    """The configurations in ``directory`` matching ``pattern`` whose stem matches ``name``,
    kept only if their stem contains one of ``only`` (when given)."""
    paths = sorted(p for p in directory.glob(pattern) if name.match(p.stem))
    if only:
        paths = [p for p in paths if any(o in p.stem for o in only)]
    return paths


def plugins_with(*modules: ModuleType):
    """The installed plugins, plus those of ``modules`` that are imported but not installed
    (a checkout used without ``pip install``)."""
    from lease_manager.plugins import Plugins

    installed = {ep.value.split(":")[0] for ep in metadata.entry_points(group="lease_manager")}
    return Plugins(extra=[m for m in modules if m.__name__ not in installed])


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every runner has: ``--only``, ``--set``, ``--jobs``, ``--no-plot``."""
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="run only configurations whose name contains TEXT (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                        help="override an option in every run (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (default: 2)")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")


def start(prog: str, pattern: str, directory: Path, configs: list[Path], out: str,
          overrides: Sequence[str]) -> Path | None:
    """Say what is about to run and create ``out``; None (after saying why) if nothing
    matched."""
    if not configs:
        print(f"{prog}: no {pattern} in {directory}", file=sys.stderr)
        return None
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    print(f"{len(configs)} configurations from {directory}; outputs in {path}/"
          + (f"; overrides: {' '.join(overrides)}" if overrides else ""), flush=True)
    return path
