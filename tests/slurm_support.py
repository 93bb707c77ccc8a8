"""Helpers for the tests that use a real Slurm (``.ci/slurm-setup.sh`` starts one)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

SETUP_HINT = ".ci/slurm-setup.sh starts a single-host Slurm (as root)"
COMMANDS = ("sinfo", "scontrol", "sbatch", "squeue", "scancel", "srun")


def sh(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=20, check=check,
                          env={**os.environ, "TZ": "UTC"})


def find_slurm_node() -> tuple[str, int]:
    """(name, CPUs) of a usable Slurm node, or skip the calling test saying why there is none."""
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        pytest.skip(f"Slurm is not installed: {', '.join(missing)} not found — {SETUP_HINT}")
    try:
        ping = sh("scontrol", "ping")
    except subprocess.TimeoutExpired:
        pytest.skip(f"Slurm is not running: `scontrol ping` timed out — {SETUP_HINT}")
    if "is UP" not in ping.stdout:
        why = [line for line in (ping.stdout + ping.stderr).splitlines()
               if line.strip() and not line.startswith("*")]
        fatal = [line for line in why if "fatal" in line]
        pytest.skip(f"Slurm is not running: slurmctld unreachable "
                    f"({(fatal or why or ['no answer'])[-1].strip()}) — {SETUP_HINT}")
    nodes = sh("sinfo", "-h", "-N", "-o", "%N %t %c").stdout.split("\n")
    for line in nodes:
        parts = line.split()
        if len(parts) == 3 and parts[1].rstrip("*~#!%$@^-") in ("idle", "mix"):
            return parts[0], int(parts[2])
    pytest.skip(f"Slurm runs but has no idle node (sinfo: {' | '.join(nodes).strip()}) — "
                f"{SETUP_HINT}")
