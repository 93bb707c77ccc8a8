"""Reading a configuration: the file (or a Haizea file), the ``--set`` overrides and the sites
file, then every value converted, checked and completed with the defaults
(:func:`load_config`). Every error of the file is reported together."""

from __future__ import annotations

import configparser
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lease_manager.config.ini_files import read_ini, read_sites_file
from lease_manager.config.option_types import path_problem
from lease_manager.config.options import Schema, _suggest
from lease_manager.config.values import (
    SITE_OPTIONS,
    SITE_PREFIX,
    SITE_SECTIONS,
    Config,
    site_option,
)
from lease_manager.errors import ConfigError, all_errors
from lease_manager.kernel.resources import MAX_NODES, site_node_count


class _Settings:
    """The settings read so far, as text: ``(section, option) -> (text, source)`` with source
    ``FILE:LINE`` or ``--set``."""

    def __init__(self, base: Path) -> None:
        #: where relative file names of the configuration file are resolved from
        self.base = base
        self.raw: dict[tuple[str, str], tuple[str, str]] = {}
        #: the ``[site:NAME]`` sections, in order, and their line (None: not in the file)
        self.site_sections: dict[str, int | None] = {}
        #: every error of the file, reported together
        self.errors: list[ConfigError] = []
        #: where a value's relative file names are resolved from, when not from ``base``
        self.bases: dict[tuple[str, str], Path] = {}
        #: whether the file is a Haizea configuration file
        self.haizea = False


def load_config(path: str | Path | None, schema: Schema,
                overrides: Iterable[str] = ()) -> Config:
    """Read, validate and complete a configuration file; apply ``section.option=value``
    overrides."""
    cfg_path = Path(path) if path is not None else None
    settings = _Settings(base=cfg_path.resolve().parent if cfg_path else Path.cwd())
    if path is not None:
        _read_file(path, schema, settings)
    override_sites = _read_overrides(overrides, schema, settings)
    _read_sites_file(schema, settings)
    for section in override_sites:
        settings.site_sections.setdefault(section, None)
    values, sources, sites = _convert(schema, settings)
    if settings.errors:
        raise all_errors(settings.errors)
    _complete(schema, values, sites, path, settings.site_sections)
    _refuse_too_many_nodes(sites, sources)
    config = Config(schema, values, sources, cfg_path, sites)
    config.haizea = settings.haizea
    return config


def _read_file(path: str | Path, schema: Schema, settings: _Settings) -> None:
    """The settings of the configuration file (a Haizea file's translated); messages and
    sources name it as ``path`` spells it."""
    raw, site_sections, errors = settings.raw, settings.site_sections, settings.errors
    cfg_path = Path(path)
    parser, where = read_ini(cfg_path, "configuration file")
    if "general" not in schema.sections and parser.has_section("general"):
        settings.raw = raw = _haizea_settings(cfg_path, parser, where, schema)   # Haizea's
        settings.haizea = True
        parser = configparser.ConfigParser()
    for section in parser.sections():
        sec_line = where.get((section, ""))
        if section.startswith(SITE_PREFIX):
            if not section[len(SITE_PREFIX):].strip():
                errors.append(ConfigError("a site section needs a name: [site:NAME]",
                                          file=str(path), line=sec_line))
                continue
            site_sections.setdefault(section, sec_line)
        elif section == "multi" or section.startswith("common:"):
            raise ConfigError("a Haizea multi-configuration file ([multi]) or a sweep "
                              "file is run with `lease-manager sweep`", file=str(path),
                              line=sec_line, field=f"[{section}]")
        elif section not in schema.sections:
            hint = _suggest(section, schema.sections)
            errors.append(ConfigError(f"unknown section [{section}]{hint}", file=str(path),
                                      line=sec_line))
            continue
        for name, value in parser.items(section):
            line = where.get((section, name), sec_line)
            raw[(section, name)] = (value, f"{path}:{line}")


def _read_overrides(overrides: Iterable[str], schema: Schema, settings: _Settings
                    ) -> list[str]:
    """The ``--set section.option=value`` settings (a Haizea file's may use Haizea's names);
    returns the site sections they name."""
    raw = settings.raw
    override_sites: list[str] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        section, dot, name = key.strip().rpartition(".")
        if not sep or not dot or not section or not name:
            raise ConfigError(f"{item!r} is not section.option=value", file="--set")
        name = name.strip().lower()
        if settings.haizea and schema.option(section, name) is None:
            from lease_manager.config.haizea import translate_override

            translated = translate_override(section, name, value)    # Haizea's own name
            if translated is not None:
                for our_section, our_name, text in translated:
                    raw[(our_section, our_name)] = (text, "--set")
                continue
        if section.startswith(SITE_PREFIX):
            override_sites.append(section)
        elif section not in schema.sections:
            raise ConfigError(f"unknown section [{section}]{_suggest(section, schema.sections)}",
                              file="--set")
        raw[(section, name)] = (value, "--set")
    return override_sites


def _read_sites_file(schema: Schema, settings: _Settings) -> None:
    """The settings of the sites file, if one is named (the ini file and ``--set`` win over
    it)."""
    raw = settings.raw
    if not raw.get(("simulation", "sites-file"), ("", ""))[0].strip():   # "": no sites file
        return
    text, source = raw[("simulation", "sites-file")]
    csv_path = (Path.cwd() if source == "--set" else settings.base) / text.strip()
    problem = path_problem(str(csv_path))
    if problem:
        file, _, line_text = source.rpartition(":")
        raise ConfigError(problem, field="[simulation] sites-file",
                          **(dict(file=file, line=int(line_text)) if line_text.isdigit()
                             else dict(file=source)))
    for (section, name), entry in read_sites_file(csv_path, schema).items():
        settings.site_sections.setdefault(section, None)
        if (section, name) not in raw:   # the ini file and --set win over the table
            raw[(section, name)] = entry
            settings.bases[(section, name)] = csv_path.resolve().parent


def _convert(schema: Schema, settings: _Settings
             ) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], str],
                        dict[str, dict[str, Any]]]:
    """Every setting converted and checked by its option (errors added to the settings'):
    the values of the sections, where each was set, and the sites' values."""
    values: dict[tuple[str, str], Any] = {}
    sources: dict[tuple[str, str], str] = {}
    sites: dict[str, dict[str, Any]] = {s[len(SITE_PREFIX):].strip(): {}
                                        for s in settings.site_sections}
    errors = settings.errors
    for (section, name), (text, source) in settings.raw.items():
        is_site = section.startswith(SITE_PREFIX)
        opt = site_option(schema, name) if is_site else schema.option(section, name)
        file, _, line_text = source.rpartition(":")
        loc: dict[str, Any] = (dict(file=file, line=int(line_text)) if line_text.isdigit()
                               else dict(file=source))
        if opt is None:
            errors.append(_unknown_option(schema, section, name, is_site, loc))
            continue
        try:
            value = opt.convert(text)
        except ValueError as exc:
            errors.append(ConfigError(str(exc), field=f"[{section}] {name}", **loc))
            continue
        if opt.type.is_path(value):
            origin = settings.bases.get((section, name),
                                        settings.base if source != "--set" else Path.cwd())
            value = str(origin / value)
            problem = path_problem(value)
            if problem:
                errors.append(ConfigError(problem, field=f"[{section}] {name}", **loc))
                continue
        if is_site:
            sites[section[len(SITE_PREFIX):].strip()][name] = value
        else:
            values[(section, name)] = value
        sources[(section, name)] = source
    return values, sources, sites


def _unknown_option(schema: Schema, section: str, name: str, is_site: bool,
                    loc: dict[str, Any]) -> ConfigError:
    """The error for an option no section (or no site) has, with a suggestion."""
    if is_site:
        names = list(SITE_OPTIONS) + [o.name for s in SITE_SECTIONS
                                      for o in schema.options_in(s)]
        return ConfigError(f"not an option a site may set{_suggest(name, names)} (a "
                           f"site sets: resources, backfilling, "
                           f"backfilling-reservations and the [power] options)",
                           field=f"[{section}] {name}", **loc)
    names = [o.name for o in schema.options_in(section)]
    return ConfigError(f"unknown option{_suggest(name, names)}",
                       field=f"[{section}] {name}", **loc)


def _complete(schema: Schema, values: dict[tuple[str, str], Any],
              sites: dict[str, dict[str, Any]], path: str | Path | None,
              site_sections: dict[str, int | None]) -> None:
    """Fill in the defaults (a required option set only by the sites: the first site's);
    refuse a missing required option and a site without nodes."""
    for opt in schema:
        option_key = (opt.section, opt.name)
        if option_key in values:
            continue
        first_site = next(iter(sites.values()), {})
        if opt.required and option_key[1] in first_site and \
                site_option(schema, option_key[1]) is opt:
            values[option_key] = first_site[option_key[1]]   # several sites: the first one's
            continue
        if opt.required:
            raise ConfigError(f"required option is missing (add it to [{opt.section}])",
                              file=str(path) if path else "--set",
                              field=f"[{opt.section}] {opt.name}")
        values[option_key] = opt.default
    for site, options in sites.items():
        if "resources" not in options:
            raise ConfigError("every site needs its nodes (add resources = ...)",
                              file=str(path) if path else "--set",
                              line=site_sections.get(SITE_PREFIX + site),
                              field=f"[{SITE_PREFIX}{site}] resources")


def _refuse_too_many_nodes(sites: dict[str, dict[str, Any]], sources: dict[tuple[str, str], str]
                           ) -> None:
    """Refuse sites whose nodes add up to more than a site may have: a 1.5 KB sites file of
    50 sites of a million nodes each ran out of memory (3 GB, then numpy's traceback)."""
    total = 0
    for site, options in sites.items():
        total += site_node_count(str(options.get("resources", "")))
        if total > MAX_NODES:
            source = sources.get((SITE_PREFIX + site, "resources"), "")
            file, _, line = source.rpartition(":")
            where: dict[str, Any] = (dict(file=file, line=int(line)) if line.isdigit()
                                     else dict(file=source or None))
            raise ConfigError(f"the sites have more than {MAX_NODES:,} nodes in all (up to "
                              f"this one: {total:,})", field=f"[{SITE_PREFIX}{site}] resources",
                              **where)


def _haizea_settings(path: Path, parser: configparser.ConfigParser,
                     where: dict[tuple[str, str], int], schema: Schema
                     ) -> dict[tuple[str, str], tuple[str, str]]:
    """A Haizea configuration file's settings in lease_manager's options; every error of the
    file at once (:class:`~lease_manager.config.haizea.ConfigErrors`)."""
    from lease_manager.config.haizea import translate

    raw, errors = translate(path, parser, where, schema.sections)
    for (section, name), (text, source) in raw.items():
        opt = schema.option(section, name)
        file, _, line = source.rpartition(":")
        if opt is None:
            errors.append(ConfigError("unknown option", file=file, line=int(line),
                                      field=f"[{section}] {name}"))
            continue
        try:
            opt.convert(text)
        except ValueError as exc:
            errors.append(ConfigError(str(exc), file=file, line=int(line),
                                      field=f"[{section}] {name}"))
    if errors:
        raise all_errors(errors)
    return raw
