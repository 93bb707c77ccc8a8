"""A misspelt hook is an error: a plugin that implements a hook lease_manager does not have
(``lease_finished`` for ``lease_ended``) is refused when a run starts, with one line that names
the plugin and the hook and suggests the closest hook; pluggy alone would register it and
never call it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from lease_manager import LeaseManagerError, Plugins, QueuePolicy, hookimpl, load_run
from lease_manager.cli import main
from lease_manager.plugins import RUN_PLUGINS

from daemon_support import ThreadDaemon, write_config

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "etc" / "sample.ini"


class Watcher:
    """A plugin whose author meant ``lease_ended``."""

    def __init__(self) -> None:
        self.finished: list[int] = []

    @hookimpl
    def lease_finished(self, ctx, lease, now):
        self.finished.append(lease.id)


def one_job(tmp_path: Path) -> str:
    trace = tmp_path / "one.swf"
    trace.write_text("1 0 0 600 1 -1 -1 1 600 -1 1 1 1 -1 1 -1 -1 -1\n")
    return f"tracefile.tracefile={trace}"


def test_a_plugin_with_a_misspelt_hook_is_refused_at_run_start(tmp_path):
    watcher = Watcher()
    plugins = Plugins(entry_points=False, extra=[watcher])
    name = plugins.pm.get_name(watcher)
    with pytest.raises(LeaseManagerError) as raised:
        load_run(SAMPLE, [one_job(tmp_path)], plugins=plugins)
    assert str(raised.value) == (
        f"plugin {name!r} (test_misspelt_hook.Watcher) implements 'lease_finished', which is "
        f"not a hook of lease_manager: it would never be called (did you mean 'lease_ended'?)")
    assert "\n" not in str(raised.value)
    # the same plugin, its hook spelt right, runs and is called
    Watcher.lease_ended = Watcher.lease_finished
    try:
        del Watcher.lease_finished
        right = Watcher()
        run = load_run(SAMPLE, [one_job(tmp_path)],
                       plugins=Plugins(entry_points=False, extra=[right]))
        run.run()
        run.close()
        assert right.finished == [1]
    finally:
        Watcher.lease_finished = Watcher.lease_ended
        del Watcher.lease_ended


def test_the_command_line_says_so_in_one_line_for_an_installed_plugin(tmp_path, monkeypatch,
                                                                       capsys):
    """A plugin package found through its entry point (a ``.dist-info`` on the path, as pip
    leaves one), with a module-level hook whose name is near no hook."""
    site = tmp_path / "site"
    (site / "lm_typo-0.1.dist-info").mkdir(parents=True)
    (site / "lm_typo-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lm-typo\nVersion: 0.1\n")
    (site / "lm_typo-0.1.dist-info" / "entry_points.txt").write_text(
        "[lease_manager]\ntypo = lm_typo\n")
    (site / "lm_typo.py").write_text(textwrap.dedent("""
        from lease_manager import hookimpl

        @hookimpl
        def when_the_moon_is_full(ctx):
            pass
        """))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "lm_typo", raising=False)
    code = main(["simulate", str(SAMPLE), "--set", one_job(tmp_path), "--quiet",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err == ("lease-manager: error: plugin 'typo' (lm_typo) implements "
                   "'when_the_moon_is_full', which is not a hook of lease_manager: it would "
                   "never be called\n")
    assert not (tmp_path / "out" / "leases.csv").exists()


class TypoQueue(QueuePolicy):
    """A queue policy (registered by the run that uses it) with a misspelt hook."""

    kind = "queue"
    name = "typo-fifo"

    def sort_key(self, lease):
        return lease.submit_time

    @hookimpl
    def lease_submited(self, ctx, lease, now):
        pass


class TypoPlugin:
    @staticmethod
    @hookimpl
    def register_policies():
        return [TypoQueue]


def test_a_policy_the_run_registers_is_checked_too(tmp_path):
    plugins = Plugins(entry_points=False, extra=[TypoPlugin()])
    with pytest.raises(LeaseManagerError, match=(
            r"^plugin 'run:queue:typo-fifo' \(test_misspelt_hook\.TypoQueue\) implements "
            r"'lease_submited', which is not a hook of lease_manager: it would never be called "
            r"\(did you mean 'lease_submitted'\?\)$")):
        load_run(SAMPLE, [one_job(tmp_path), "scheduling.policy-queue=typo-fifo"],
                 plugins=plugins)
    # the run that failed left nothing registered: the plugins serve the next run
    assert not [name for name, _ in plugins.pm.list_name_plugin() if name.startswith("run:")]
    load_run(SAMPLE, [one_job(tmp_path)], plugins=plugins).close()


def test_the_daemon_refuses_it_at_start(tmp_path):
    config = write_config(tmp_path)
    with pytest.raises(LeaseManagerError, match="implements 'lease_finished', which is not a "
                                                "hook of lease_manager"):
        ThreadDaemon(config, plugins=Plugins(entry_points=False, extra=[Watcher()]))


def test_an_optional_hook_of_another_version_is_allowed(tmp_path):
    """``optionalhook=True``: a hook a plugin implements for versions that have it."""
    class Optional:
        @hookimpl(optionalhook=True)
        def lease_migrated(self, ctx, lease, now):
            pass

    load_run(SAMPLE, [one_job(tmp_path)],
             plugins=Plugins(entry_points=False, extra=[Optional()])).close()


def test_every_bundled_plugin_and_policy_implements_only_hooks():
    """The installed plugins (plugins/*), the built-in ones, the per-run ones and every policy
    class: each hook implementation they carry names a hook."""
    plugins = Plugins()
    hooks = {name for name, caller in vars(plugins.pm.hook).items() if caller.has_spec()}
    for info in plugins.describe():
        assert set(info.hooks) <= hooks, (info.name, set(info.hooks) - hooks)
    assert {info.name for info in plugins.describe()} >= set(RUN_PLUGINS)
    for kind, named in plugins.policies.items():
        for name, (cls, _) in named.items():
            marked = {attr for attr in dir(cls)
                      if plugins.pm.parse_hookimpl_opts(cls, attr) is not None}
            assert marked <= hooks, (kind, name, marked - hooks)
    assert {"lm-dvfs", "lm-greenpar", "lm-greenpower", "lm-consolidation",
            "lm-autonomic"} <= {info.distribution for info in plugins.describe()}
