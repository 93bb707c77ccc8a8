"""The 30-day Blue Horizon trace against pyss, an independent simulator (the Hebrew
University's; ``tests/reference/pyss-sdsc-blue-30days-*-starts.txt`` say how its times were
obtained), lease by lease, with nodes counted (``placement = at-start``, pyss's model)."""

from __future__ import annotations

import csv

import pytest

from lease_manager.run import load_run

from support import ROOT

REFERENCE = ROOT / "tests" / "reference"


def pyss_starts(mode: str) -> list[float]:
    lines = (REFERENCE / f"pyss-sdsc-blue-30days-{mode}-starts.txt").read_text().splitlines()
    return [float(line) for line in lines if line and not line.startswith("#")]


def starts(tmp_path, *settings: str) -> list[float]:
    """``etc/sample.ini`` (144 nodes, one VM per requested node, greedy host selection) with
    ``settings``; invariants checked as on every run."""
    run = load_run(ROOT / "etc" / "sample.ini", ["scheduling.placement=at-start", *settings])
    run.run()
    run.write(tmp_path)
    with open(tmp_path / "leases.csv") as fh:
        rows = sorted(csv.DictReader(fh), key=lambda row: int(row["lease_id"]))
    return [float(row["start"]) for row in rows]


def differing(got: list[float], expected: list[float]) -> list[int]:
    assert len(got) == len(expected) == 5108
    return [i + 1 for i, (a, b) in enumerate(zip(got, expected)) if a != b]


@pytest.mark.parametrize("reevaluation", ["compress", "replan"])
def test_conservative_compression_gives_pyss_start_for_every_lease(tmp_path, reevaluation):
    """pyss's conservative scheduler compresses the schedule at each job termination, each
    waiting job once in order of arrival; so do ``compress`` (and, on this trace, Haizea's
    ``replan``, which also takes each reservation once, in scheduling order)."""
    got = starts(tmp_path, "scheduling.backfilling=conservative",
                 f"scheduling.reevaluation={reevaluation}")
    assert differing(got, pyss_starts("conservative")) == []


def test_move_earlier_is_not_pyss_compression(tmp_path):
    """Repeating passes until nothing moves starts 907 leases at other times (earlier on
    average: 4,159.4 s against 4,285.1 s)."""
    got = starts(tmp_path, "scheduling.backfilling=conservative",
                 "scheduling.reevaluation=move-earlier")
    assert len(differing(got, pyss_starts("conservative"))) == 907


def test_easy_differs_from_pyss_only_where_two_leases_end_at_once(tmp_path):
    """EASY: pyss schedules after each job termination; we after all of an instant's events.
    At 925,218 s two 4-node leases end together: pyss backfills #2197 (4 nodes) after the
    first end, and the queue's head #2196 (8 nodes) then waits until 925,228 s; we start
    #2196 at 925,218 s and #2197 at 925,228 s. Every other lease starts when pyss starts it."""
    got = starts(tmp_path, "scheduling.backfilling=aggressive")
    assert differing(got, pyss_starts("easy")) == [2196, 2197]
    assert (got[2195], got[2196]) == (925218, 925228)
