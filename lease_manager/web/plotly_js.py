"""The Plotly JavaScript bundled in the ``plotly`` package, read once and kept."""

from __future__ import annotations

import functools
from importlib import metadata, util
from pathlib import Path


@functools.cache
def plotly_js() -> str:
    """The text of ``plotly.min.js`` as shipped by the installed ``plotly`` package (found
    without importing the package: only its file is needed)."""
    spec = util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the plotly package is not installed (pip install plotly)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return (folder / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


def plotly_version() -> str:
    """The installed ``plotly`` package's version (its JavaScript version follows from it)."""
    return metadata.version("plotly")
