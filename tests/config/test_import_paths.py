"""The modules split for size (issue 42) keep their import paths: every name a caller imported
from ``config.schema``, ``workload.swf`` and ``cli`` before the split still imports from there,
and is the object its new module defines."""

from __future__ import annotations

import importlib

import pytest

#: (old module, names it defined before the split, the module that defines them now)
MOVED = [
    ("lease_manager.config.schema", "lease_manager.config.option_types",
     ["AMOUNTS", "BOOLEAN", "COP", "DURATION", "FLOAT", "INTEGER", "INTEGERS", "NAMES",
      "NUMBER_OR_FILE", "PATH", "POWER_CAP", "REQUIRED", "SITE", "STRING", "MAX_PATH_BYTES",
      "MAX_NAME_BYTES", "OptionType", "parse_draw", "path_problem"]),
    ("lease_manager.config.schema", "lease_manager.config.options",
     ["Option", "Schema", "_suggest"]),
    ("lease_manager.config.schema", "lease_manager.config.values",
     ["Config", "SITE_OPTIONS", "SITE_PREFIX", "SITE_SECTIONS", "site_option"]),
    ("lease_manager.config.schema", "lease_manager.config.ini_files",
     ["read_ini", "read_sites_file"]),
    ("lease_manager.config.schema", "lease_manager.config.loading", ["load_config"]),
    ("lease_manager.workload.swf", "lease_manager.workload.swf_conversion",
     ["AFTER_WINDOW", "BEYOND_MAX_JOBS", "STOPPING_FILTERS", "SWFConversion", "TraceStats",
      "swf_leases"]),
    ("lease_manager.cli", "lease_manager.cli_commands", ["trace_line"]),
]


@pytest.mark.parametrize(("old", "new", "names"), MOVED, ids=[f"{o}<-{n}" for o, n, _ in MOVED])
def test_names_still_import_from_the_old_module(old: str, new: str, names: list[str]) -> None:
    before, now = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        assert getattr(before, name) is getattr(now, name), name


def test_the_reader_and_the_parser_stay_where_they_were() -> None:
    from lease_manager.cli import build_parser, hours_window, load_numpy, main  # noqa: F401
    from lease_manager.workload.swf import (  # noqa: F401
        FIELDS,
        MAX_LINE,
        JobBlock,
        SWFJob,
        SWFReader,
        count_jobs,
        open_text,
        read_swf_leases,
    )

    assert build_parser("simulate").prog == "lease-manager"
