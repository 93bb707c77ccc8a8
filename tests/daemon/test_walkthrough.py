"""The README's daemon walkthrough, as a user runs it: a real ``lease-manager serve`` with
the ``process`` backend, the client run from the user's project folder.

- ``request --command 'python3 train.py'`` runs ``train.py`` from the folder ``request`` ran
  in, with a clean environment: a variable of the daemon's environment does not reach the
  command; ``show-lease`` says where each VM's output and errors are;
- an advance reservation at a relative time (``-t +00:30:00``) is planned 30 minutes ahead;
- the shipped ``etc/lease.xml`` and Haizea's example LWF (several ``<node-set>`` groups in one
  lease) are accepted, their groups kept;
- a working folder in the state folder is refused.
"""

from __future__ import annotations

import json
import signal
import sys
from datetime import datetime
from pathlib import Path

import pytest
from lxml import etree

from daemon_support import (
    ProcessDaemon,
    kill_leftover_processes,
    lwf,
    lwf_request,
    wait_for,
    write_config,
)
from support import ROOT

TRAIN = """\
import os, pathlib
print("running in", pathlib.Path.cwd())
print("daemon's secret seen:", "DAEMON_ONLY_SECRET" in os.environ)
print("vm", os.environ["LM_VM_INDEX"], "of lease", os.environ["LM_LEASE_ID"])
"""


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def daemon(tmp_path, monkeypatch):
    monkeypatch.setenv("DAEMON_ONLY_SECRET", "x")   # in the daemon's environment
    config = write_config(tmp_path, resources="4 CPU:2 Memory:2048", enactment="process",
                          vm="CPU:1 Memory:512", extra="[process]\ncgroups = none")
    d = ProcessDaemon(config)
    yield d
    d.terminate(signal.SIGTERM)
    kill_leftover_processes(d.config)


def test_command_runs_in_the_clients_folder_with_a_clean_environment(daemon, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    done = daemon.cli("request", "-t", "best_effort", "-d", "00:01:00", "-n", "2", "--command",
                      f"{sys.executable} train.py", "--json", cwd=project)
    lease = json.loads(done.stdout)
    assert lease["request"]["workdir"] == str(project.resolve())
    shown = json.loads(daemon.cli("show-lease", str(lease["id"]), "--json").stdout)
    logs = shown["logs"]
    assert [log["vm"] for log in logs] == ["0", "1"]
    for log in logs:
        out = Path(log["out"])
        wait_for(lambda out=out: out.is_file() and "of lease" in out.read_text(), 20,
                 what="the command's output")
        text = out.read_text()
        assert f"running in {project.resolve()}" in text
        assert "daemon's secret seen: False" in text
        assert Path(log["err"]).is_file() and Path(log["err"]).read_text() == ""
    human = daemon.cli("show-lease", str(lease["id"])).stdout
    assert f"in folder: {project.resolve()}" in human
    assert f"VM 1 output: {logs[1]['out']}  errors: {logs[1]['err']}" in human


def test_relative_advance_reservation_and_shipped_lwf_files(daemon, tmp_path):
    ar = json.loads(daemon.cli("request", "-t", "+00:30:00", "-d", "00:30:00", "-n", "4",
                               "--json", cwd=tmp_path).stdout)
    assert ar["type"] == "advance-reservation" and ar["state"] == "scheduled"
    assert epoch(ar["plan"][0]["start"]) - epoch(ar["submitted"]) == pytest.approx(1800, abs=1)

    shipped = json.loads(daemon.cli("request", "-f", str(ROOT / "etc" / "lease.xml"),
                                    "--json", cwd=tmp_path).stdout)
    assert [(v["name"], v["type"]) for v in shipped] == [
        ("preprocess", "best-effort"), ("demo-slot", "advance-reservation")]
    assert shipped[1]["request"]["groups"] == [
        {"nodes": 1, "resources": {"CPU": 2.0, "Memory": 1024.0}},
        {"nodes": 2, "resources": {"CPU": 1.0, "Memory": 512.0}}]
    assert len(shipped[1]["plan"][0]["nodes"]) == 3     # one host per VM
    assert all(v["request"]["workdir"] == str(tmp_path.resolve()) for v in shipped)


def test_haizea_example_lwf_with_several_node_sets(tmp_path):
    """Haizea's four-node example site (CPU in hundredths of a core): lease 3 asks for one
    VM of 50 CPU and two of 100, immediately; it is planned on three VMs."""
    example = ROOT / "tests" / "lwf" / "example.lwf"
    alone = tmp_path / "lease-3.lwf"                 # lease 3 on its own: it starts at once
    tree = etree.parse(str(example))
    for request in tree.getroot().find("lease-requests").findall("lease-request"):
        if request.find("lease").get("id") != "3":
            request.getparent().remove(request)
    tree.write(str(alone))
    config = write_config(tmp_path, resources="4 CPU:100 Memory:1024", enactment="simulated")
    d = ProcessDaemon(config)
    try:
        mixed = json.loads(d.cli("request", "-f", str(alone), "--json",
                                 cwd=tmp_path).stdout)     # one lease: shown alone
        assert mixed["type"] == "immediate" and mixed["state"] == "active"
        assert mixed["request"]["groups"] == [
            {"nodes": 1, "resources": {"CPU": 50.0, "Memory": 256.0}},
            {"nodes": 2, "resources": {"CPU": 100.0, "Memory": 1024.0}}]
        assert mixed["request"]["nodes"] == 3 and len(mixed["plan"][0]["nodes"]) == 3
        # the whole file: every lease is taken and answered. Leases 1 and 4 get future
        # reservations, lease 2's advance reservation is planned (it will preempt the first
        # copy of lease 3), and the second copy of lease 3 finds no room now
        views = json.loads(d.cli("request", "-f", str(example), "--json",
                                 cwd=tmp_path).stdout)
        assert [(v["name"], v["state"]) for v in views] == [
            ("1", "scheduled"), ("2", "scheduled"), ("3", "rejected"), ("4", "scheduled")]
        assert views[2]["reason"] == "no room now (an immediate lease is never queued)"
    finally:
        d.terminate(signal.SIGTERM)


def test_a_working_folder_in_the_state_folder_is_refused(daemon):
    done = daemon.cli("request", "-d", "60", "--command", "cat token", check=False,
                      cwd=daemon.state)
    assert done.returncode != 0
    assert "workdir" in done.stderr and "state folder" in done.stderr


def test_a_request_without_a_workdir_runs_outside_the_state_folder(daemon, tmp_path):
    """A raw JSON request without ``workdir``, and an LWF body without ``?workdir=``, used to
    run in ``STATE/enactment/process/lease-N/vm-M``, where ``cat ../../../../token`` printed
    the daemon's token. They run under ``[daemon] work-root`` now (``state-work`` here)."""
    probe = ("pwd; for up in .. ../.. ../../.. ../../../.. ../../../../..; do cat $up/token; "
             "done; echo END")
    first = daemon.client.submit({"duration": 60, "nodes": 1, "command": probe})
    xml = lwf(lwf_request("a", extra=f'<extra><attr name="command" value="{probe}"/></extra>'))
    second = daemon.client.submit_lwf(xml.encode())[0]
    state = daemon.state.resolve()
    token = daemon.token
    for lease in (first, second):
        shown = daemon.client.lease(lease["id"])
        assert shown["request"]["command"] == probe
        out = Path(shown["logs"][0]["out"])
        wait_for(lambda out=out: out.is_file() and "END" in out.read_text(), 20,
                 what="the command's output")
        text = out.read_text()
        cwd = Path(text.splitlines()[0]).resolve()
        assert cwd != state and state not in cwd.parents
        assert cwd.parent.parent == (tmp_path / "state-work").resolve()
        assert token not in text
