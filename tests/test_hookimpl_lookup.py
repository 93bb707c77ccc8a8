"""Registering a plugin asks pluggy about an attribute only where a hook implementation may be:
the answers, and so the hooks registered, are pluggy's own."""

from __future__ import annotations

import functools
from typing import Any

import pluggy
import pytest

import lease_manager
from lease_manager.plugins import PluginManager, Plugins, _may_be_hookimpl
from lease_manager.run import load_run

from support import ROOT

hookimpl = lease_manager.hookimpl
MARKER = "lease_manager_impl"


def pluggy_answer(plugin: Any, name: str) -> Any:
    return pluggy.PluginManager.parse_hookimpl_opts(PluginManager("lease_manager"), plugin,
                                                    name)


def check_every_attribute(plugin: Any) -> int:
    """Each attribute the pre-check rules out has no hook implementation by pluggy; returns
    how many the pre-check let through to pluggy."""
    asked = 0
    for name in dir(plugin):
        if _may_be_hookimpl(plugin, name, MARKER):
            asked += 1
        else:
            assert pluggy_answer(plugin, name) is None, (plugin, name)
    return asked


class Slotted:
    __slots__ = ("stored", "empty")

    def __init__(self) -> None:
        self.stored = hookimpl(lambda lease, now: None)


class Base:
    @hookimpl
    def lease_ended(self, lease, now):
        pass

    @classmethod
    @hookimpl
    def register_options(cls):
        return []

    @hookimpl
    @staticmethod
    def register_policies():
        return []

    @property
    def broken(self):
        raise AssertionError("a property was run")

    def __getattr__(self, name):
        if name.startswith("__"):   # (what other tools probe)
            raise AttributeError(name)
        raise AssertionError(f"__getattr__({name!r}) was run")


class Child(Base):
    lease_started = None   # shadows nothing: not a function

    def __init__(self) -> None:
        self.own = hookimpl(functools.partial(print))   # not a function: no hook
        self.bound = hookimpl(lambda: None)


def test_synthetic_plugins_get_pluggys_answer_for_every_attribute() -> None:
    for plugin in (Slotted(), Base(), Child(), Child, Base):
        check_every_attribute(plugin)
    assert _may_be_hookimpl(Child(), "lease_ended", MARKER)
    assert _may_be_hookimpl(Child, "register_options", MARKER)
    assert _may_be_hookimpl(Child(), "register_policies", MARKER)
    assert _may_be_hookimpl(Slotted(), "stored", MARKER)
    assert not _may_be_hookimpl(Slotted(), "empty", MARKER)
    assert not _may_be_hookimpl(Child(), "broken", MARKER)
    assert not _may_be_hookimpl(Child(), "__init__", MARKER)


def test_the_installed_plugins_and_a_runs_objects_register_the_same_hooks(tmp_path) -> None:
    """Every plugin of a run (the built-in and installed modules, its policies and observers)
    registers the same hook implementations with the pre-check as with pluggy alone."""
    plugins = Plugins()
    run = load_run(ROOT / "etc" / "sample.ini", plugins=plugins)
    try:
        registered = [p for _, p in plugins.pm.list_name_plugin() if p is not None]
        assert len(registered) > 20
        for plugin in registered:
            assert check_every_attribute(plugin) <= len(dir(plugin))
            plain = pluggy.PluginManager("lease_manager")
            plain.add_hookspecs(lease_manager.hookspecs)
            plain.register(plugin)
            ours = sorted((h.name, impl.function.__qualname__)
                          for h in plugins.pm.get_hookcallers(plugin) or ()
                          for impl in h.get_hookimpls() if impl.plugin is plugin)
            theirs = sorted((h.name, impl.function.__qualname__)
                            for h in plain.get_hookcallers(plugin) or ()
                            for impl in h.get_hookimpls())
            assert ours == theirs, plugin
    finally:
        run.close()


@pytest.mark.parametrize("plugin", [Child(), Slotted()], ids=["child", "slotted"])
def test_registering_runs_no_property_and_finds_the_hooks(plugin) -> None:
    pm = PluginManager("lease_manager")
    pm.add_hookspecs(lease_manager.hookspecs)
    pm.register(plugin)
    plain = pluggy.PluginManager("lease_manager")
    plain.add_hookspecs(lease_manager.hookspecs)
    plain.register(plugin)
    assert sorted(h.name for h in pm.get_hookcallers(plugin) or ()) == \
        sorted(h.name for h in plain.get_hookcallers(plugin) or ())
