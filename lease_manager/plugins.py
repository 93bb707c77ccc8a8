"""The plugin manager facade: built-in plugins, installed plugins, the policies they provide.

Installed plugins are found through the ``lease_manager`` entry-point group::

    [options.entry_points]
    lease_manager =
        my_policy = my_package.plugin
"""

from __future__ import annotations

import importlib
import types
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from lease_manager import entry_points, hookspecs
from lease_manager.config.core_options import core_options
from lease_manager.config.schema import Schema
from lease_manager.errors import ConfigError, LeaseManagerError
from lease_manager.kernel.extra_attributes import ExtraAttribute, registry
from lease_manager.policies import POLICY_KINDS

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease

BUILTIN_PLUGINS = (
    "lease_manager.policies.defaults",
    "lease_manager.policies.host_selection",
    "lease_manager.policies.probes",
    "lease_manager.policies.haizea_probes",
    "lease_manager.policies.preemption",
    "lease_manager.policies.admission",
    "lease_manager.policies.pricing",
    "lease_manager.policies.node_power",
    "lease_manager.policies.operating_point",
    "lease_manager.policies.site_selection",
    "lease_manager.policies.planners",
    "lease_manager.enactment.simulated",
    "lease_manager.enactment.process_backend",
    "lease_manager.enactment.slurm",
)
ENTRY_POINT_GROUP = "lease_manager"
ACCOUNTING_PLUGIN = "lease_manager.accounting"
INVARIANTS_PLUGIN = "lease_manager.invariants"
DAEMON_PLUGIN = "lease_manager.daemon"
ENERGY_PLUGIN = "lease_manager.energy"
MALLEABLE_PLUGIN = "lease_manager.malleable"
SITES_PLUGIN = "lease_manager.sites"
DECISIONS_PLUGIN = "lease_manager.decisions"
#: built-in plugins that are objects of one run (registered while it runs, under these names):
#: name -> (module:class, when)
RUN_PLUGINS = {
    ACCOUNTING_PLUGIN: ("lease_manager.observers.accounting:Accounting", "every run"),
    INVARIANTS_PLUGIN: ("lease_manager.observers.invariants:InvariantChecker",
                        "runs with [accounting] check-invariants"),
    ENERGY_PLUGIN: ("lease_manager.energy.energy_accounting:EnergyAccounting",
                    "runs with a [power] model"),
    DAEMON_PLUGIN: ("lease_manager.daemon.service:DaemonObserver", "the daemon"),
    MALLEABLE_PLUGIN: ("lease_manager.reallocation:Reallocation",
                       "runs with a [malleable] policy-allocation"),
    SITES_PLUGIN: ("lease_manager.multisite:SitesColumns", "runs with several sites"),
    DECISIONS_PLUGIN: ("lease_manager.observers.decisions:DecisionLog",
                       "runs with [accounting] decision-log"),
}


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, clearing the caches of who implements what
    (:class:`HookRelay`) whenever a plugin is registered or unregistered."""

    def __init__(self, project_name: str) -> None:
        super().__init__(project_name)
        self._caches: weakref.WeakSet[Any] = weakref.WeakSet()
        #: refuse, from now on, a plugin registered with an unknown hook (set at a run's start,
        #: once the plugins already registered have been checked)
        self.check_hooks = False

    def add_cache(self, cache: Any) -> None:
        """Call ``cache.clear()`` whenever the registered plugins change."""
        self._caches.add(cache)

    def _changed(self) -> None:
        for cache in list(self._caches):
            cache.clear()

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """pluggy's answer, asked only for the names under which something that may carry our
        hook marker is stored (a function or method that has it): registering looks at every
        attribute of a plugin, and pluggy's static look-up of each cost a few ms of start-up."""
        if not _may_be_hookimpl(plugin, name, self.project_name + "_impl"):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        try:
            registered = super().register(plugin, name)
            if self.check_hooks and registered is not None:
                try:
                    refuse_unknown_hooks(self, self.get_hookcallers(plugin) or ())
                except LeaseManagerError:
                    super().unregister(plugin)
                    raise
            return registered
        finally:
            self._changed()

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        try:
            return super().unregister(plugin, name)
        finally:
            self._changed()


def refuse_unknown_hooks(pm: pluggy.PluginManager, callers: Iterable[Any]) -> None:
    """A :class:`LeaseManagerError` for the first implementation, among ``callers``' (pluggy's
    hook callers), of a hook that has no specification: a misspelt hook, which pluggy would
    register and never call. It names the plugin and the hook and suggests the closest
    hook."""
    for caller in callers:
        if caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if impl.optionalhook:
                continue
            import difflib  # (only for the error: start-up)

            hooks = [name for name, known in vars(pm.hook).items()
                     if not name.startswith("_") and known.has_spec()]
            close = difflib.get_close_matches(caller.name, hooks, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            where = _defined_in(impl.plugin)
            where = f" ({where})" if where and where != impl.plugin_name else ""
            raise LeaseManagerError(
                f"plugin {impl.plugin_name!r}{where} implements {caller.name!r}, which is not a "
                f"hook of lease_manager: it would never be called{hint}")


def _defined_in(plugin: Any) -> str:
    """Where ``plugin`` (a module, a class or an object) is defined, in words."""
    if isinstance(plugin, types.ModuleType):
        return plugin.__name__
    cls = plugin if isinstance(plugin, type) else type(plugin)
    return f"{cls.__module__}.{cls.__qualname__}"


_HOOKABLE = (types.FunctionType, types.MethodType, classmethod, staticmethod)
_class_dict = type.__dict__["__dict__"].__get__
_class_mro = type.__dict__["__mro__"].__get__


def _may_be_hookimpl(plugin: Any, name: str, marker: str) -> bool:
    """Whether any object stored under ``name`` where a static look-up of ``plugin.name``
    searches (the plugin's own ``__dict__`` or slot, its classes' and, for a class, its
    metaclasses' ``__dict__``) is a function or method that carries ``marker``. False means
    pluggy finds no hook implementation there either; no descriptor or ``__getattr__`` runs."""
    found = []
    try:
        own = object.__getattribute__(plugin, "__dict__")
    except AttributeError:
        own = None
    if isinstance(own, dict) and name in own:
        found.append(own[name])
    classes = list(_class_mro(plugin)) if isinstance(plugin, type) else []
    for cls in classes + list(_class_mro(type(plugin))):
        value = _class_dict(cls).get(name, _class_dict)
        if value is _class_dict:
            continue
        if isinstance(value, types.MemberDescriptorType) and not classes:
            try:
                value = value.__get__(plugin, type(plugin))   # a slot: reading it runs no code
            except AttributeError:
                continue
        found.append(value)
    for value in found:
        if isinstance(value, _HOOKABLE) and (
                getattr(value, marker, None) is not None
                or getattr(getattr(value, "__func__", None), marker, None) is not None):
            return True
    return False


@attrs.frozen
class PluginInfo:
    """What ``lease-manager plugins`` shows about one plugin."""

    name: str
    distribution: str
    version: str
    hooks: tuple[str, ...]
    policies: tuple[str, ...]
    #: for a plugin that is an object of each run: which runs have it
    per_run: str = ""
    #: its host selection policies that support ``placement = at-start``
    at_start: tuple[str, ...] = ()


class Plugins:
    """Built-in and installed plugins, their policies and the full option schema.

    Serves any number of runs, one at a time: a run registers its policies and observers when
    it is built and unregisters them when it is closed.
    """

    def __init__(self, *, entry_points: bool = True, extra: Iterable[Any] = ()) -> None:
        self.pm = PluginManager("lease_manager")
        self._active_run: Any = None
        self.pm.add_hookspecs(hookspecs)
        #: plugin name -> (distribution, version); an installed plugin's Distribution until
        #: asked for (reading its metadata costs a few ms of every run)
        self._dist: dict[str, Any] = {}
        import lease_manager

        for name in BUILTIN_PLUGINS:
            self.pm.register(importlib.import_module(name), name=name)
            self._dist[name] = ("lease-manager (built-in)", lease_manager.__version__)
        if entry_points:
            self._load_entry_points()
        for plugin in extra:
            self.pm.register(plugin)
        self.policies = self._collect_policies()
        self.schema = Schema(core_options(
            {kind: tuple(names) for kind, names in self.policies.items()}))
        for impl in self.pm.hook.register_options.get_hookimpls():
            try:
                self.schema.add(impl.function() or ())   # type: ignore[arg-type]
            except ValueError as exc:
                raise LeaseManagerError(f"plugin {impl.plugin_name!r}: {exc}") from None
        #: the lease ``extra`` attributes the core and the plugins interpret, by name
        self.extra_attributes = self._collect_extra_attributes()

    def _collect_extra_attributes(self) -> dict[str, ExtraAttribute]:
        declared: list[ExtraAttribute] = []
        for impl in self.pm.hook.register_extra_attributes.get_hookimpls():
            try:
                mine = list(impl.function() or ())  # type: ignore[call-overload]
                registry(mine)
            except (TypeError, ValueError) as exc:
                raise LeaseManagerError(f"plugin {impl.plugin_name!r}: {exc}") from None
            declared += mine
        try:
            return registry(declared)
        except ValueError as exc:
            raise LeaseManagerError(f"plugins: {exc}") from None

    def begin_run(self, run: Any) -> None:
        """``run`` is being built with these plugins (refused while another run is open: its
        plugins would see this run's hooks). A plugin that implements a hook lease_manager
        does not have (a misspelling) is refused, now or when the run registers it."""
        if self._active_run is not None and self._active_run is not run:
            raise LeaseManagerError("these plugins serve another run that is not closed yet "
                                    "(call its close(), or let run() finish)")
        if not self.pm.check_hooks:
            refuse_unknown_hooks(self.pm, vars(self.pm.hook).values())
            self.pm.check_hooks = True   # (and the run's own plugins, as it registers them)
        self._active_run = run

    def end_run(self, run: Any) -> None:
        if self._active_run is run:
            self._active_run = None

    def _load_entry_points(self) -> None:
        for ep in entry_points.entry_points(ENTRY_POINT_GROUP):
            if self.pm.get_plugin(ep.name) is not None or self.pm.is_blocked(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:   # a broken plugin must not look like our bug
                raise LeaseManagerError(f"plugin {ep.name!r} ({ep.value}) failed to load: "
                                        f"{type(exc).__name__}: {exc}") from None
            self.pm.register(plugin, name=ep.name)
            self._dist[ep.name] = ep.dist

    def _collect_policies(self) -> dict[str, dict[str, tuple[type, str]]]:
        found: dict[str, dict[str, tuple[type, str]]] = {kind: {} for kind in POLICY_KINDS}
        for impl in self.pm.hook.register_policies.get_hookimpls():
            for cls in impl.function() or ():   # type: ignore[attr-defined]
                kind, name = getattr(cls, "kind", None), getattr(cls, "name", None)
                if not kind or not name:
                    raise LeaseManagerError(f"plugin {impl.plugin_name!r}: policy {cls!r} needs "
                                            f"'kind' and 'name' class attributes")
                kinds = found.setdefault(kind, {})
                if name in kinds and kinds[name][0] is not cls:
                    raise LeaseManagerError(
                        f"policy name {kind} {name!r} is provided by both plugin "
                        f"{kinds[name][1]!r} and {impl.plugin_name!r}")
                kinds[name] = (cls, impl.plugin_name)
        return found

    def policy(self, kind: str, name: str) -> type:
        """The policy class registered as ``name`` for ``kind``."""
        known = self.policies.get(kind, {})
        if name not in known:
            import difflib  # (only for the error's hint: start-up)

            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"no {kind} policy named {name!r} is installed{hint}; "
                              f"installed: {', '.join(sorted(known)) or 'none'}")
        return known[name][0]

    def provider(self, kind: str, name: str) -> str:
        """Which plugin and package provide policy ``name`` of ``kind``, in words."""
        known = self.policies.get(kind, {})
        if name not in known:
            return "not installed"
        cls, plugin = known[name]
        dist, version = self._distribution(plugin)
        if dist == "-":   # registered in-process (``Plugins(extra=...)``), not from a package
            return f"plugin {plugin!r}, module {cls.__module__}, in no installed package"
        return f"plugin {plugin!r}, package {dist} {version}"

    def _distribution(self, name: str) -> tuple[str, str]:
        """The distribution and version that provide plugin ``name``."""
        dist = self._dist.get(name, ("-", "-"))
        if not isinstance(dist, tuple):
            dist = self._dist[name] = dist.name_and_version()
        return dist

    def distributions(self) -> dict[str, str]:
        """Each distribution providing a plugin, with its version: what :meth:`describe`
        lists, without importing the per-run plugins to read their hooks."""
        import lease_manager

        out = {}
        for name, plugin in self.pm.list_name_plugin():
            if plugin is not None:
                dist, version = self._distribution(name)
                out[dist] = version
        if any(self.pm.get_plugin(name) is None for name in RUN_PLUGINS):
            out["lease-manager (built-in)"] = lease_manager.__version__
        return out

    def describe(self) -> list[PluginInfo]:
        """Every plugin with its distribution, version, hooks and policies."""
        out = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:
                continue
            hooks = tuple(sorted(h.name for h in self.pm.get_hookcallers(plugin) or ()))
            policies = tuple(f"{kind}: {pname}" for kind, named in self.policies.items()
                             for pname, (_, owner) in sorted(named.items()) if owner == name)
            at_start = tuple(pname for pname, (cls, owner)
                             in sorted(self.policies.get("host-selection", {}).items())
                             if owner == name and getattr(cls, "supports_placement_at_start",
                                                          False))
            dist, version = self._distribution(name)
            out.append(PluginInfo(name, dist, version, hooks, policies, at_start=at_start))
        import lease_manager

        for name, (target, when) in RUN_PLUGINS.items():
            if self.pm.get_plugin(name) is not None:
                continue
            module, _, attr = target.partition(":")
            cls = getattr(importlib.import_module(module), attr)
            hooks = tuple(sorted(h for h in dir(cls)
                                 if self.pm.parse_hookimpl_opts(cls, h) is not None))
            out.append(PluginInfo(name, "lease-manager (built-in)", lease_manager.__version__,
                                  hooks, (), per_run=when))
        return out


class HookRelay:
    """Calls an event hook with ``ctx=`` filled in, on every implementation registered at the
    time of the call, in pluggy's order; results are ignored.

    The replay calls hooks hundreds of times per lease, so who implements what is cached until
    a plugin is registered or unregistered: a hook nobody implements costs a dictionary lookup,
    and plain implementations are called directly with the arguments they declare (as pluggy
    would call them). A hook with a wrapper implementation goes through pluggy itself.
    """

    def __init__(self, plugins: Plugins, ctx: RunContext) -> None:
        self._pm = plugins.pm
        self._ctx = ctx
        self._targets: dict[str, list[tuple[Callable[..., Any], tuple[str, ...] | None]]] = {}
        #: per hook, what :meth:`lease_hook` calls: functions of ``(ctx, lease, now)``
        self._lease_targets: dict[str, list[Callable[[RunContext, Lease, float], Any]]] = {}
        #: hooks found to have no implementation (until plugins change): a caller on a hot
        #: path may test this set instead of making a call that does nothing
        self.muted: set[str] = set()
        self._pm.add_cache(self)

    def clear(self) -> None:
        """Forget who implements what (the plugin manager calls this when plugins change)."""
        self._targets.clear()
        self._lease_targets.clear()
        self.muted.clear()

    def _resolve(self, name: str) -> list[tuple[Callable[..., Any], tuple[str, ...] | None]]:
        caller = getattr(self._pm.hook, name)
        impls = caller.get_hookimpls()
        if any(impl.hookwrapper or impl.wrapper for impl in impls):
            return [(caller, None)]
        return [(impl.function, impl.argnames) for impl in reversed(impls)]

    def __call__(self, name: str, **kwargs: Any) -> None:
        targets = self._targets.get(name)
        if targets is None:
            targets = self._targets_of(name)
        if targets:
            ctx = self._ctx
            every = len(kwargs) + 1
            for function, argnames in targets:
                # through pluggy (a wrapper is involved), or an implementation that takes every
                # argument (pluggy checked its names when it was registered)
                if argnames is None or len(argnames) == every:
                    function(ctx=ctx, **kwargs)
                else:
                    given = dict(kwargs, ctx=ctx)
                    function(*[given[arg] for arg in argnames])

    def lease_hook(self, name: str, lease: Lease, now: float) -> None:
        """``self(name, lease=lease, now=now)``, with positional arguments (as pluggy calls
        implementations): the hooks about one lease run a few times per lease in a replay,
        and keyword arguments cost a dictionary per call and per implementation."""
        targets = self._lease_targets.get(name)
        if targets is None:
            targets = self._lease_targets[name] = [
                _positional(function, argnames) for function, argnames in self._targets_of(name)]
        ctx = self._ctx
        for function in targets:
            function(ctx, lease, now)

    def _targets_of(self, name: str) -> list[tuple[Callable[..., Any], tuple[str, ...] | None]]:
        targets = self._targets.get(name)
        if targets is None:
            targets = self._targets[name] = self._resolve(name)
            if not targets:
                self.muted.add(name)
        return targets


_LEASE_ARGUMENTS = ("ctx", "lease", "now")


def _positional(function: Callable[..., Any],
                argnames: tuple[str, ...] | None) -> Callable[[RunContext, Lease, float], Any]:
    """``function`` (a hook implementation taking ``argnames``, or pluggy's caller for
    ``None``) as a function of ``(ctx, lease, now)``."""
    if argnames == _LEASE_ARGUMENTS:
        return function
    if argnames is None:
        return lambda ctx, lease, now: function(ctx=ctx, lease=lease, now=now)
    names = argnames
    return lambda ctx, lease, now: function(
        *[{"ctx": ctx, "lease": lease, "now": now}[arg] for arg in names])
