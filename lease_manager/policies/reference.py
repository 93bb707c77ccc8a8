"""The policy reference (``lease-manager plugin-doc``): each policy kind's protocol, what a
policy reads (:class:`~lease_manager.context.RunContext`) and the lease's public fields, as
Markdown written from the code itself (classes, signatures, docstrings and ``#:`` comments),
so that it cannot drift from it. ``docs/reference/policies.md`` is its output."""

from __future__ import annotations

import enum
import inspect
import re
import textwrap
from types import SimpleNamespace
from typing import Any

import attrs

#: policy kind -> (module, class) of its protocol
PROTOCOLS = {
    "admission": ("lease_manager.policies", "AdmissionPolicy"),
    "pricing": ("lease_manager.policies", "PricingPolicy"),
    "queue": ("lease_manager.policies", "QueuePolicy"),
    "host-selection": ("lease_manager.policies", "HostSelectionPolicy"),
    "preemption": ("lease_manager.policies", "PreemptionPolicy"),
    "probe": ("lease_manager.policies", "Policy"),
    "annotator": ("lease_manager.policies", "Annotator"),
    "enactment": ("lease_manager.enactment.base", "EnactmentBackend"),
    "node-power": ("lease_manager.policies", "NodePowerPolicy"),
    "operating-point": ("lease_manager.policies", "OperatingPointPolicy"),
    "site-selection": ("lease_manager.policies", "SiteSelectionPolicy"),
    "allocation": ("lease_manager.policies", "AllocationPolicy"),
    "planner": ("lease_manager.policies", "Planner"),
}
#: the option that selects a kind's policies, when it is not ``policy-KIND`` in some section
SELECTED_BY = {"probe": ("accounting", "probes"), "annotator": ("tracefile", "annotators"),
               "enactment": ("daemon", "enactment")}
#: what a probe is, beyond its class (a probe answers nothing: it implements hooks)
PROBE_NOTE = ("A probe answers nothing: it is a policy object whose hooks (below) record "
              "series through `self.ctx.metrics` (`describe(name, unit, text)`, "
              "`record(name, now, value)`), written to `series/NAME.csv`.")


def protocol(kind: str) -> type:
    """The class whose methods are the protocol of policies of ``kind``."""
    import importlib

    module, name = PROTOCOLS[kind]
    return getattr(importlib.import_module(module), name)


def doc_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comments above the attributes of ``cls`` (class attributes, attrs fields,
    ``self.NAME = ...`` in its methods), by attribute name."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"(?:self\.)?([A-Za-z_]\w*)\s*(?::[^=]+)?=|([A-Za-z_]\w*)\s*:", stripped)
        if pending and match:
            comments.setdefault(match.group(1) or match.group(2), " ".join(pending))
        pending = []
    return comments


def _rst(text: str) -> str:
    """reStructuredText roles and literals of a docstring, as Markdown."""
    text = re.sub(r":(?:class|func|meth|attr|mod|data):`(~?)([^`]+)`",
                  lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`",
                  text)
    return text.replace("``", "`")


def _docstring(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return _rst(doc)


def _line(obj: Any) -> str:
    """``obj``'s docstring on one line (for a list item)."""
    return " ".join(_docstring(obj).split())


def _signature(function: Any) -> str:
    """``name(parameters) -> result`` as written in the source (annotations unevaluated)."""
    sig = inspect.signature(function, eval_str=False)
    params = []
    for p in sig.parameters.values():
        text = p.name if p.annotation is p.empty else f"{p.name}: {p.annotation}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        params.append(text)
    result = "" if sig.return_annotation is sig.empty else f" -> {sig.return_annotation}"
    return f"{function.__name__}({', '.join(params)}){result}"


def _methods(cls: type) -> list[Any]:
    """The public methods ``cls`` defines (or inherits from below ``object``), source order."""
    seen: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):
        for name, value in vars(klass).items():
            if not name.startswith("_") and inspect.isfunction(value):
                seen[name] = value
    return [f for f in seen.values() if f.__name__ != "__init__"]


def _class_attributes(cls: type) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for klass in reversed(cls.__mro__[:-1]):
        for name, value in vars(klass).items():
            if (not name.startswith("_") and not callable(value)
                    and not isinstance(value, (property, staticmethod, classmethod))):
                out = [item for item in out if item[0] != name] + [(name, value)]
    return out


def _checked_methods(kind: str) -> list[str]:
    """The methods whose answers the core checks (:mod:`~lease_manager.policies.answers`)."""
    from lease_manager.policies.answers import CHECKED_KINDS, Guard

    build = CHECKED_KINDS.get(kind)
    if build is None:
        return []
    stand_in = SimpleNamespace(ctx=SimpleNamespace(power=None), name="")
    return list(build(Guard(stand_in, kind, str)))


def _selected_by(kind: str, schema: Any) -> str:
    if kind in SELECTED_BY:
        section, name = SELECTED_BY[kind]
        if schema.option(section, name) is None:
            raise AssertionError(f"no option [{section}] {name} selects {kind} policies")
        return f"`[{section}] {name}`"
    found = [o for o in schema if o.name == f"policy-{kind}"]
    if len(found) != 1:
        raise AssertionError(f"no single option policy-{kind} selects {kind} policies")
    return f"`[{found[0].section}] {found[0].name}`"


def _field_table(cls: type, comments: dict[str, str]) -> list[str]:
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for field in attrs.fields(cls):
        if field.name.startswith("_") or not field.init and field.name not in comments:
            continue
        default = field.default
        if default is attrs.NOTHING:
            shown = "(required)"
        elif isinstance(default, attrs.Factory):   # type: ignore[arg-type]
            shown = f"`{default.factory.__name__}()`"
        elif isinstance(default, enum.Enum):
            shown = f"`{type(default).__name__}.{default.name}`"
        else:
            shown = f"`{default!r}`"
        kind = str(field.type).replace("|", "\\|")
        meaning = _rst(comments.get(field.name, "")).replace("|", "\\|")
        rows.append(f"| `{field.name}` | `{kind}` | {shown} | {meaning} |")
    return rows


def _properties(cls: type) -> list[str]:
    out = []
    for name, value in vars(cls).items():
        if isinstance(value, property) and not name.startswith("_"):
            doc = _line(value)
            returns = value.fget.__annotations__.get("return", "") if value.fget else ""
            out.append(f"- `{name}` ({returns}): {doc}".rstrip(": "))
    return out


def _kind_section(kind: str, plugins: Any) -> list[str]:
    cls = protocol(kind)
    comments = doc_comments(cls)
    builtin = ", ".join(f"`{n}`" for n in sorted(plugins.policies.get(kind, {}))) or "none"
    lines = [f"## {kind}", "", f"Protocol: `{cls.__module__}.{cls.__name__}`. Selected by "
             f"{_selected_by(kind, plugins.schema)}. Built-in: {builtin}.", "",
             _docstring(cls), ""]
    if kind == "probe":
        lines += [PROBE_NOTE, ""]
    checked = _checked_methods(kind)
    if checked:
        lines += ["Answers the core checks (a wrong one stops the run, naming the policy and "
                  "its package): " + ", ".join(f"`{m}`" for m in checked) + ".", ""]
    attributes = [(n, v) for n, v in _class_attributes(cls) if n not in ("kind", "name")]
    if attributes:
        lines += ["Class attributes:", ""]
        for name, value in attributes:
            note = _rst(comments.get(name, ""))
            lines.append(f"- `{name} = {value!r}`" + (f": {note}" if note else ""))
        lines.append("")
    methods = _methods(cls)
    if methods:
        lines += ["Methods:", ""]
        for method in methods:
            doc = _docstring(method)
            lines.append(f"- `{_signature(method)}`")
            if doc:
                lines += [textwrap.indent(doc, "  "), ""] if "\n" in doc else [f"  {doc}"]
        lines.append("")
    return lines


def policy_reference() -> str:
    """The reference page, as Markdown."""
    from lease_manager import hookspecs
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest
    from lease_manager.plugins import ENTRY_POINT_GROUP, Plugins
    from lease_manager.policies import POLICY_KINDS

    missing = [kind for kind in POLICY_KINDS if kind not in PROTOCOLS]
    if missing:
        raise AssertionError(f"policy kinds without a protocol in the reference: {missing}")
    plugins = Plugins(entry_points=False)
    import lease_manager.policies as policies

    lines = ["# Policies and leases: the reference", "",
             "<!-- written by `lease-manager plugin-doc` from the code; do not edit (a test "
             "checks this file equals the command's output) -->", "",
             _docstring(policies), "",
             f"A package provides policies through the `{ENTRY_POINT_GROUP}` entry-point group "
             "and the `register_policies` hook; `lease-manager new-plugin NAME --kind KIND` "
             "writes one to start from.", "",
             "| kind | protocol | selected by |", "|---|---|---|"]
    for kind in POLICY_KINDS:
        cls = protocol(kind)
        lines.append(f"| [{kind}](#{kind}) | `{cls.__name__}` | "
                     f"{_selected_by(kind, plugins.schema)} |")
    lines.append("")
    for kind in POLICY_KINDS:
        lines += _kind_section(kind, plugins)
    lines += ["## What a policy reads: `RunContext`", "", _docstring(inspect.getmodule(
        RunContext)), "", "Attributes:", ""]
    for name, note in doc_comments(RunContext).items():
        if not name.startswith("_"):
            lines.append(f"- `{name}`: {_rst(note)}")
    lines += ["", "Methods and properties:", ""]
    lines += [f"- `{name}`: {_line(value)}".rstrip(": ")
              for name, value in vars(RunContext).items()
              if isinstance(value, property) and not name.startswith("_")]
    for method in _methods(RunContext):
        lines.append(f"- `{_signature(method)}`: {_line(method)}".rstrip(": "))
    lines += ["", "## The lease: `Lease`", "", _docstring(Lease), "",
              *_field_table(Lease, doc_comments(Lease)), "", "Properties:", "",
              *_properties(Lease), "",
              "`LeaseType`: " + ", ".join(f"`{t.name}` (`{t.value}`)" for t in LeaseType)
              + ".", "",
              "`LeaseState`: " + ", ".join(f"`{s.name}` (`{s.value}`)" for s in LeaseState)
              + ".", "",
              "`VMRequest` (`lease.vms`): " + _line(VMRequest), "",
              *_field_table(VMRequest, doc_comments(VMRequest)), "",
              "## Hooks", "",
              "A plugin (or a policy object: probes are) implements any of these with "
              "`@lease_manager.hookimpl`, taking any subset of the arguments.", ""]
    for value in vars(hookspecs).values():
        if inspect.isfunction(value) and hasattr(value, "lease_manager_spec"):
            lines.append(f"- `{_signature(value)}`: {_line(value)}")
    return "\n".join(lines).rstrip() + "\n"
