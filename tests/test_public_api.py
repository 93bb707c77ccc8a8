"""The public API (``lease_manager.__all__``) is spelled once, every name in it imports, and it
exports every type that a hook, a policy or a run's context hands to a plugin."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
import types
from pathlib import Path

import lease_manager
from lease_manager import hookspecs

ROOT = Path(__file__).resolve().parent.parent
INIT = ROOT / "lease_manager" / "__init__.py"

#: names in annotations that are not lease_manager's (typing, collections.abc, builtins)
NOT_OURS = {"Any", "Callable", "Iterable", "Iterator", "Sequence", "Mapping", "None", "Self"}


def type_checking_imports() -> dict[str, tuple[str, str]]:
    """What the ``if TYPE_CHECKING:`` block of ``__init__.py`` imports, as Python parses it."""
    tree = ast.parse(INIT.read_text())
    blocks = [node for node in tree.body
              if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
              and node.test.id == "TYPE_CHECKING"]
    assert len(blocks) == 1
    out = {}
    for node in blocks[0].body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            assert alias.asname == alias.name, (
                f"{alias.name}: import it as itself ('X as X': an explicit re-export)")
            out[alias.name] = (node.module, alias.name)
    return out


def test_all_is_spelled_once_as_the_type_checking_imports():
    """No list or table of names beside the imports: ``__all__`` and the lazy loading are read
    from them (and the reading finds exactly what Python parses)."""
    declared = type_checking_imports()
    assert lease_manager._exports() == declared
    assert lease_manager.__all__ == ["__version__", *declared]
    source = INIT.read_text()
    for name in declared:
        assert len(re.findall(rf"\b{name}\b", source.split('"""', 2)[2])) == 2, (
            f"{name} is spelled outside its import in lease_manager/__init__.py")
    tree = ast.parse(source)
    assigned = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    assert "__all__" not in assigned


def test_every_exported_name_imports_and_is_the_object_its_module_defines():
    for name, (module, attribute) in lease_manager._exports().items():
        value = getattr(lease_manager, name)
        if module == "lease_manager":
            assert isinstance(value, types.ModuleType)
            assert value.__name__ == f"lease_manager.{attribute}"
        else:
            assert value is getattr(sys.modules[module], attribute)
    assert set(dir(lease_manager)) >= set(lease_manager.__all__)


def test_star_import_gives_every_name_and_importing_the_package_loads_nothing():
    program = ("import sys\nimport lease_manager\nloaded = sorted(m for m in sys.modules "
               "if m.startswith('lease_manager.'))\nfrom lease_manager import *\n"
               "missing = [n for n in lease_manager.__all__ if n not in globals()]\n"
               "print(loaded, missing)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[] []"


def test_an_unknown_name_is_an_attribute_error():
    try:
        lease_manager.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("lease_manager.NoSuchThing did not raise")


def annotation_names(function: object) -> set[str]:
    """The names of the types in ``function``'s annotations (strings: ``from __future__
    import annotations``), leaving out attributes of modules (``np.ndarray``)."""
    names = set()
    for text in getattr(function, "__annotations__", {}).values():
        names |= set(re.findall(r"(?<![\w.])([A-Z]\w*)\b(?!\.)", str(text)))
    return names - NOT_OURS


def test_every_type_in_a_hook_or_a_policys_signature_is_exported():
    """What hooks receive and return, and what the policy base classes' methods take and
    give (``Sequence[SiteView]``, ``PowerBoard``, ``Allocation``...)."""
    used: dict[str, str] = {}
    for name, function in vars(hookspecs).items():
        if inspect.isfunction(function) and function.__module__ == hookspecs.__name__:
            used |= dict.fromkeys(annotation_names(function), f"hook {name}")
    for cls in (getattr(lease_manager, name) for name in lease_manager._exports()):
        if inspect.isclass(cls) and issubclass(cls, lease_manager.Policy):
            for attr, function in vars(cls).items():
                function = getattr(function, "__func__", function)
                if inspect.isfunction(function) and (not attr.startswith("_")
                                                     or attr == "__init__"):
                    used |= dict.fromkeys(annotation_names(function), f"{cls.__name__}.{attr}")
    assert {"Lease", "RunContext", "SiteView", "PowerBoard"} <= set(used), "annotations unread"
    missing = {name: where for name, where in used.items() if name not in lease_manager.__all__}
    assert not missing, f"not exported by lease_manager: {missing}"


def test_every_type_a_runs_context_hands_out_is_exported(tmp_path):
    """A run with a power model and a power cap: its context's attributes and its views'
    answers are of exported types."""
    trace = tmp_path / "one.swf"
    trace.write_text("1 0 0 600 1 -1 -1 1 600 -1 1 1 1 -1 1 -1 -1 -1\n")
    cap = tmp_path / "cap.csv"
    cap.write_text("time,watts\n0,100000\n")
    run = lease_manager.load_run(ROOT / "etc" / "sample.ini", [
        f"tracefile.tracefile={trace}", "power.pstates=1:100:200", f"power.power-cap={cap}"])
    try:
        ctx = run.ctx
        handed = {"ctx": ctx, "ctx.table.watch()": ctx.table.watch()}
        for attr in [*vars(ctx), "now"]:
            if not attr.startswith("_"):
                handed[f"ctx.{attr}"] = getattr(ctx, attr)
        assert ctx.power is not None and ctx.power_cap is not None
        ours = {where: type(value) for where, value in handed.items()
                if type(value).__module__.startswith("lease_manager")}
        assert {"ctx.table", "ctx.scheduler", "ctx.site", "ctx.power"} <= set(ours)
        missing = {where: cls.__qualname__ for where, cls in ours.items()
                   if getattr(lease_manager, cls.__name__, None) is not cls}
        assert not missing, f"not exported by lease_manager: {missing}"
    finally:
        run.close()


def ruff(path: str, source: str) -> subprocess.CompletedProcess[str]:
    """The project's ruff on ``source`` as if it were the file ``path`` of the repository."""
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--quiet",
                           "--stdin-filename", path, "-"], input=source, cwd=ROOT,
                          capture_output=True, text=True)


def test_the_lint_rule_fails_a_plugin_that_imports_a_private_name():
    bad = "from lease_manager.run import Run\n\nprint(Run)\n"
    for path in ("plugins/dvfs/lm_dvfs/new_module.py", "tests/thirdparty_plugin/lm_x/new.py"):
        done = ruff(path, bad)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "TID251 `lease_manager.run` is banned" in done.stdout
    deep = "def f():\n    from lease_manager.kernel.lease import Lease\n    return Lease\n"
    assert "`lease_manager.kernel` is banned" in ruff("plugins/x/lm_x/a.py", deep).stdout


def test_the_lint_rule_passes_public_imports_and_the_core():
    good = ("from lease_manager import Run\nfrom lease_manager.characteristics import RESOURCES"
            "\n\nprint(Run, RESOURCES)\n")
    assert ruff("plugins/dvfs/lm_dvfs/new_module.py", good).returncode == 0
    core = "from lease_manager.run import Run\n\nprint(Run)\n"
    assert ruff("lease_manager/new_module.py", core).returncode == 0
    assert ruff("plugins/dvfs/tests/test_new.py", core).returncode == 0


def test_the_rule_bans_every_module_of_lease_manager_but_the_public_ones():
    """The banned-API list names lease_manager's modules one by one: a new module must join it
    (or be exported as a module, as ``characteristics`` is)."""
    import pkgutil
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    banned = set(config["tool"]["ruff"]["lint"]["flake8-tidy-imports"]["banned-api"])
    public_modules = {f"lease_manager.{attribute}"
                      for module, attribute in lease_manager._exports().values()
                      if module == "lease_manager"}
    modules = {f"lease_manager.{m.name}" for m in pkgutil.iter_modules(lease_manager.__path__)}
    private = modules - public_modules
    assert banned == private, (f"[tool.ruff.lint.flake8-tidy-imports.banned-api] in "
                               f"pyproject.toml: add {private - banned}, remove {banned - private}")


def test_mypy_checks_every_bundled_plugin():
    import tomllib

    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    plugins = {str(path.relative_to(ROOT)) for path in ROOT.glob("plugins/*/lm_*")
               if (path / "__init__.py").is_file()}
    assert len(plugins) >= 5
    assert plugins <= set(files), f"[tool.mypy] files leaves out {plugins - set(files)}"
