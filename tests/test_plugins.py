"""Plugins: built-ins are plugins too; a third-party plugin installed from a folder is found
through its entry point, adds an option, and changes host selection."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lease_manager import Run, hookimpl
from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError, LeaseManagerError
from lease_manager.plugins import ACCOUNTING_PLUGIN, DAEMON_PLUGIN, INVARIANTS_PLUGIN, Plugins

from support import HOUR, ROOT, be, env_with, pip_install_target, simulate

PLUGIN_SRC = ROOT / "tests" / "plugins" / "reverse_hosts"


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory) -> Path:
    """``pip install`` the plugin into a folder of its own (offline, no build isolation)."""
    work = tmp_path_factory.mktemp("plugin")
    src = work / "src"
    shutil.copytree(PLUGIN_SRC, src)
    return pip_install_target([src], work / "site")


_env = env_with


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
                        "--force", "--out", str(out), *settings], env=_env(installed_plugin),
                       check=True)
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


class _Recorder:
    """Records the run-lifecycle hooks and lease ends it sees."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @hookimpl
    def run_started(self, ctx):
        self.calls.append("run_started")

    @hookimpl
    def lease_ended(self, ctx, lease, now):
        self.calls.append(f"ended {lease.id}")

    @hookimpl
    def run_finished(self, ctx):
        self.calls.append("run_finished")

    @hookimpl
    def collect_summary(self, ctx):
        self.calls.append("collect_summary")
        return {"recorder_calls": len(self.calls)}


def test_one_plugins_object_serves_two_replays_one_after_the_other():
    """The second replay of the same two leases with the same Plugins gives the same schedule;
    each run's policies and observers are unregistered when it ends (no name clash), and a
    plugin registered once sees both runs."""
    recorder = _Recorder()
    plugins = Plugins(entry_points=False, extra=[recorder])
    runs = []
    for _ in range(2):
        leases = [be(1, 2, HOUR, 0), be(2, 4, HOUR, 60)]
        runs.append(simulate(leases, plugins=plugins))
        assert [(l.start, l.end) for l in leases] == [(0, HOUR), (HOUR, 2 * HOUR)]
    assert recorder.calls == ["run_started", "ended 1", "ended 2", "run_finished",
                              "collect_summary"] * 2
    assert runs[1].summary["recorder_calls"] == 10
    names = {name for name, _ in plugins.pm.list_name_plugin()}
    assert not any(n.startswith("run:") or n in (ACCOUNTING_PLUGIN, INVARIANTS_PLUGIN)
                   for n in names)


def test_a_second_open_run_on_the_same_plugins_is_refused():
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024"])
    first = Run(config, plugins, leases=[])
    with pytest.raises(LeaseManagerError, match="another run that is not closed"):
        Run(config, plugins, leases=[])
    first.close()
    Run(config, plugins, leases=[]).close()


def test_a_hook_registered_after_the_run_is_built_is_called():
    """Registered between building the run and running it, a plugin still sees every lease
    end (the run does not freeze its list of implementations)."""
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024"])
    run = Run(config, plugins, leases=[be(1, 2, HOUR, 0), be(2, 1, HOUR, 0)])
    late = _Recorder()
    plugins.pm.register(late)
    run.run()
    assert late.calls == ["run_started", "ended 1", "ended 2", "run_finished",
                          "collect_summary"]


def test_hooks_get_a_context_that_reads_but_cannot_change_the_schedule():
    """4 nodes, EASY: at 0:00 #1 (2 nodes) runs and #2 (4 nodes) holds the one future
    reservation (1:00). The context reads that, and refuses to change the table."""
    seen = {}

    class Looker:
        @hookimpl
        def scheduling_cycle_end(self, ctx, now):
            if now == 0:
                seen["free"] = ctx.table.free_at(0)[:, 0].tolist()
                sched = ctx.scheduler
                seen["counts"] = (sched.n_running, sched.n_waiting, sched.n_planned)
                seen["running"] = [l.id for l in sched.running()]
                seen["planned"] = [l.id for l in sched.planned()]
                seen["is_run"] = isinstance(ctx, Run)
                with pytest.raises(AttributeError, match="can be read, not changed"):
                    _ = ctx.table.add
                seen["has_engine"] = hasattr(ctx, "engine")

    simulate([be(1, 2, HOUR, 0), be(2, 4, HOUR, 0)],
             plugins=Plugins(entry_points=False, extra=[Looker()]))
    assert seen == {"free": [0.0, 0.0, 1.0, 1.0], "counts": (1, 0, 1), "running": [1],
                    "planned": [2], "is_run": False, "has_engine": False}


def test_plugins_lists_the_core_observers():
    """``lease-manager plugins`` shows accounting and the invariant checker (per run) and the
    daemon's observer, with the hooks they implement."""
    out = subprocess.run([sys.executable, "-m", "lease_manager.cli", "plugins"],
                         capture_output=True, text=True, check=True).stdout
    for name, hook in ((ACCOUNTING_PLUGIN, "lease_ended"), (INVARIANTS_PLUGIN, "lease_started"),
                       (DAEMON_PLUGIN, "lease_state_changed")):
        block = out.split(name + "  [", 1)[1].split("\n\n")[0]
        assert "per run:" in block and hook in block, block


def test_the_daemon_fires_the_run_hooks(tmp_path):
    """A daemon fires run_started when it starts serving and run_finished and collect_summary
    when it stops, and writes the summary into its state folder."""
    from daemon_support import ThreadDaemon, write_config

    recorder = _Recorder()
    config = write_config(tmp_path)
    with ThreadDaemon(config, plugins=Plugins(extra=[recorder])) as d:
        assert recorder.calls == ["run_started"]
        state = d.daemon.state_dir
    assert recorder.calls == ["run_started", "run_finished", "collect_summary"]
    import json
    assert json.loads((state / "summary.json").read_text())["recorder_calls"] == 3


def test_distributions_are_those_describe_lists_without_loading_per_run_plugins():
    """run.json's ``plugins`` (:meth:`Plugins.distributions`) is what ``describe`` lists, in
    the same order, and reading it imports none of the per-run plugins' modules (the
    daemon's observer pulls in the daemon)."""
    program = (
        "import sys\n"
        "from lease_manager.plugins import Plugins, RUN_PLUGINS\n"
        "plugins = Plugins()\n"
        "found = plugins.distributions()\n"
        "loaded = [t.partition(':')[0] for t, _ in RUN_PLUGINS.values()\n"
        "          if t.partition(':')[0] in sys.modules]\n"
        "listed = {i.distribution: i.version for i in plugins.describe()}\n"
        "print(list(found.items()) == list(listed.items()), 'lm-dvfs' in found, loaded)\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[:2] == ["True", "True"], out
    assert "lease_manager.daemon.service" not in " ".join(out[2:]), out


def test_lease_hooks_reach_implementations_whatever_arguments_they_take():
    """The hooks about one lease are called positionally on the scheduler's hot path; an
    implementation still gets the arguments it names, in its own order, a wrapper still
    wraps, and a plugin registered during the run sees the rest of it.

    4 nodes: #1 (2 nodes) runs 0:00-1:00, #2 (4 nodes, submitted at 0:01) 1:00-2:00::

        node 0-1 |####1####|####2####|
        node 2-3 |         |####2####|
                 0        1:00      2:00
    """
    calls: list[tuple] = []

    class Late:
        @hookimpl
        def lease_ended(self, now, lease):
            calls.append(("late ended", lease.id, now))

    class Reordered:
        @hookimpl
        def lease_submitted(self, lease, ctx, now):
            calls.append(("submitted", lease.id, now, ctx.scheduler is not None))

        @hookimpl
        def lease_started(self, now, lease):
            calls.append(("started", lease.id, now))

        @hookimpl
        def lease_ended(self, lease):
            calls.append(("ended", lease.id))
            if lease.id == 1:
                plugins.pm.register(Late())

    class Wrapper:
        @hookimpl(wrapper=True)
        def lease_started(self, lease):
            calls.append(("before start", lease.id))
            yield
            calls.append(("after start", lease.id))

    plugins = Plugins(entry_points=False, extra=[Reordered(), Wrapper()])
    simulate([be(1, 2, HOUR, 0), be(2, 4, HOUR, 60)], plugins=plugins)
    assert calls == [("submitted", 1, 0, True), ("before start", 1), ("started", 1, 0),
                     ("after start", 1), ("submitted", 2, 60, True),
                     ("ended", 1), ("before start", 2), ("started", 2, HOUR), ("after start", 2),
                     ("late ended", 2, 2 * HOUR), ("ended", 2)]
