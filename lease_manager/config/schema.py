"""Configuration: a declarative schema of ini options, validated on load.

Every option is declared once as an :class:`Option` (section, name, type, default, allowed
values, doc). The schema validates files and ``--set section.option=value`` overrides, reports
unknown sections and options with a suggestion, and generates the reference
(``lease-manager config-doc``).

This module is the configuration's public face; its parts live beside it:
:mod:`~lease_manager.config.option_types` (how text becomes values),
:mod:`~lease_manager.config.options` (:class:`Option`, :class:`Schema`),
:mod:`~lease_manager.config.values` (:class:`Config`, sites),
:mod:`~lease_manager.config.ini_files` (the files read) and
:mod:`~lease_manager.config.loading` (:func:`load_config`).
"""

from __future__ import annotations

from lease_manager.config.ini_files import read_ini, read_sites_file
from lease_manager.config.loading import load_config
from lease_manager.config.option_types import (
    AMOUNTS,
    BOOLEAN,
    COP,
    DURATION,
    FLOAT,
    INTEGER,
    INTEGERS,
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    NAMES,
    NUMBER_OR_FILE,
    PATH,
    POWER_CAP,
    REQUIRED,
    SITE,
    STRING,
    OptionType,
    parse_draw,
    path_problem,
)
from lease_manager.config.options import Option, Schema, _suggest
from lease_manager.config.values import (
    SITE_OPTIONS,
    SITE_PREFIX,
    SITE_SECTIONS,
    Config,
    site_option,
)

__all__ = [
    "AMOUNTS", "BOOLEAN", "COP", "DURATION", "FLOAT", "INTEGER", "INTEGERS", "MAX_NAME_BYTES",
    "MAX_PATH_BYTES", "NAMES", "NUMBER_OR_FILE", "PATH", "POWER_CAP", "REQUIRED", "SITE",
    "SITE_OPTIONS", "SITE_PREFIX", "SITE_SECTIONS", "STRING", "Config", "Option", "OptionType",
    "Schema", "_suggest", "load_config", "parse_draw", "path_problem", "read_ini",
    "read_sites_file", "site_option",
]
