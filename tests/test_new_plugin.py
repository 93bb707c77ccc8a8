"""``lease-manager new-plugin``: a policy package of every kind that installs and passes its
own test; ``lease-manager plugin-doc``: the committed reference page is its output."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib

import attrs
import pytest

from lease_manager.cli import main
from lease_manager.kernel.lease import Lease
from lease_manager.plugin_template import TEMPLATE_KINDS, render, write_plugin
from lease_manager.policies import POLICY_KINDS
from lease_manager.policies.reference import policy_reference

from support import ROOT, env_with, pip_install_target

REFERENCE = ROOT / "docs" / "reference" / "policies.md"
GUIDE = ROOT / "docs" / "plugins.md"     # "Writing a policy package"


def test_the_committed_reference_is_plugin_docs_output():
    assert REFERENCE.read_text() == policy_reference(), (
        "docs/reference/policies.md is stale: lease-manager plugin-doc > "
        "docs/reference/policies.md")


def test_the_reference_has_every_kind_and_every_lease_field():
    text = policy_reference()
    for kind in POLICY_KINDS:
        assert f"\n## {kind}\n" in text
    for field in attrs.fields(Lease):
        assert f"| `{field.name}` |" in text
    assert "| `id` | `int` | (required) | the lease's number, unique in its run |" in text


def test_every_kind_a_replay_uses_has_a_template():
    """Enactment backends run in the daemon only: their test cannot replay a trace."""
    assert set(TEMPLATE_KINDS) == set(POLICY_KINDS) - {"enactment"}


def test_the_command_offers_exactly_the_templates_kinds():
    """``new-plugin --kind`` lists its choices without loading the templates (start-up)."""
    from lease_manager.cli import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command")
    kind = next(a for a in commands.choices["new-plugin"]._actions if a.dest == "kind")
    assert kind.choices == TEMPLATE_KINDS


@pytest.mark.parametrize("kind", TEMPLATE_KINDS)
def test_each_template_is_a_package_with_its_entry_point(kind):
    files = render("my-policy", kind)
    project = tomllib.loads(files["pyproject.toml"])
    assert project["project"]["name"] == "lm-my-policy"
    assert project["project"]["entry-points"]["lease_manager"] == {"my-policy": "lm_my_policy"}
    assert project["tool"]["setuptools"]["packages"] == ["lm_my_policy"]
    module = ast.parse(files["lm_my_policy/__init__.py"])
    options = [node for node in ast.walk(module) if isinstance(node, ast.Call)
               and getattr(node.func, "id", "") == "Option"]
    assert len(options) == 1   # one typed option
    assert f'kind = "{kind}"' in files["lm_my_policy/__init__.py"]
    ast.parse(files["tests/test_my_policy.py"])
    assert "pip install -e ." in files["README.md"]


def test_new_plugin_refuses_a_bad_name_and_an_existing_folder(tmp_path, capsys):
    assert main(["new-plugin", "My_Policy", "--kind", "queue", "--out", str(tmp_path / "a")]) == 2
    assert "'My_Policy' is not a policy name" in capsys.readouterr().err
    assert main(["new-plugin", "mine", "--kind", "queue", "--out", str(tmp_path)]) == 2
    assert f"{tmp_path} exists" in capsys.readouterr().err


@pytest.mark.long
def test_every_kinds_package_installs_and_passes_its_test(tmp_path):
    """Every kind's package, and one host-selection package changed to answer a duplicate
    node, and the guide's hand-written package, installed together offline (as
    tests/test_plugins.py does): the generated tests pass; the broken policy stops a replay in
    one line naming it and its package; the guide's runs."""
    folders = [write_plugin(f"t-{kind}", kind, tmp_path / f"lm-t-{kind}")
               for kind in TEMPLATE_KINDS]
    broken = write_plugin("dup-hosts", "host-selection", tmp_path / "lm-dup-hosts")
    source = broken / "lm_dup_hosts" / "__init__.py"
    text = source.read_text()
    assert "return np.arange(nodes - 1 - self.skip, -1, -1)" in text
    source.write_text(text.replace("return np.arange(nodes - 1 - self.skip, -1, -1)",
                                   "return np.array([1, 1, 0])"))
    snippet = readme_package(tmp_path / "lm-fewest-leases")
    site = pip_install_target([*folders, broken, snippet], tmp_path / "site")
    env = env_with(site)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "--rootdir", str(tmp_path),
                           *(str(folder / "tests") for folder in folders)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(rf"\b{len(folders)} passed\b", done.stdout), done.stdout[-500:]

    ini = tmp_path / "run.ini"
    ini.write_text(f"[simulation]\nresources = 144 CPU:1 Memory:1024\n[tracefile]\n"
                   f"tracefile = {ROOT / 'traces' / 'greenpar-blue-24h.swf'}\n"
                   f"[scheduling]\npolicy-host-selection = dup-hosts\n")
    run = subprocess.run([sys.executable, "-m", "lease_manager.cli", "simulate", str(ini), "-q",
                          "--out", str(tmp_path / "out")], env=env, capture_output=True,
                         text=True)
    assert "Traceback" not in run.stderr and run.returncode == 2
    assert re.fullmatch(r"lease-manager: error: host-selection policy 'dup-hosts' \(plugin "
                        r"'dup-hosts', package lm-dup-hosts 0\.1\.0\): order_hosts\(\) returned "
                        r"node 1 2 times for lease \d+: each node at most once\n", run.stderr)

    # the guide's hand-written package runs as it says
    good = subprocess.run([sys.executable, "-m", "lease_manager.cli", "simulate", str(ini), "-q",
                           "--out", str(tmp_path / "readme"), "--set",
                           "scheduling.policy-host-selection=fewest-leases"], env=env,
                          capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert (tmp_path / "readme" / "series" / "ended.csv").is_file()


def readme_package(folder):
    """The package the guide to policy packages (docs/plugins.md) writes by hand."""
    section = GUIDE.read_text()
    blocks = dict(re.findall(r"```(?:toml|python)\n# (\S+)\n(.*?)```", section, re.S))
    assert set(blocks) == {"pyproject.toml", "lm_fewest_leases/__init__.py"}, set(blocks)
    for path, text in blocks.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder
