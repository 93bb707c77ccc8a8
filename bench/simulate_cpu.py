"""What the variant benchmarks share: one ``simulate`` in a fresh process, timed by the replay's
own CPU seconds (``summary.json``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def simulate_cpu_seconds(config: Path, settings: Sequence[str], out: Path) -> float:
    """Replay ``config`` with ``settings`` (``section.option=value``) into ``out`` in a fresh
    process; the replay's CPU seconds."""
    cmd = [sys.executable, "-m", "lease_manager.cli", "simulate", str(config), "--out",
           str(out), "-q"]
    for setting in settings:
        cmd += ["--set", setting]
    subprocess.run(cmd, check=True)
    return float(json.loads((out / "summary.json").read_text())["simulation"]["cpu_seconds"])
