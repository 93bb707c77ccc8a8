"""SWF <-> LWF conversion and merging workloads by arrival time."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lease_manager.errors import TraceError
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.resources import ResourceTypes
from lease_manager.workload.convert import lwf_to_swf, merge_workloads, swf_to_lwf
from lease_manager.workload.lwf import read_lwf
from lease_manager.workload.lwf_writer import write_lwf
from lease_manager.workload.swf import SWFConversion, SWFReader, TraceStats, swf_leases

from support import ROOT, TRACES

EXAMPLE = ROOT / "tests" / "lwf" / "example.lwf"
TYPES = ResourceTypes(("CPU", "Memory"))
VM = np.array([1.0, 1024.0])
BLUE = TRACES / "sdsc-blue-600requests.swf"


def same(a: Lease, b: Lease) -> None:
    """The same lease, read back from LWF: a lease that did not say whether it is preemptible
    says so there (``preemptible="true"``, which Haizea requires), with the same meaning."""
    assert (a.id, a.type, a.submit, a.requested_duration, a.actual_duration, a.start_request,
            a.deadline, a.source_id, {"preemptible": True, **a.extra}) == \
           (b.id, b.type, b.submit, b.requested_duration, b.actual_duration, b.start_request,
            b.deadline, b.source_id, {"preemptible": True, **b.extra})
    assert a.vms.counts == b.vms.counts
    np.testing.assert_array_equal(a.vms.vectors, b.vms.vectors)


def direct(path, conv, stats=None):
    return list(swf_leases(SWFReader(path), conv, stats))


# ----------------------------------------------------------------------------- SWF -> LWF
@pytest.mark.parametrize("conv", [
    SWFConversion(vm_vector=VM),
    SWFConversion(vm_vector=VM, procs_per_vm=4, paradigm="cloud", window_start=3600,
                  window_length=86400, rebase=True),
    SWFConversion(vm_vector=VM, max_jobs=50, queues=(1, 2)),
], ids=["default", "window-cloud-rebase", "queues-max-jobs"])
def test_swf_to_lwf_gives_the_leases_of_a_replay(tmp_path, conv):
    out = tmp_path / "blue.lwf"
    stats = swf_to_lwf(BLUE, out, conv, TYPES)
    expected_stats = TraceStats()
    expected = direct(BLUE, conv, expected_stats)
    assert stats == expected_stats and stats.replayed == len(expected) > 0
    got = read_lwf(out, TYPES).leases
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        same(a, b)
    text = out.read_text()
    assert "Converted from the SWF trace sdsc-blue-600requests.swf" in text
    assert f"SWF jobs read: {stats.read}; leases written: {stats.replayed}" in text


def test_swf_to_lwf_writes_the_site_and_checks_the_vector(tmp_path):
    from lease_manager.kernel.resources import parse_site

    site = parse_site("144 CPU:8 Memory:16384")
    out = tmp_path / "blue.lwf"
    swf_to_lwf(BLUE, out, SWFConversion(vm_vector=VM, max_jobs=3), TYPES, site=site, name="b")
    w = read_lwf(out)
    assert (w.name, w.site.count, len(w.leases)) == ("b", 144, 3)
    with pytest.raises(ValueError, match="resource types"):
        swf_to_lwf(BLUE, out, SWFConversion(vm_vector=np.array([1.0])), TYPES)


# ----------------------------------------------------------------------------- LWF -> SWF
def test_lwf_to_swf_converts_best_effort_and_counts_the_rest(tmp_path):
    out = tmp_path / "example.swf"
    stats = lwf_to_swf(EXAMPLE, out, TYPES)
    assert (stats.read, stats.converted) == (4, 1)
    assert stats.skipped == {"advance-reservation lease": 1, "immediate lease": 1,
                             "deadline lease": 1}
    text = out.read_text()
    assert "; Note: 3 of 4 leases could not be expressed in SWF and were skipped" in text
    assert "; MaxNodes: 4" in text
    jobs = [line.split() for line in text.splitlines() if not line.startswith(";")]
    # job 1, submit 0, run 1200 (real duration), 2 processors, requested 1800 s
    assert jobs == [["1", "0", "-1", "1200", "2", "-1", "-1", "2", "1800"] + ["-1"] * 9]
    # replaying the SWF file with the lease's VM size gives the lease back (but its id/extras)
    (lwf_lease,) = [lease for lease in read_lwf(EXAMPLE, TYPES).leases
                    if lease.type is LeaseType.BEST_EFFORT]
    (swf_lease,) = direct(out, SWFConversion(vm_vector=np.array([100.0, 512.0])))
    assert (swf_lease.submit, swf_lease.requested_duration, swf_lease.actual_duration) == \
        (lwf_lease.submit, lwf_lease.requested_duration, lwf_lease.actual_duration)
    assert swf_lease.vms.counts == lwf_lease.vms.counts
    np.testing.assert_array_equal(swf_lease.vms.vectors, lwf_lease.vms.vectors)


def test_lwf_to_swf_procs_per_vm_and_round_trip(tmp_path):
    """SWF -> LWF -> SWF -> leases: the same leases as the original SWF gives."""
    conv = SWFConversion(vm_vector=VM, procs_per_vm=2)
    swf_to_lwf(BLUE, tmp_path / "b.lwf", conv, TYPES)
    stats = lwf_to_swf(tmp_path / "b.lwf", tmp_path / "b.swf", TYPES, procs_per_vm=2)
    assert not stats.skipped
    original, back = direct(BLUE, conv), direct(tmp_path / "b.swf", conv)
    assert len(original) == len(back) == stats.converted
    for a, b in zip(original, back):
        assert (a.submit, a.requested_duration, a.actual_duration, a.vms.counts) == \
            (b.submit, b.requested_duration, b.actual_duration, b.vms.counts)


def test_lwf_to_swf_strict_names_the_line(tmp_path):
    with pytest.raises(TraceError) as info:
        lwf_to_swf(EXAMPLE, tmp_path / "x.swf", TYPES, strict=True)
    err = info.value
    lines = EXAMPLE.read_text().splitlines()
    assert err.file == str(EXAMPLE)
    assert lines[err.line - 1].strip() == '<lease-request arrival="00:15:00.00">'
    assert "lease 2 cannot be expressed in SWF (advance-reservation lease)" in str(err)
    assert not (tmp_path / "x.swf").exists()


def test_lwf_to_swf_skips_other_vm_sizes_and_unlimited(tmp_path):
    vms = VMRequest.uniform(2, [1, 1024])
    leases = [Lease(1, LeaseType.BEST_EFFORT, 0, vms, 60),
              Lease(2, LeaseType.BEST_EFFORT, 1, VMRequest.uniform(1, [2, 1024]), 60),
              Lease(3, LeaseType.BEST_EFFORT, 2, vms, math.inf),
              Lease(4, LeaseType.BEST_EFFORT, 3, VMRequest((1, 1), np.array([[1, 1], [2, 2]])),
                    60)]
    write_lwf(tmp_path / "w.lwf", leases, types=TYPES)
    stats = lwf_to_swf(tmp_path / "w.lwf", tmp_path / "w.swf", TYPES, vm_vector=[1, 1024])
    assert stats.converted == 1
    assert stats.skipped == {"VM size differs from the given VM vector": 1,
                             "unlimited duration": 1, "VMs of several sizes": 1}
    (job,) = direct(tmp_path / "w.swf", SWFConversion(vm_vector=VM))
    assert (job.submit, job.requested_duration, job.actual_duration) == (0, 60, 60)


# -------------------------------------------------------------------------------- merging
def test_merge_an_swf_trace_with_injected_ars(tmp_path):
    conv = SWFConversion(vm_vector=VM, max_jobs=20)
    swf = direct(BLUE, conv)
    ars = [Lease(1, LeaseType.ADVANCE_RESERVATION, t, VMRequest.uniform(1, VM), 600,
                 start_request=t + 3600, source_id=f"ar{i}")
           for i, t in enumerate([swf[0].submit, swf[5].submit + 1, swf[-1].submit + 10])]
    write_lwf(tmp_path / "ars.lwf", ars, types=TYPES)
    injected = read_lwf(tmp_path / "ars.lwf", TYPES).leases

    merged = list(merge_workloads(direct(BLUE, conv), injected))
    assert [lease.id for lease in merged] == list(range(1, 24))
    assert [lease.submit for lease in merged] == sorted(lease.submit for lease in merged)
    # ties keep source order: the SWF lease submitted with ar0 comes first
    assert [m.source_id for m in merged[:2]] == [swf[0].source_id, "ar0"]
    positions = [i for i, m in enumerate(merged) if m.type is LeaseType.ADVANCE_RESERVATION]
    assert positions == [1, 7, 22]
    assert merged[-1].source_id == "ar2"


def test_merge_streams_and_checks_order():
    def endless(start):
        for i in itertools.count():
            yield Lease(0, LeaseType.BEST_EFFORT, start + 10 * i, VMRequest.uniform(1, VM), 5)

    first = list(itertools.islice(merge_workloads(endless(0), endless(5), first_id=7), 5))
    assert [(m.id, m.submit) for m in first] == [(7, 0), (8, 5), (9, 10), (10, 15), (11, 20)]

    bad = [Lease(1, LeaseType.BEST_EFFORT, t, VMRequest.uniform(1, VM), 5, origin=f"x.swf:{n}")
           for n, t in ((3, 10), (4, 5))]
    with pytest.raises(TraceError) as info:
        list(merge_workloads(bad))
    assert (info.value.file, info.value.line) == ("x.swf", 4)
    assert "not in submit order" in str(info.value)


@pytest.mark.long
def test_convert_command_round_trip_replays_the_same(tmp_path):
    """SWF -> LWF -> SWF with `lease-manager convert`; replaying each gives the same schedule,
    with reservations placed when planned and under auto, which counts all three (the LWF's
    leases are best-effort leases of one VM shape)."""
    import csv
    import json
    import subprocess
    import sys

    from support import ROOT
    swf = ROOT / "traces" / "sdsc-blue-600requests.swf"
    ini = ROOT / "etc" / "sample.ini"
    lwf, back = tmp_path / "t.lwf", tmp_path / "back.swf"
    cli = [sys.executable, "-m", "lease_manager.cli"]
    subprocess.run(cli + ["convert", str(swf), str(lwf), "-c", str(ini)], check=True,
                   capture_output=True)
    subprocess.run(cli + ["convert", str(lwf), str(back), "-c", str(ini)], check=True,
                   capture_output=True)

    def schedule(trace, placement):
        out = tmp_path / f"out-{trace.name}-{placement}"
        subprocess.run(cli + ["simulate", str(ini), "-q", "--out", str(out),
                              "--set", f"tracefile.tracefile={trace}",
                              "--set", f"scheduling.placement={placement}"], check=True)
        assert json.loads((out / "summary.json").read_text())["placement"] == (
            "at-start (auto)" if placement == "auto" else placement)
        with (out / "leases.csv").open() as fh:
            return [(r["submit"], r["start"], r["end"], r["vms"]) for r in csv.DictReader(fh)]

    for placement in ("when-planned", "auto"):
        assert schedule(swf, placement) == schedule(lwf, placement) == schedule(back, placement)


def test_converted_lwf_has_what_haizea_requires(tmp_path):
    """Haizea 1.0 and 1.1 read ``preemptible`` on every ``<lease>`` and stopped on LWF written
    by ``convert`` without it. Checked against Haizea's documented format (its manual's LWF
    chapter): each ``<lease>`` has ``preemptible`` (true/false), ``<nodes>`` of ``<node-set
    numnodes>`` with ``<res type amount>``, ``<start>``, ``<duration time>`` and
    ``<software>`` holding ``<disk-image id size>`` or ``<none/>``; each ``<lease-request>``
    has ``arrival``."""
    from lxml import etree

    from lease_manager.workload.convert import swf_to_lwf

    out = tmp_path / "t.lwf"
    swf_to_lwf(BLUE, out, SWFConversion(vm_vector=VM), TYPES)
    root = etree.parse(str(out)).getroot()
    requests = root.findall("lease-requests/lease-request")
    assert requests
    for request in requests:
        assert request.get("arrival")
        lease = request.find("lease")
        assert lease.get("preemptible") in ("true", "false")
        node_sets = lease.findall("nodes/node-set")
        assert node_sets and all(ns.get("numnodes") for ns in node_sets)
        assert all(r.get("type") and r.get("amount") for ns in node_sets
                   for r in ns.findall("res"))
        assert lease.find("start") is not None and lease.find("duration").get("time")
        software = lease.find("software")
        assert software.find("none") is not None or \
            (software.find("disk-image").get("id") and software.find("disk-image").get("size"))
