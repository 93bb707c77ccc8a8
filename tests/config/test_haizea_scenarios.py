"""Haizea's test scenarios under Haizea's own test configuration: every lease's start and end
as Haizea 1.0 computes them.

The workloads are those of Haizea's nine test LWF files (written out here; 4 nodes of CPU:100
Memory:1024, every VM a whole node), run under the options of Haizea's
``tests/base_config_simulator.conf`` (:data:`test_haizea_config.HAIZEA_TEST_CONFIG`, lease
preparation ``unmanaged``). The expected times were derived by hand from Haizea's semantics (in
each docstring) and agree with Haizea 1.0 run on the same files (its ``start.actual`` and
``end`` of every lease, in seconds from its ``starttime``). Haizea's figures used here:

- enactment overhead 2 s per VM: a shutdown takes 2 s per VM and is part of the lease (an
  advance reservation's interval includes it); a lease whose work ends early has none;
- suspension: ``override-suspend-time = 0``, so 0 + 2 s per VM; resumption 1024 MB / 32 MB/s
  + 2 s = 34 s per VM;
- a suspended lease queued with ``migration = yes`` may resume no earlier than now + the time
  to move its memory image (1024 MB at Haizea's 100 Mb/s = 81.92 s, rounded up: 82 s), and
  then at the next end of a VM reservation.

A Haizea file re-plans after early ends (``reevaluation = replan``) and times and plans
suspensions with Haizea's model (``suspendresume-model = haizea``). The same scenarios run
with ``lease-preparation: imagetransfer``, without and with ``image-caches``, as Haizea's
``test_simul_transfers_noreuse.py`` and ``test_simul_transfers_reuse.py`` do.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_haizea_config import HAIZEA_TEST_CONFIG

from lease_manager.run import load_run

HOUR, MIN = 3600, 60


def hms(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}.00"


def workload(name: str, site: int, requests: list[str]) -> str:
    """An LWF document named ``name``: a site of ``site`` nodes of 100 CPU and 1024 MB (as
    Haizea's tests have) and the ``<lease-request>`` elements ``requests``."""
    return f"""<?xml version="1.0"?>
<lease-workload name="{name}">
  <site>
    <resource-types names="CPU Memory"/>
    <nodes><node-set numnodes="{site}">
      <res type="CPU" amount="100"/><res type="Memory" amount="1024"/>
    </node-set></nodes>
  </site>
  <lease-requests>{''.join(requests)}
  </lease-requests>
</lease-workload>
"""


def lwf(leases: list[dict]) -> str:
    """An LWF file with Haizea's test site and ``leases`` (``arrival``, ``nodes``,
    ``duration``, optional ``start`` (an AR's), ``real``, ``preemptible``)."""
    requests = []
    for number, lease in enumerate(leases, 1):
        real = (f'<realduration time="{hms(lease["real"])}"/>' if "real" in lease else "")
        start = (f'<start><exact time="{hms(lease["start"])}"/></start>' if "start" in lease
                 else "<start/>")
        image = lease.get("image", f"foobar{number}.img")
        requests.append(f"""
    <lease-request arrival="{hms(lease['arrival'])}">{real}
      <lease id="{number}" preemptible="{str(lease.get('preemptible', True)).lower()}">
        <nodes><node-set numnodes="{lease['nodes']}">
          <res amount="100" type="CPU"/><res amount="1024" type="Memory"/>
        </node-set></nodes>
        {start}
        <duration time="{hms(lease['duration'])}"/>
        <software><disk-image id="{image}" size="1024"/></software>
      </lease>
    </lease-request>""")
    return workload("scenario", 4, requests)


def run_scenario(tmp_path: Path, leases: list[dict], settings: dict[str, str] | None = None
                 ) -> list[tuple[float, float]]:
    """Run ``leases`` under Haizea's test configuration (with ``settings``: its lines
    replaced); every lease's (start, end)."""
    (tmp_path / "trace.lwf").write_text(lwf(leases))
    config = tmp_path / "haizea.conf"
    text = HAIZEA_TEST_CONFIG.replace("TRACE", "trace.lwf")
    for old, new in (settings or {}).items():
        assert old in text
        text = text.replace(old, new)
    config.write_text(text)
    run = load_run(config)
    run.run()
    run.table.check()
    run.write(tmp_path / "out")
    with open(tmp_path / "out" / "leases.csv") as fh:
        rows = sorted(csv.DictReader(fh), key=lambda row: int(row["lease_id"]))
    assert all(row["state"] == "done" for row in rows)
    return [(float(row["start"]), float(row["end"])) for row in rows]


PREEMPTED_BE = dict(arrival=0, nodes=1, duration=HOUR, preemptible=True)
AR_AT_30 = dict(arrival=15 * MIN, nodes=4, start=30 * MIN, preemptible=False)


SCENARIOS = {
    # An AR (4 nodes, 30:00-60:00) preempts a running best-effort lease (1 node, 1 h). The
    # BE lease suspends in 0 + 2 s, ending at 30:00 (1,798 s of work done); the AR's VMs
    # run to 59:52 and shut down (4 x 2 s) by 60:00. Queued again at 30:00, the BE lease
    # may resume from 30:00 + 82 s; the AR holds every node then, so at the AR's end, 3,600:
    # resume 34 s, the remaining 1,802 s of work, shutdown 2 s: it ends at 5,438.
    "preemption": ([PREEMPTED_BE, dict(AR_AT_30, duration=30 * MIN)],
                   [(0, 5438), (1800, 3600)]),
    # The same, with a 15-minute AR and a BE lease that really runs 45 min: suspended at
    # 30:00 with 1,798 s done, it resumes at the AR's end (2,700) for 34 s and runs its
    # remaining 902 s, ending early at 3,636 (an early end has no shutdown).
    "preemption_prematureend": ([dict(PREEMPTED_BE, real=45 * MIN),
                                 dict(AR_AT_30, duration=15 * MIN)],
                                [(0, 3636), (1800, 2700)]),
    # As above, the AR really running 10 min: it ends at 2,400 (no shutdown). The BE lease,
    # suspended at 30:00, had reserved its resumption for the AR's end (2,700): a reservation
    # made in the future, so Haizea plans it again at the AR's early end, no earlier than
    # 2,400 + 82 s (moving its image, though it stays on its node): it resumes at 2,482 for
    # 34 s and runs its remaining 902 s, ending early at 3,418.
    "preemption_prematureend2": ([dict(PREEMPTED_BE, real=45 * MIN),
                                  dict(AR_AT_30, duration=15 * MIN, real=10 * MIN)],
                                 [(0, 3418), (1800, 2400)]),
    # AR #1 (2 nodes, 1:30-61:30) takes nodes 0 and 1, AR #2 (2 nodes, 30:00-90:00) nodes 2
    # and 3. The best-effort #3 (2 nodes, 1 h) at 0 runs on nodes 2 and 3 (the greedy order:
    # their capacity lasts longer) in front of AR #2 and suspends by 30:00 in 0 + 2 x 2 s
    # (one round of two VMs), with 1,796 s done. From 30:00 + 82 s every node is taken until
    # AR #1's end, 3,690: #3 resumes there on nodes 0 and 1 (migrated), in 32 s + 2 x 2 s,
    # runs its remaining 1,804 s and shuts down in 4 s: it ends at 5,534.
    "migrate": ([dict(arrival=0, nodes=2, start=90, duration=HOUR, preemptible=False),
                 dict(arrival=0, nodes=2, start=30 * MIN, duration=HOUR, preemptible=False),
                 dict(arrival=0, nodes=2, duration=HOUR)],
                [(90, 3690), (1800, 5400), (0, 5534)]),
    # A 1-node lease (1 h) runs from 0 and shuts down by 3,602; a 4-node lease (15 min)
    # arriving at 15:00 reserves the next end of a VM reservation, 3,602, and ends at
    # 3,602 + 900 + 4 x 2 = 4,510.
    "reservation": ([dict(arrival=0, nodes=1, duration=HOUR),
                     dict(arrival=15 * MIN, nodes=4, duration=15 * MIN)],
                    [(0, 3602), (3602, 4510)]),
    # The same, the first lease ending early at 30:00 (no shutdown): the reserved lease is
    # re-evaluated then and starts at once, ending at 1,800 + 900 + 8 = 2,708.
    "reservation_prematureend": ([dict(arrival=0, nodes=1, duration=HOUR, real=30 * MIN),
                                  dict(arrival=15 * MIN, nodes=4, duration=15 * MIN)],
                                 [(0, 1800), (1800, 2708)]),
    # An AR of 1 node, 15:00-30:00 (its shutdown inside the interval); a best-effort lease
    # of the same image at 45:00 starts at once and ends at 2,700 + 900 + 2 = 3,602.
    "reuse1": ([dict(arrival=0, nodes=1, start=15 * MIN, duration=15 * MIN,
                     preemptible=False, image="foobar.img"),
                dict(arrival=45 * MIN, nodes=1, duration=15 * MIN, image="foobar.img")],
               [(900, 1800), (2700, 3602)]),
    # Two ARs of 2 nodes each at 15:00-30:00 and a best-effort lease at 45:00.
    "reuse2": ([dict(arrival=0, nodes=2, start=15 * MIN, duration=15 * MIN,
                     preemptible=False),
                dict(arrival=0, nodes=2, start=15 * MIN, duration=15 * MIN,
                     preemptible=False, image="foobar2.img"),
                dict(arrival=45 * MIN, nodes=1, duration=15 * MIN, image="foobar2.img")],
               [(900, 1800), (900, 1800), (2700, 3602)]),
    # Eight leases of the whole site (15 min) at 0, one after another: 900 s of work and
    # 4 x 2 s of shutdown each, 908 s apart.
    "wait": ([dict(arrival=0, nodes=4, duration=15 * MIN) for _ in range(8)],
             [(908 * k, 908 * (k + 1)) for k in range(8)]),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_haizea_scenario_unmanaged(tmp_path, name):
    leases, expected = SCENARIOS[name]
    assert run_scenario(tmp_path, leases) == expected


#: Image transfers (Haizea's test with ``lease-preparation: imagetransfer``): every image is
#: 1,024 MB, sent at 100 Mb/s in 82 s, multicast, one transfer at a time. A best-effort lease
#: takes the repository's next free slot from its arrival and starts 82 s later at the
#: earliest; an AR's image is sent in the last free slot before its start, so ARs keep their
#: times. The shifts from the unmanaged runs:
IMAGETRANSFER = {
    # the BE lease starts at 82 (its transfer 0-82) and every later time of it moves by 82
    "preemption": [(82, 5520), (1800, 3600)],
    "preemption_prematureend": [(82, 3718), (1800, 2700)],
    # resumption: from 2,400 + 82 s (memory) + 82 s (its disk image moves too, Haizea's
    # estimate), 34 s, then 2,700 - 1,716 s done = 984 s: 3,582
    "preemption_prematureend2": [(82, 3582), (1800, 2400)],
    # #2's image is sent at its arrival (900-982); it starts at #1's end, 82 + 3,602
    "reservation": [(82, 3684), (3684, 4592)],
    # #1 ends early at 1,882; #2 is planned again and its transfer with it (the one done at
    # 900-982 is given up with the plan): the next slot, 1,882-1,964, then 908 s
    "reservation_prematureend": [(82, 1882), (1964, 2872)],
    # ARs' transfers 8-90 and 1,718-1,800 (EDF); #3's FIFO slot is 90-172: it runs 172-1,796
    # in front of AR #2, suspends, and resumes at 3,690 as before: 3,726 + 1,976 + 4 = 5,706
    "migrate": [(90, 3690), (1800, 5400), (172, 5706)],
    # the BE lease's image is sent at its arrival: 2,782
    "reuse1": [(900, 1800), (2782, 3684)],
    "reuse2": [(900, 1800), (900, 1800), (2782, 3684)],
    # transfers back to back from 0; each lease starts when the site frees: +82 throughout
    "wait": [(82 + 908 * k, 82 + 908 * (k + 1)) for k in range(8)],
}

#: With ``diskimage-reuse: image-caches`` the nodes keep the images they received: the same
#: as :data:`IMAGETRANSFER` except where an image is already on the nodes a lease needs.
IMAGE_CACHES = dict(
    IMAGETRANSFER,
    # #2's image reached all four nodes at 982 and stayed: re-planned at 1,882, it starts
    # at once
    reservation_prematureend=[(82, 1882), (1882, 2790)],
    # the AR left foobar.img on its node: the BE lease starts there at its arrival
    reuse1=[(900, 1800), (2700, 3602)],
    # AR #2's nodes hold foobar2.img: the BE lease starts on one of them at once
    reuse2=[(900, 1800), (900, 1800), (2700, 3602)],
)


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("reuse", ["none", "image-caches"])
def test_haizea_scenario_with_image_transfers(tmp_path, name, reuse):
    leases, _ = SCENARIOS[name]
    expected = (IMAGETRANSFER if reuse == "none" else IMAGE_CACHES)[name]
    settings = {"lease-preparation: unmanaged": "lease-preparation: imagetransfer",
                "diskimage-reuse: none": f"diskimage-reuse: {reuse}"}
    assert run_scenario(tmp_path, leases, settings) == expected
