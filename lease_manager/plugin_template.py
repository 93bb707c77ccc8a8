"""``lease-manager new-plugin NAME --kind KIND``: a policy package to start from.

It writes an installable package (``pyproject.toml``: metadata, the ``lease_manager`` entry
point), a policy of the kind with one typed option, a test that replays a trace the project
ships (copied into the package's ``tests/data/``, with its provenance) with the policy, and a
README. ``pip install -e`` it, and its test passes.

Every policy kind a replay uses has a template. ``enactment`` has none: a backend runs only in
the daemon, whose test cannot replay a trace (start from
:mod:`lease_manager.enactment.process_backend` instead).
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

from lease_manager.errors import LeaseManagerError
from lease_manager.policy_examples import PROVENANCE, SWF_TRACE, TEMPLATES

#: the kinds that have a template
TEMPLATE_KINDS = tuple(TEMPLATES)

#: the repository's traces (a source checkout: the README installs one with pip install -e)
TRACES = Path(__file__).resolve().parent.parent / "traces"

_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

_MODULE = '''"""{module_doc}
"""

from __future__ import annotations

{stdlib}import lease_manager
{imports}from lease_manager import {names}

#: the section of this package's options
SECTION = "{name}"


class {cls}({base}):
    """{class_doc}"""

    kind = "{kind}"
    name = "{name}"

    def __init__(self, ctx):
        super().__init__(ctx)
        #: the option, read once per run
        self.{attr} = ctx.config.get(SECTION, "{option}"){post_init}
{methods}

@lease_manager.hookimpl
def register_policies():
    return [{cls}]


@lease_manager.hookimpl
def register_options():
    return [Option(SECTION, "{option}", {type}, {default},{limits}
                   doc="{doc}")]
'''

_TEST = '''"""Replay tests/data/{trace}, a trace lease_manager ships, with the
{kind} policy {name!r}.

Run it after pip install -e (the policy is then found through its entry point)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

{pytest}TRACE = Path(__file__).resolve().parent / "data" / "{trace}"


def replay(tmp_path: Path, *settings: str) -> tuple[list[dict], dict]:
    """Replay {jobs} of the trace (``section.option=value`` settings on top); the
    rows of leases.csv and summary.json. Runs go to tmp_path/out1, out2, ..."""
    ini = tmp_path / "run.ini"
    ini.write_text("[simulation]\\nresources = 144 CPU:1 Memory:1024\\n"
                   f"[tracefile]\\ntracefile = {{TRACE}}\\n"
                   "vm-resources = CPU:1 Memory:1024\\n"
                   "{max_jobs}")
    out = tmp_path / f"out{{len(list(tmp_path.glob('out*'))) + 1}}"
    command = [sys.executable, "-m", "lease_manager.cli", "simulate", str(ini), "-q",
               "--out", str(out)]
    for setting in settings:
        command += ["--set", setting]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with (out / "leases.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    return rows, json.loads((out / "summary.json").read_text())

{tests}'''

_README = '''# lm-{name}

{intro}

## Install and test

```sh
pip install -e .
python -m pytest tests
```

{provenance_par}

## Use

```ini
{selected_ini}

[{name}]
# {doc}
{option} = {default_ini}
```

`lease-manager plugins` lists the policy; `lease-manager config-doc` documents its option.

## What is where

- `pyproject.toml`: the package's metadata and its entry point in the `lease_manager` group,
  through which lease_manager finds the plugin;
- `{module}/__init__.py`: the policy (`{cls}`) and the two hooks that register it
  and its option;
- `tests/test_{module_tail}.py`: the replay test.

`lease-manager plugin-doc` prints the protocol of every policy kind, what a policy reads of
the run (`self.ctx`) and the lease's fields. The core checks the policy's answers: a wrong one
stops the run in one line that names the policy and this package.
'''

_PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "lm-{name}"
version = "0.1.0"
description = {description}
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["lease-manager>={version}"]

[project.optional-dependencies]
test = ["pytest>=7.4"]

[project.entry-points.lease_manager]
{name} = "{module}"

[tool.setuptools]
packages = ["{module}"]
'''


def _fill(text: str, indent: str = "") -> str:
    return textwrap.fill(text, width=95, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False)


def _selected_by(kind: str) -> tuple[str, str]:
    """The ini section and option that select a policy of ``kind``."""
    from lease_manager.policies.reference import SELECTED_BY

    if kind in SELECTED_BY:
        return SELECTED_BY[kind]
    from lease_manager.plugins import Plugins

    found = next(o for o in Plugins(entry_points=False).schema if o.name == f"policy-{kind}")
    return found.section, found.name


def render(name: str, kind: str) -> dict[str, str]:
    """The package's files (relative path -> text), the trace aside."""
    import lease_manager

    template = TEMPLATES[kind]
    module = "lm_" + name.replace("-", "_")
    cls = "".join(part.capitalize() for part in name.split("-")) + "Policy"
    option, type_, default, limits, doc = template.option
    attr = option.replace("-", "_")
    section, selector = _selected_by(kind)
    series = f"{module[3:]}_queued_vms"
    methods = template.methods.replace("SERIES", series)
    post_init = template.setup.replace("SERIES", series)
    summary_plain = template.summary.replace("`", "").replace('\\"', '"')
    default_ini = {"True": "yes", "False": "no"}.get(default, default.strip('"'))
    values = dict(
        name=name, kind=kind, module=module, cls=cls, base=template.base, type=type_,
        option=option, default=default, limits=f" {limits}," if limits else "", doc=doc,
        attr=attr, summary=template.summary,
        description=json.dumps(f"A {kind} policy for lease_manager that {summary_plain}"),
        methods=methods, post_init=post_init,
        stdlib=template.imports[0] + "\n\n" if template.imports[0] else "",
        imports=template.imports[1] + "\n" if template.imports[1] else "",
        names=", ".join(sorted({template.base, "Option", type_, *template.names},
                               key=lambda n: (not n.isupper(), n))),
        module_doc=_fill(f"lm-{name}: a {kind} policy for lease_manager that "
                         f"{template.summary}.") + "\n\n" + _fill(
            f"Select it with [{section}] {selector} = {name}; its option is [{name}] "
            f"{option}: {doc[0].lower()}{doc[1:]}"),
        class_doc=_fill(f"The policy: it {template.summary}.", indent="    ").lstrip(),
        version=lease_manager.__version__, trace=template.trace,
        provenance=PROVENANCE[template.trace], module_tail=module[3:],
        selected_ini=f"[{section}]\n{selector} = {name}", default_ini=default_ini,
        intro=_fill(f"A {kind} policy for lease_manager that {template.summary}. Written by "
                    f"`lease-manager new-plugin {name} --kind {kind}`; make it yours."),
        provenance_par=_fill(f"The test replays `tests/data/{template.trace}`: "
                             f"{PROVENANCE[template.trace]}."))
    tests = (template.tests.replace("NAME", name).replace("SECTION", name)
             .replace("SERIES", series))
    max_jobs = "max-jobs = 200\\n" if template.trace == SWF_TRACE else ""
    test = _TEST.format(trace=template.trace, kind=kind, name=name, tests=tests.lstrip("\n"),
                        pytest="import pytest\n\n" if "pytest." in tests else "",
                        max_jobs=max_jobs,
                        jobs="the first 200 jobs" if max_jobs else "every task")
    return {
        "pyproject.toml": _PYPROJECT.format(**values),
        "README.md": _README.format(**values),
        f"{module}/__init__.py": _MODULE.format(**values),
        f"tests/test_{module[3:]}.py": test,
    }


def write_plugin(name: str, kind: str, out: Path | None = None) -> Path:
    """Write the package of policy ``name`` of ``kind`` into ``out`` (default ``lm-NAME``)."""
    if not _NAME.fullmatch(name):
        raise LeaseManagerError(f"new-plugin: {name!r} is not a policy name: lower-case "
                                "letters, digits and dashes, starting with a letter")
    if kind not in TEMPLATES:
        raise LeaseManagerError(f"new-plugin: no template for kind {kind!r} (templates: "
                                f"{', '.join(TEMPLATES)})")
    folder = out if out is not None else Path(f"lm-{name}")
    if folder.exists():
        raise LeaseManagerError(f"new-plugin: {folder} exists; choose another --out")
    trace = TRACES / TEMPLATES[kind].trace
    if not trace.is_file():
        raise LeaseManagerError(f"new-plugin: the trace its test replays, {trace}, is missing "
                                "(new-plugin runs from a source checkout of lease_manager)")
    files = render(name, kind)
    try:
        for path, text in files.items():
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(text) if path.endswith(".toml") else text)
        (folder / "tests" / "data").mkdir()
        shutil.copyfile(trace, folder / "tests" / "data" / trace.name)
    except OSError as exc:
        raise LeaseManagerError(f"new-plugin: cannot write {folder}: {exc.strerror}") from None
    return folder
