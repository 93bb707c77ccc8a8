"""A third-party plugin written against the public API keeps working: ``tests/thirdparty_plugin``
(the package ``lm-shortest``: a queue policy, an option and four hooks, importing only what
``lease_manager`` exports) is installed with pip into a folder of its own and replays a trace
through its entry point.

It is installed by the test itself, not into the environment the other tests share: there its
policy, option and summary keys would be in every run (``lease-manager plugins``, the
configuration reference, every ``summary.json``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT, env_with, pip_install_target

PACKAGE = ROOT / "tests" / "thirdparty_plugin"

#: one node; lease 1 runs [0, 100); lease 2 (500 s) arrives at 1 s, lease 3 (50 s) at 2 s. Without
#: backfilling no lease holds a future reservation: the queue's order alone decides who is next
TRACE = ("1 0 0 100 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n"
         "2 1 0 500 1 -1 -1 1 500 -1 1 1 1 -1 1 -1 -1 -1\n"
         "3 2 0 50 1 -1 -1 1 50 -1 1 1 1 -1 1 -1 -1 -1\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process that has lm-shortest installed (from a copy: building in
    the source folder would leave build/ and *.egg-info in the repository)."""
    tmp = tmp_path_factory.mktemp("thirdparty")
    source = tmp / "lm-shortest"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    return env_with(pip_install_target([source], tmp / "site"))


def simulate(env: dict[str, str], tmp_path: Path, name: str, *settings: str) -> dict:
    trace = tmp_path / "three.swf"
    trace.write_text(TRACE)
    out = tmp_path / name
    done = subprocess.run(
        [sys.executable, "-m", "lease_manager.cli", "simulate", str(ROOT / "etc" / "sample.ini"),
         "--quiet", "--out", str(out), "--set", f"tracefile.tracefile={trace}",
         "--set", "simulation.resources=1 CPU:1 Memory:1024",
         "--set", "scheduling.backfilling=off", *settings],
        env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    starts = {}
    for line in (out / "leases.csv").read_text().splitlines()[1:]:
        fields = line.split(",")
        starts[int(fields[0])] = float(fields[5])
    return {"summary": json.loads((out / "summary.json").read_text()), "starts": starts}


def test_its_policy_and_hooks_run_through_the_entry_point(installed, tmp_path):
    """Gantt chart of the one node (Q: the wait queue when lease 1 ends at 100 s)::

        FIFO (the default)            shortest-first
        0      100         600 650    0      100 150         650
        |--1---|-----2------|3-|      |--1---|3-|-----2------|
        Q at 100: [2, 3]              Q at 100: [3 (50 s), 2 (500 s)]
    """
    fifo = simulate(installed, tmp_path, "fifo")
    assert fifo["starts"] == {1: 0.0, 2: 100.0, 3: 600.0}
    assert fifo["summary"]["shortest_queue_order"] == "1 2 3"   # (its hooks run in every run)
    shortest = simulate(installed, tmp_path, "shortest",
                        "--set", "scheduling.policy-queue=shortest-first")
    assert shortest["starts"] == {1: 0.0, 3: 100.0, 2: 150.0}
    assert shortest["summary"]["shortest_leases_ended"] == 3
    assert shortest["summary"]["shortest_queue_order"] == "1 3 2"
    longest = simulate(installed, tmp_path, "longest", "--set",
                       "scheduling.policy-queue=shortest-first", "--set",
                       "shortest.longest-first=yes")
    assert longest["starts"] == {1: 0.0, 2: 100.0, 3: 600.0}


def test_it_is_listed_as_a_package_of_its_own(installed):
    done = subprocess.run([sys.executable, "-m", "lease_manager.cli", "plugins"], env=installed,
                          capture_output=True, text=True, check=True)
    line = next(line for line in done.stdout.splitlines() if "lm-shortest" in line)
    assert "0.1.0" in line
