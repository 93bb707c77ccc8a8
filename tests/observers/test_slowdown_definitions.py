"""The two slowdown definitions in ``summary.json``: ours (over the run time) and Haizea's
(over the requested duration)."""

from __future__ import annotations

from support import be, simulate


def test_both_slowdowns_are_reported():
    """One node. #1 asks 100 s and runs 50 s from 0; #2 asks 20 s, runs 5 s, waits until 50::

        node 0  |#1 0-----50|#2 50-55|

    Ours, (wait + run) / run: #1 1, #2 (50 + 5) / 5 = 11, mean 6; bounded at 10 s (and at
    least 1): 1 and 55 / 10 = 5.5, mean 3.25. Haizea's, (end - submit) / requested: #1 0.5,
    #2 55 / 20 = 2.75, mean 1.625 (bounded: the same, both ask over 10 s)."""
    run = simulate([be(1, 1, 100, 0, actual=50), be(2, 1, 20, 0, actual=5)],
                   "scheduling.backfilling=off", resources="1 CPU:1 Memory:1024")
    summary = run.summary
    assert summary["avg_slowdown"] == 6
    assert summary["avg_bounded_slowdown"] == 3.25
    assert summary["avg_slowdown_requested"] == 1.625
    assert summary["avg_bounded_slowdown_requested"] == 1.625
