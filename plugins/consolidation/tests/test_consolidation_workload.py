"""The annotator ``thesis-workload``: Table 7.1's distribution, ranges, explicit attributes."""

from __future__ import annotations

import collections

import pytest

from lm_consolidation.annotator import CLASSES, TABLE_7_1, ThesisWorkload

from lmc_helpers import lease, make_run

N = 30_000


@pytest.fixture(scope="module")
def drawn():
    run = make_run("simulation.seed=7", "consolidation.io-range=100 200",
                   "consolidation.net-out-range=5,6")
    annotator = ThesisWorkload(run.ctx)
    leases = [lease(i, 1, 10) for i in range(N)]
    for l in leases:
        annotator.annotate(l)
    return leases


def test_classes_follow_table_7_1(drawn):
    counts = collections.Counter(l.extra["hpc-class"] for l in drawn)
    for cls, p in CLASSES:
        assert counts[cls] / N == pytest.approx(p, abs=0.012), cls


def test_resource_groups_follow_table_7_1_per_class(drawn):
    by_class = collections.defaultdict(list)
    for l in drawn:
        by_class[l.extra["hpc-class"]].append(l.extra["stress-on"])
    for cls, (cpu_mem, p_io, net) in TABLE_7_1.items():
        sets = by_class[cls]
        n = len(sets)
        for outcome, p in cpu_mem:
            got = sum(s & {"CPU", "Memory"} == outcome for s in sets) / n
            assert got == pytest.approx(p, abs=0.03), (cls, outcome)
        none = 1 - sum(p for _, p in cpu_mem)
        assert sum(not (s & {"CPU", "Memory"}) for s in sets) / n == \
            pytest.approx(none, abs=0.03), (cls, "no CPU/Memory")
        assert sum("IO" in s for s in sets) / n == pytest.approx(p_io, abs=0.03), (cls, "IO")
        for outcome, p in net:
            got = sum(s & {"Net-in", "Net-out"} == outcome for s in sets) / n
            assert got == pytest.approx(p, abs=0.03), (cls, outcome)


def test_requirements_are_drawn_in_the_ranges_for_stressed_resources_only(drawn):
    for l in drawn[:3000]:
        stress = l.extra["stress-on"]
        for name, (lo, hi) in (("IO", (100, 200)), ("Net-in", (10, 100)), ("Net-out", (5, 6))):
            key = "req-" + name
            if name in stress:
                assert lo <= l.extra[key] <= hi
            else:
                assert key not in l.extra
        assert "req-CPU" not in l.extra and "req-Memory" not in l.extra   # from the VMs


def test_same_seed_same_draws_and_another_seed_others():
    def draw(seed):
        annotator = ThesisWorkload(make_run(f"simulation.seed={seed}").ctx)
        out = []
        for i in range(200):
            l = lease(i, 1, 10)
            annotator.annotate(l)
            out.append(sorted(l.extra.items(), key=lambda kv: kv[0]))
        return out

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)


def test_explicit_attributes_are_respected():
    """As an LWF reader passes them through ``<extra>``: strings."""
    annotator = ThesisWorkload(make_run().ctx)
    given = lease(1, 1, 10)
    given.extra.update({"stress-on": "IO, Net-in", "req-IO": "42"})
    annotator.annotate(given)
    assert given.extra["stress-on"] == {"IO", "Net-in"}
    assert given.extra["req-IO"] == "42"                   # kept as given
    assert 10 <= given.extra["req-Net-in"] <= 100          # drawn: not given
    assert "hpc-class" not in given.extra
    nothing = lease(2, 1, 10)
    nothing.extra["stress-on"] = ""
    annotator.annotate(nothing)
    assert nothing.extra["stress-on"] == frozenset()
    comm = lease(3, 1, 10)
    comm.extra["hpc-class"] = "comm"
    annotator.annotate(comm)
    assert comm.extra["hpc-class"] == "comm-intensive"
    assert comm.extra["stress-on"] - {"IO"} == {"Net-in", "Net-out"}


def test_one_lease_draws_do_not_depend_on_another_lease_attributes():
    """Every lease uses seven numbers of the stream, whether or not it had attributes."""
    def third(first_has_attributes):
        annotator = ThesisWorkload(make_run().ctx)
        leases = [lease(i, 1, 10) for i in range(3)]
        if first_has_attributes:
            leases[0].extra["stress-on"] = "CPU"
        for l in leases:
            annotator.annotate(l)
        return dict(leases[2].extra)

    assert third(True) == third(False)


def test_bad_attributes_name_the_lease():
    annotator = ThesisWorkload(make_run().ctx)
    bad = lease(5, 1, 10)
    bad.extra["stress-on"] = "CPU,Disks"
    with pytest.raises(ValueError, match="lease 5 .*unknown resource type 'Disks'"):
        annotator.annotate(bad)
    bad = lease(6, 1, 10)
    bad.extra["hpc-class"] = "gpu-intensive"
    with pytest.raises(ValueError, match="lease 6 .*unknown hpc-class"):
        annotator.annotate(bad)


def test_range_option_is_validated():
    from lease_manager.errors import ConfigError

    with pytest.raises(ConfigError, match="io-range.*need 0 <= LOW <= HIGH"):
        make_run("consolidation.io-range=50 10")
    with pytest.raises(ConfigError, match="net-in-range.*not two numbers"):
        make_run("consolidation.net-in-range=50")
