"""The 30-day Blue Horizon trace with ``reevaluation = replan`` gives Haizea 1.0's start time
for every one of its 5,108 leases (``tests/reference/haizea10-sdsc-blue-30days-starts.txt``
says how Haizea's times were obtained)."""

from __future__ import annotations

import csv

import pytest

from lease_manager.run import load_run

from support import ROOT

REFERENCE = ROOT / "tests" / "reference" / "haizea10-sdsc-blue-30days-starts.txt"


def haizea_starts(reference=REFERENCE) -> list[float]:
    lines = reference.read_text().splitlines()
    return [float(line) for line in lines if line and not line.startswith("#")]


def starts(tmp_path, reevaluation: str) -> list[float]:
    """``etc/sample.ini`` (144 nodes, one VM per requested processor's node, aggressive
    backfilling, greedy host selection, no overheads) with ``reevaluation``."""
    run = load_run(ROOT / "etc" / "sample.ini", [f"scheduling.reevaluation={reevaluation}",
                                                  "scheduling.placement=when-planned"])
    run.run()
    run.write(tmp_path)
    with open(tmp_path / "leases.csv") as fh:
        rows = sorted(csv.DictReader(fh), key=lambda row: int(row["lease_id"]))
    return [float(row["start"]) for row in rows]


def test_replan_gives_haizeas_start_for_every_lease(tmp_path):
    expected = haizea_starts()
    assert len(expected) == 5108
    got = starts(tmp_path, "replan")
    assert len(got) == 5108
    differ = [i + 1 for i, (a, b) in enumerate(zip(got, expected)) if a != b]
    assert differ == []


def test_move_earlier_differs_where_haizea_replans(tmp_path):
    """Keeping a reservation's nodes unless it can start earlier (the default) gives 4,355
    of Haizea's 5,108 starts: the other leases are those that Haizea's fresh host ordering
    at a re-plan, and everything after it, changed."""
    same = sum(a == b for a, b in zip(starts(tmp_path, "move-earlier"), haizea_starts()))
    assert same == 4355


HAIZEA_FILE = """[general]
mode: simulated
lease-preparation: unmanaged
persistence-file: none
[simulation]
clock: simulated
starttime: 2006-11-25 13:00:00
resources: 144 CPU:100 Memory:1024
imagetransfer-bandwidth: 100
[scheduling]
policy-preemption: no-preemption
policy-host-selection: greedy
backfilling: aggressive
suspension: none
migration: no
shutdown-time: 0
enactment-overhead: 0
[tracefile]
tracefile: blue30.lwf
[accounting]
probes: best-effort
"""


@pytest.mark.long      # about 45 CPU-s
@pytest.mark.parametrize("suspension, reference", [
    ("none", REFERENCE),
    ("all", REFERENCE.with_name("haizea10-sdsc-blue-30days-suspension-starts.txt"))])
def test_haizeas_own_configuration_gives_its_starts(tmp_path, suspension, reference):
    """The configuration Haizea 1.0 ran (the reference files' headers), as a Haizea file, on
    the trace converted to LWF as it was: every start is Haizea's (Haizea's planning, greedy
    score and, with suspension, its suspensions and resumptions, not only its re-evaluation)."""
    import subprocess
    import sys

    (tmp_path / "conv.ini").write_text("[simulation]\nresources = 144 CPU:100 Memory:1024\n"
                                       "[tracefile]\nvm-resources = CPU:100 Memory:1024\n")
    subprocess.run([sys.executable, "-m", "lease_manager.cli", "convert",
                    str(ROOT / "traces" / "sdsc-blue-30days.swf"), str(tmp_path / "blue30.lwf"),
                    "-c", str(tmp_path / "conv.ini")], check=True, capture_output=True)
    (tmp_path / "haizea.conf").write_text(HAIZEA_FILE.replace("suspension: none",
                                                              f"suspension: {suspension}\n"
                                                              "suspend-rate: 32\n"
                                                              "resume-rate: 32"))
    run = load_run(tmp_path / "haizea.conf")
    run.run()
    run.write(tmp_path / "out")
    with open(tmp_path / "out" / "leases.csv") as fh:
        rows = sorted(csv.DictReader(fh), key=lambda row: int(row["lease_id"]))
    assert [float(row["start"]) for row in rows] == haizea_starts(reference)
