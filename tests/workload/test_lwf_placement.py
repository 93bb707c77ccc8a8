"""An LWF trace whose leases are all alike (best-effort and immediate leases of one VM shape)
is counted (``placement = at-start``) under ``auto``, with the pinned placement's schedule where
the two agree; one with an advance reservation, a deadline lease or another VM shape keeps
``when-planned``, and naming ``at-start`` for it is refused in one line."""

from __future__ import annotations

import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.plugins import Plugins
from lease_manager.run import Run


def request(lease_id: int, arrival: int, vms: int, seconds: int, *, start: str = "<start/>",
            memory: int = 512) -> str:
    def hms(t: int) -> str:
        return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.00"
    return f"""
    <lease-request arrival="{hms(arrival)}">
      <realduration time="{hms(seconds)}"/>
      <lease id="{lease_id}" preemptible="yes">
        <nodes><node-set numnodes="{vms}">
          <res type="CPU" amount="100"/><res type="Memory" amount="{memory}"/>
        </node-set></nodes>
        {start}
        <duration time="{hms(seconds)}"/>
        <software><none/></software>
      </lease>
    </lease-request>"""


def lwf(path, *requests: str):
    path.write_text('<?xml version="1.0"?>\n<lease-workload name="t"><lease-requests>'
                    + "".join(requests) + "\n</lease-requests></lease-workload>\n")
    return path


NOW = "<start><now/></start>"
#: EASY on 4 nodes of one VM each
ALIKE = (request(1, 0, 2, 600), request(2, 60, 4, 600), request(3, 120, 2, 300, start=NOW),
         request(4, 180, 1, 600, start=NOW), request(5, 450, 1, 100, start=NOW))


def run_of(trace, *settings: str) -> Run:
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [
        "simulation.resources=4 CPU:100 Memory:1024", f"tracefile.tracefile={trace}",
        "scheduling.backfilling=aggressive", *settings])
    return Run(config, plugins)


@pytest.mark.parametrize("placement", ["auto", "at-start", "when-planned"])
def test_best_effort_and_immediate_leases_of_one_shape(tmp_path, placement):
    """4 nodes, VMs of CPU 100 (one a node), EASY:

    n0 [1: 0-600          ][2: 600-1200]
    n1 [1: 0-600          ][2: 600-1200]
    n2    [3: 120-420] [5: 450-550]   [2: 600-1200]
    n3    [3: 120-420]                [2: 600-1200]

    2 (best-effort, 4 VMs, at 60) waits for 1 and holds the reservation at 600; 3 (immediate,
    2 VMs for 300 s, at 120) fits now on n2-n3 and ends before 600; 4 (immediate, 1 VM for
    600 s, at 180) finds no free node and is rejected; 5 (immediate, 1 VM for 100 s, at 450)
    fits on n2 before 600. auto counts: every lease is best-effort or immediate, of one
    shape (CPU 100, Memory 512), not [tracefile] vm-resources' (CPU 1).
    """
    run = run_of(lwf(tmp_path / "alike.lwf", *ALIKE), f"scheduling.placement={placement}")
    summary = run.run()
    run.table.check()
    expected = {"auto": "at-start (auto)"}.get(placement, placement)
    assert summary["placement"] == expected
    assert run.table.counted == (placement != "when-planned")
    run.write(tmp_path / "out")
    rows = (tmp_path / "out" / "leases.csv").read_text().splitlines()[1:]
    got = {int(r.split(",")[1]): tuple(r.split(",")[3:7]) for r in rows}
    assert got == {1: ("done", "0", "0", "600"), 2: ("done", "60", "600", "1200"),
                   3: ("done", "120", "120", "420"), 4: ("rejected", "180", "", ""),
                   5: ("done", "450", "450", "550")}


@pytest.mark.parametrize("odd, why", [
    (request(9, 90, 1, 60, start='<start><exact time="00:20:00.00"/></start>'),
     "is an advance reservation"),
    (request(9, 90, 1, 60, memory=256), "has VMs of another shape"),
])
def test_an_lwf_trace_that_is_not_all_alike_keeps_when_planned(tmp_path, odd, why):
    trace = lwf(tmp_path / "odd.lwf", *ALIKE[:2], odd)
    with run_of(trace) as run:
        assert run.placement.label() == "when-planned (auto: LWF trace)"
    with pytest.raises(ConfigError) as err:
        run_of(trace, "scheduling.placement=at-start")
    assert f"(LWF trace: the lease request at {trace}:25 {why}" in str(err.value)
    assert "\n" not in str(err.value)
