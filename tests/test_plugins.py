"""Plugins: built-ins are plugins too; a third-party plugin installed from a folder is found
through its entry point, adds an option, and changes host selection."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import HOUR, ROOT, be, simulate
from lease_manager.errors import ConfigError
from lease_manager.plugins import Plugins

PLUGIN_SRC = ROOT / "tests" / "plugins" / "reverse_hosts"


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory) -> Path:
    """``pip install`` the plugin into a folder of its own (offline, no build isolation)."""
    work = tmp_path_factory.mktemp("plugin")
    src = work / "src"
    shutil.copytree(PLUGIN_SRC, src)
    target = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(target), str(src)],
                   check=True, capture_output=True)
    return target


def _env(target: Path) -> dict:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(target) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_plugins_command_lists_the_installed_plugin(installed_plugin):
    out = subprocess.run([sys.executable, "-m", "lease_manager.cli", "plugins"],
                         env=_env(installed_plugin), capture_output=True, text=True, check=True)
    assert "reverse-hosts  [lm-reverse-hosts 0.3.1]" in out.stdout
    assert "host-selection: reverse" in out.stdout
    assert "lease_started, register_options, register_policies" in out.stdout
    assert "host-selection: greedy" in out.stdout   # the built-ins are plugins too


def test_installed_plugin_changes_host_selection(installed_plugin, tmp_path):
    """Three 1-CPU nodes, one 1-VM lease: greedy (ties by node index) puts it on node 0, the
    plugin's policy on node 2, or node 1 when told to skip one node."""
    trace = tmp_path / "one.swf"
    trace.write_text("1 0 0 100 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n")
    ini = tmp_path / "run.ini"
    ini.write_text(f"[simulation]\nresources = 3 CPU:1\n[tracefile]\ntracefile = {trace}\n")

    def node(*settings: str) -> str:
        out = tmp_path / "out"
        subprocess.run([sys.executable, "-m", "lease_manager.cli", "simulate", str(ini), "-q",
                        "--out", str(out), *settings], env=_env(installed_plugin), check=True)
        with (out / "leases.csv").open() as fh:
            return next(csv.DictReader(fh))["nodes"]

    assert node() == "0"
    assert node("--set", "scheduling.policy-host-selection=reverse") == "2"
    assert node("--set", "scheduling.policy-host-selection=reverse",
                "--set", "reverse-hosts.skip=1") == "1"
    assert (tmp_path / "out" / "series" / "reverse_hosts_starts.csv").exists()


def test_unknown_policy_name_suggests_the_installed_ones():
    plugins = Plugins(entry_points=False)
    with pytest.raises(ConfigError, match="did you mean 'greedy'"):
        simulate([be(1, 1, HOUR, 0)], "scheduling.policy-host-selection=gredy", plugins=plugins)


def test_no_policy_visits_hosts_in_node_order():
    leases = [be(1, 1, HOUR, 0), be(2, 1, HOUR, 0)]
    simulate(leases, "scheduling.policy-host-selection=no-policy")
    assert [l.allocations[0].nodes.tolist() for l in leases] == [[0], [1]]
