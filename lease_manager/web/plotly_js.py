"""The Plotly JavaScript bundled in the ``plotly`` package, read once and kept."""

from __future__ import annotations

import functools
from importlib import metadata, resources


@functools.cache
def plotly_js() -> str:
    """The text of ``plotly.min.js`` as shipped by the installed ``plotly`` package."""
    return resources.files("plotly").joinpath("package_data", "plotly.min.js").read_text(
        encoding="utf-8")


def plotly_version() -> str:
    """The installed ``plotly`` package's version (its JavaScript version follows from it)."""
    return metadata.version("plotly")
