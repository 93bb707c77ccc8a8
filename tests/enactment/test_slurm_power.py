"""The ``slurm`` backend's node power calls, against a stand-in ``scontrol`` (``[slurm]
bin-dir``) that records its arguments: switching a node off or on is Slurm's power saving."""

from __future__ import annotations

import types

import pytest

from lease_manager.config.schema import load_config
from lease_manager.enactment.base import EnactmentError
from lease_manager.enactment.slurm import SlurmBackend
from lease_manager.kernel.resources import parse_site
from lease_manager.plugins import Plugins


def backend(tmp_path, script: str) -> SlurmBackend:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "scontrol"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    ini = tmp_path / "lm.ini"
    ini.write_text(f"[simulation]\nresources = 1 CPU:1 Memory:1024\n[daemon]\n"
                   f"state-dir = {tmp_path / 'state'}\nenactment = slurm\n"
                   f"[slurm]\nnodes = n1\nbin-dir = {bin_dir}\n")
    config = load_config(ini, Plugins(entry_points=False).schema)
    ctx = types.SimpleNamespace(config=config,
                                site=parse_site(config.get("simulation", "resources")))
    return SlurmBackend(ctx)


def test_power_off_and_on_are_power_down_and_power_up(tmp_path):
    log = tmp_path / "calls"
    b = backend(tmp_path, f'echo "$@" >> {log}\n')
    b.power_off("n1")
    b.power_on("n1")
    assert log.read_text().splitlines() == ["update NodeName=n1 State=POWER_DOWN",
                                            "update NodeName=n1 State=POWER_UP"]


def test_slurm_refusing_is_one_line_naming_the_command(tmp_path):
    b = backend(tmp_path, 'echo "slurm_update error: Invalid node state specified" >&2\n'
                          "exit 1\n")
    with pytest.raises(EnactmentError) as info:
        b.power_off("n1")
    assert str(info.value) == ("`scontrol update NodeName=n1 State=POWER_DOWN` failed: "
                               "slurm_update error: Invalid node state specified")
