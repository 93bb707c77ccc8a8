"""Haizea 1.1's deadline scenarios under Haizea 1.1's test configuration with its
``mapper: deadline`` and ``policy-preemption: deadline`` (as its ``tests/test_deadline.py``
sets them): which leases are accepted and completed and which are rejected.

The 29 workloads are those of Haizea 1.1's ``tests/deadline*.lwf`` files, written out here as
tables: every lease is a deadline lease of whole nodes (CPU:100 Memory:1024, on a site of 4
such nodes, 5 in ``deadline12``), with an earliest start, a requested duration, a deadline and
sometimes a shorter real duration. The expected states are those Haizea's test asserts, except
where noted in :data:`DIFFERS`. Every run also checks the run's invariants, among them that no
lease starts before its earliest start and no deadline lease completes after its deadline.

Haizea's figures used: memory images are written and read at 32 MB/s, 1024 MB / 32 = 32 s per
VM (one VM per node, ``local`` exclusion: 32 s per lease); no enactment overhead.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_haizea_config import HAIZEA_TEST_CONFIG
from test_haizea_scenarios import hms, workload

from lease_manager.run import load_run

#: name: (nodes of the site, expected state of each lease by id (D done, R rejected, ? not
#: checked), [(id, arrival, nodes, earliest start, duration, deadline, real duration)])
WORKLOADS: dict[str, tuple[int, str, list[tuple]]] = {
    'deadline1': (4, 'DD', [
        (1, 0, 4, 1800, 1800, 6300, None),
        (2, 900, 4, 1800, 1800, 3600, None),
    ]),
    'deadline2': (4, 'DD', [
        (1, 0, 4, 1800, 3600, 10800, None),
        (2, 1200, 4, 3600, 1800, 5400, None),
    ]),
    'deadline3': (4, 'DD', [
        (1, 0, 4, 3600, 1800, 5400, None),
        (2, 900, 4, 1800, 1800, 5400, None),
    ]),
    'deadline4': (4, 'DR', [
        (1, 0, 4, 3600, 1800, 5400, None),
        (2, 900, 4, 3600, 1800, 6000, None),
    ]),
    'deadline5': (4, 'DD', [
        (1, 0, 4, 1800, 3600, 8100, None),
        (2, 2700, 4, 3600, 1800, 5400, None),
    ]),
    'deadline6': (4, 'DDD', [
        (1, 0, 4, 1800, 1800, 5400, None),
        (2, 900, 4, 1800, 3600, 10800, None),
        (3, 2700, 4, 3600, 1800, 7200, None),
    ]),
    'deadline7': (4, 'DDD', [
        (1, 0, 4, 3600, 1800, 5400, None),
        (2, 900, 4, 1800, 3600, 10800, None),
        (3, 4500, 4, 6300, 900, 7200, None),
    ]),
    'deadline8': (4, 'DDR', [
        (1, 0, 4, 3600, 1800, 5400, None),
        (2, 900, 4, 1800, 3600, 7200, None),
        (3, 2700, 4, 3600, 1800, 7200, None),
    ]),
    'deadline9_1': (4, 'DDD', [
        (1, 0, 2, 1800, 3600, 36000, None),
        (2, 0, 2, 1800, 3600, 7200, None),
        (3, 900, 2, 2700, 1800, 4500, None),
    ]),
    'deadline9_2': (4, 'DDD', [
        (1, 0, 2, 1800, 3600, 36000, None),
        (2, 0, 2, 1800, 3600, 7200, None),
        (3, 900, 2, 2700, 1800, 4500, None),
    ]),
    'deadline10_1': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, 5400),
        (2, 900, 4, 3600, 900, 4500, 600),
        (3, 1200, 4, 7200, 900, 8100, 600),
    ]),
    'deadline10_2': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, 5400),
        (2, 2400, 4, 3600, 900, 4500, 600),
        (3, 2700, 4, 7200, 900, 8100, 600),
    ]),
    'deadline10_3': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, 5400),
        (2, 2700, 4, 3600, 900, 4500, 600),
        (3, 6300, 4, 7200, 900, 8100, 600),
    ]),
    'deadline10_4': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, 5400),
        (2, 900, 4, 3600, 900, 4500, None),
        (3, 1200, 4, 7200, 900, 8100, None),
    ]),
    'deadline10_5': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, 5400),
        (2, 2400, 4, 3600, 900, 4500, None),
        (3, 2700, 4, 7200, 900, 8100, None),
    ]),
    'deadline10_6': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, 5400),
        (2, 2700, 4, 3600, 900, 4500, None),
        (3, 6300, 4, 7200, 900, 8100, None),
    ]),
    'deadline10_7': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, None),
        (2, 900, 4, 3600, 900, 4500, 600),
        (3, 1200, 4, 7200, 900, 8100, 600),
    ]),
    'deadline10_8': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, None),
        (2, 2400, 4, 3600, 900, 4500, 600),
        (3, 2700, 4, 7200, 900, 8100, 600),
    ]),
    'deadline10_9': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, None),
        (2, 2700, 4, 3600, 900, 4500, 600),
        (3, 6300, 4, 7200, 900, 8100, 600),
    ]),
    'deadline10_10': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, None),
        (2, 900, 4, 3600, 900, 4500, None),
        (3, 1200, 4, 7200, 900, 8100, None),
    ]),
    'deadline10_11': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, None),
        (2, 2400, 4, 3600, 900, 4500, None),
        (3, 2700, 4, 7200, 900, 8100, None),
    ]),
    'deadline10_12': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, None),
        (2, 2700, 4, 3600, 900, 4500, None),
        (3, 6300, 4, 7200, 900, 8100, None),
    ]),
    'deadline11_1': (4, 'DDD', [
        (1, 0, 3, 1800, 7200, 36000, None),
        (2, 900, 2, 3600, 1800, 5400, None),
        (3, 1200, 2, 4500, 1800, 6300, None),
    ]),
    'deadline11_2': (4, 'DDD', [
        (1, 0, 3, 1800, 7200, 36000, None),
        (2, 2400, 2, 3600, 1800, 5400, None),
        (3, 2700, 2, 4500, 1800, 6300, None),
    ]),
    'deadline12': (5, 'DDDDDDDD?', [
        (1, 0, 1, 1800, 1800, 10800, None),
        (2, 0, 1, 900, 1800, 2700, None),
        (3, 0, 2, 900, 1800, 2700, None),
        (4, 0, 1, 1800, 3600, 36000, None),
        (5, 0, 2, 2700, 900, 3600, None),
        (6, 0, 1, 2700, 3600, 36000, None),
        (7, 0, 3, 3600, 1800, 6300, None),
        (8, 0, 1, 36000, 900, 72000, None),
        (9, 1200, 1, 1800, 900, 4500, None),
    ]),
    'deadline13': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, None),
        (2, 2100, 4, 2700, 900, 3600, None),
        (3, 2400, 4, 4500, 900, 7200, None),
    ]),
    'deadline14': (4, 'DDD', [
        (1, 0, 4, 1800, 7200, 36000, 3600),
        (2, 900, 4, 2700, 900, 3600, None),
        (3, 1200, 4, 4500, 900, 7200, None),
    ]),
    'deadline15': (4, 'DDDR', [
        (1, 0, 2, 1800, 3600, 36000, None),
        (2, 900, 2, 1800, 3600, 14400, None),
        (3, 0, 4, 5400, 12600, 18000, None),
        (4, 1200, 4, 3600, 900, 4500, None),
    ]),
    'deadline16': (4, 'DDDDDD', [
        (1, 0, 4, 1800, 16200, 18000, 1800),
        (2, 0, 4, 18000, 3600, 21600, None),
        (3, 0, 2, 1800, 14400, 36000, None),
        (4, 0, 2, 1800, 7200, 36000, None),
        (5, 0, 2, 1800, 10800, 72000, None),
        (6, 0, 2, 1800, 3600, 432000, None),
    ]),
}

#: where our outcome differs from what Haizea's test expects, and why
DIFFERS = {
    # #1 holds [3600, 5400], exactly its window. #2 (1 h in [1800, 7200]) fits only around
    # it: 1800-3600 and 5400-7200 leave no hour, and running in two parts costs a 32 s
    # suspension and a 32 s resumption, ending at 7264. Preempting #1 at 1800 would end it
    # at 1800 + 32 + 3600 + 32 + 1800 = 7264 > 5400, so Haizea's own DeadlinePolicy scores
    # it -1. Haizea's expectation (#2 done, #3 rejected) needs #1 to run outside its window
    # (the defect this file's invariants catch). We reject #2, and #3 takes [5400, 7200].
    "deadline8": "DRD",
}


def lwf(site: int, leases: list[tuple]) -> str:
    """An LWF file of ``site`` whole nodes and the deadline ``leases``."""
    requests = []
    for lease_id, arrival, nodes, start, duration, deadline, real in leases:
        realtag = f'<realduration time="{hms(real)}"/>' if real is not None else ""
        requests.append(f"""
    <lease-request arrival="{hms(arrival)}">{realtag}
      <lease id="{lease_id}" preemptible="true">
        <nodes><node-set numnodes="{nodes}">
          <res amount="100" type="CPU"/><res amount="1024" type="Memory"/>
        </node-set></nodes>
        <start><exact time="{hms(start)}"/></start>
        <duration time="{hms(duration)}"/>
        <deadline time="{hms(deadline)}"/>
        <software><disk-image id="foobar1.img" size="1024"/></software>
      </lease>
    </lease-request>""")
    return workload("deadline", site, requests)


#: Haizea 1.1's tests/base_config_simulator.conf, as test_deadline.py sets it
HAIZEA11_DEADLINE_CONFIG = (
    HAIZEA_TEST_CONFIG
    .replace("imagetransfer-bandwidth: 100\n", "imagetransfer-bandwidth: 100\nsanity-check: true\n")
    .replace("mapper: greedy", "mapper: deadline")
    .replace("policy-preemption: ar-preempts-everything", "policy-preemption: deadline")
    .replace("enactment-overhead: 2\n", "enactment-overhead: 0\n")
    .replace("override-suspend-time: 0\n", "")
    .replace("probes: ar best-effort immediate cpu-utilization",
             "probes: ar best-effort immediate cpu-utilization deadline price lease-extras"))


def run_deadline_workload(tmp_path: Path, name: str) -> dict[str, dict[str, str]]:
    """Run workload ``name``; each lease's leases.csv row by the file's lease id."""
    site, _, leases = WORKLOADS[name]
    (tmp_path / "trace.lwf").write_text(lwf(site, leases))
    config = tmp_path / "haizea.conf"
    config.write_text(HAIZEA11_DEADLINE_CONFIG.replace("TRACE", "trace.lwf"))
    run = load_run(config)
    run.run()   # (its invariants are checked at the end of the run)
    run.table.check()
    run.write(tmp_path / "out")
    with open(tmp_path / "out" / "leases.csv") as fh:
        return {row["source_id"]: row for row in csv.DictReader(fh)}


def test_the_configuration_is_haizea_11s():
    for line in ("mapper: deadline", "policy-preemption: deadline", "enactment-overhead: 0",
                 "sanity-check: true", "suspension: all", "suspend-rate: 32", "migration: yes"):
        assert f"\n{line}\n" in HAIZEA11_DEADLINE_CONFIG
    assert "override-suspend-time" not in HAIZEA11_DEADLINE_CONFIG


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_haizea_11_deadline_workload(tmp_path, name):
    rows = run_deadline_workload(tmp_path, name)
    expected = DIFFERS.get(name, WORKLOADS[name][1])
    letters = {"done": "D", "rejected": "R"}
    got = "".join("?" if want == "?" else letters.get(rows[str(i)]["state"], "X")
                  for i, want in enumerate(expected, 1))
    assert got == expected
    for lease_id, _, _, start, _, deadline, _ in WORKLOADS[name][2]:
        row = rows[str(lease_id)]
        if row["state"] == "done":
            assert float(row["start"]) >= start and float(row["end"]) <= deadline
