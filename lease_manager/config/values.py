"""A run's configuration once read: :class:`Config`, its validated values and where each was
set, and the ``[site:NAME]`` sections of a run with several sites."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lease_manager.config.options import Option, Schema
from lease_manager.errors import ConfigError

#: ``[site:NAME]`` sections describe the sites of a run with several: each may set these
#: options of other sections (by option name), which then hold for that site only
SITE_PREFIX = "site:"
SITE_SECTIONS = ("power",)
SITE_OPTIONS = {"resources": "simulation", "backfilling": "scheduling",
                "backfilling-reservations": "scheduling"}


def site_option(schema: Schema, name: str) -> Option | None:
    """The option ``name`` stands for in a ``[site:NAME]`` section (None: not a site option)."""
    section = SITE_OPTIONS.get(name)
    if section is not None:
        return schema.option(section, name)
    for section in SITE_SECTIONS:
        opt = schema.option(section, name)
        if opt is not None:
            return opt
    return None


class Config:
    """Validated option values, read as ``config.get("scheduling", "backfilling")``."""

    def __init__(self, schema: Schema, values: Mapping[tuple[str, str], Any],
                 sources: Mapping[tuple[str, str], str], path: Path | None,
                 sites: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.schema = schema
        self._values = dict(values)
        self._sources = dict(sources)
        self.path = path
        #: the ``[site:NAME]`` sections, in order: their options by name
        self._sites = {name: dict(options) for name, options in (sites or {}).items()}
        #: the site this configuration is for (:meth:`for_site`; None: the run's own)
        self.site_name: str | None = None
        #: whether it was read from a Haizea configuration file (a ``[general]`` section)
        self.haizea = False

    @property
    def sites(self) -> list[str]:
        """The names of the run's sites (empty: one site, described by the usual sections)."""
        return list(self._sites)

    def for_site(self, name: str) -> Config:
        """The configuration as site ``name`` sees it: its ``[site:NAME]`` options in place of
        the sections' (the rest shared)."""
        values = dict(self._values)
        sources = dict(self._sources)
        for option, value in self._sites[name].items():
            opt = site_option(self.schema, option)
            assert opt is not None
            values[(opt.section, opt.name)] = value
            sources[(opt.section, opt.name)] = self._sources.get(
                (SITE_PREFIX + name, option), "default")
        site = Config(self.schema, values, sources, self.path)
        site.site_name = name
        site.haizea = self.haizea
        return site

    def get(self, section: str, name: str) -> Any:
        try:
            return self._values[(section, name)]
        except KeyError:
            raise KeyError(f"option [{section}] {name} is not in the schema") from None

    __getitem__ = lambda self, key: self.get(*key)  # noqa: E731

    def source(self, section: str, name: str) -> str:
        """Where a value came from: ``file:line``, ``--set`` or ``default``."""
        return self._sources.get((section, name), "default")

    def error(self, section: str, name: str, message: str) -> ConfigError:
        """A :class:`ConfigError` about an option's value, naming where it was set."""
        field = f"[{section}] {name}"
        src = self.source(section, name)
        if src == "default":   # not set anywhere: name the configuration file, if any
            return ConfigError(message, file=str(self.path) if self.path else None, field=field)
        file, _, line = src.rpartition(":")
        if file and line.isdigit():
            return ConfigError(message, file=file, line=int(line), field=field)
        return ConfigError(message, file=src, field=field)

    def items(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for (section, name), value in self._values.items():
            out.setdefault(section, {})[name] = value
        return out
