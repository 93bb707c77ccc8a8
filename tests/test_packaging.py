"""What a clone ships besides the code: the licence its metadata names, the README commands CI
runs, and the example files the README's commands use."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lease_manager import cli
from lease_manager.experiments.sweep import run_sweep
from lease_manager.experiments.sweep_file import load_sweep

from support import ROOT

#: SPDX id -> what its text must say (the title and each clause's opening words)
LICENCES = {
    "BSD-3-Clause": ("BSD 3-Clause License",
                     "Redistributions of source code must retain the above copyright notice",
                     "Redistributions in binary form must reproduce the above copyright notice",
                     "Neither the name of the copyright holder nor the names of its",
                     'THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"'),
}


def metadata_licence(setup_cfg: Path) -> str:
    parser = configparser.ConfigParser()
    parser.read(setup_cfg)
    return parser.get("metadata", "license")


# ---------------------------------------------------------------------------------- LICENSE
def test_license_file_is_the_licence_setup_cfg_names():
    licence = metadata_licence(ROOT / "setup.cfg")
    assert licence in LICENCES, f"setup.cfg names {licence!r}: add its text's phrases here"
    text = " ".join((ROOT / "LICENSE").read_text().split())   # clauses wrap across lines
    missing = [phrase for phrase in LICENCES[licence] if phrase not in text]
    assert not missing, f"LICENSE is not the {licence} text setup.cfg names: {missing}"
    assert text.startswith(LICENCES[licence][0])
    # the plugins are distributed under the same licence as the core they plug into
    for plugin in sorted((ROOT / "plugins").glob("*/setup.cfg")):
        assert metadata_licence(plugin) == licence, plugin


# ------------------------------------------------------------- .ci/run's README commands
def ci_checks(clone: Path) -> subprocess.CompletedProcess:
    """.ci/run, up to where it starts running things: its reading of ``clone``'s README and the
    checks of what it read; it prints the two commands it found."""
    script = (ROOT / ".ci" / "run").read_text()
    head = script[:script.index("\nsetup=")]
    (clone / ".ci").mkdir(parents=True, exist_ok=True)
    (clone / ".ci" / "run").write_text(head + '\nprintf "%s\\n%s\\n" "$main_command" '
                                              '"$test_command"\n')
    return subprocess.run(["bash", str(clone / ".ci" / "run")], capture_output=True, text=True,
                          timeout=30)


def test_ci_reads_the_readmes_sample_replay_and_test_command(tmp_path):
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    done = ci_checks(tmp_path)
    assert done.returncode == 0, done.stderr
    main_command, test_command = done.stdout.splitlines()
    assert main_command.startswith("python3 -m venv .venv && .venv/bin/pip install -e . ")
    assert main_command.endswith(" && .venv/bin/lease-manager simulate etc/sample.ini "
                                 "--out results/sample")
    assert re.fullmatch(r"python3 -m venv \.venv && \.venv/bin/pip install -e '\.\[test\]'.* "
                        r"&& \.venv/bin/python -m pytest -q -n auto --dist loadfile",
                        test_command), test_command
    # the lines of the README's first code block, exactly
    readme = (ROOT / "README.md").read_text().splitlines()
    assert readme[0] == "```sh" and readme[1:3] == [main_command, test_command]


def test_ci_refuses_a_readme_whose_first_commands_moved(tmp_path):
    readme = (ROOT / "README.md").read_text().splitlines(keepends=True)
    (tmp_path / "README.md").write_text("".join([readme[0], readme[2], readme[1], *readme[3:]]))
    done = ci_checks(tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert "README.md's second command does not end with '&& ... pytest'" in done.stderr


# ------------------------------------------------------------- the README's example files
def test_the_haizea_guides_commands_name_shipped_files():
    """docs/haizea.md ("Coming from Haizea") opens with commands on shipped files."""
    section = (ROOT / "docs" / "haizea.md").read_text()
    block = section[section.index("```sh\n") + 6:section.index("```\n", section.index("```sh"))]
    names = [line.split()[2] for line in block.splitlines()]
    assert names == ["etc/haizea.conf", "etc/haizea-multi.conf"]
    assert all((ROOT / name).is_file() for name in names)


def test_the_shipped_haizea_configuration_runs(tmp_path, capsys):
    """etc/haizea.conf as Haizea 1.0 writes it: the 30-day trace (its first 150 jobs here)."""
    out = tmp_path / "run"
    assert cli.main(["simulate", str(ROOT / "etc" / "haizea.conf"), "--out", str(out),
                     "--set", "tracefile.max-jobs=150"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["leases_total"] == summary["leases_completed"] == 150
    run = json.loads((out / "run.json").read_text())
    assert Path(run["trace"]["path"]).resolve() == ROOT / "traces" / "sdsc-blue-30days.swf"
    assert run["effective"]["scheduling"]["backfilling"] == "aggressive"


def test_the_shipped_haizea_multi_file_runs(tmp_path):
    sweep = load_sweep(ROOT / "etc" / "haizea-multi.conf")
    assert sweep.profiles == ("nobackfilling", "aggressive")
    assert [name for name, _ in sweep.traces] == ["sdsc-blue-600requests"]
    outcome = run_sweep(sweep, tmp_path / "multi", jobs=1)
    assert outcome.done == 2 and not outcome.failed
    waits = {}
    for profile in sweep.profiles:
        run_dir = tmp_path / "multi" / profile / "sdsc-blue-600requests" / "seed-0"
        waits[profile] = json.loads((run_dir / "summary.json").read_text())["avg_wait"]
    assert waits["aggressive"] < waits["nobackfilling"]   # backfilling shortens the waits


@pytest.mark.parametrize("name", ["haizea.conf", "haizea-multi.conf"])
def test_the_shipped_haizea_files_are_haizeas_own_sections(name):
    """Only sections Haizea knows: a lease_manager section would not be Haizea's file."""
    parser = configparser.ConfigParser()
    assert parser.read(ROOT / "etc" / name), f"etc/{name} is not shipped"
    sections = {s.rpartition(":")[2] for s in parser.sections()}
    assert sections <= {"general", "simulation", "scheduling", "tracefile", "accounting",
                        "multi"}, sections
