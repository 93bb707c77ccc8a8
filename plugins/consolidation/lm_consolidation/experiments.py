"""Helpers the thesis experiment runners share (``lm-thesis-ch6`` here, ``lm-thesis-ch7`` in
the autonomic plugin): finding the configurations and the plugins a run needs."""

from __future__ import annotations

import re
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
