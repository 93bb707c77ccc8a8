"""``haizea-greedy``: Haizea's greedy host score exactly (the time until a host's next change
of any kind), which Haizea files use for ``greedy``."""

from __future__ import annotations

import pytest

from support import be, simulate


@pytest.mark.parametrize("policy, node", [("greedy", 0), ("haizea-greedy", 1)])
def test_a_host_whose_lease_ends_soon_scores_lower_in_haizeas_greedy(policy, node):
    """Two nodes of 2 CPUs. #1 (10 s) takes node 0 at 0, #2 (1,000 s) node 1 (no leases
    there). At 1, #3 (100 s) finds one lease on each node and a free CPU on each for its whole
    time: ``greedy`` ties and takes node 0; Haizea's score counts node 0's next change (#1's
    end, 9 s away: 0.25 x 9/100) against node 1's (999 s away: 0.25) and takes node 1."""
    leases = [be(1, 1, 10, 0), be(2, 1, 1000, 0), be(3, 1, 100, 1)]
    simulate(leases, f"scheduling.policy-host-selection={policy}", resources="2 CPU:2 Memory:0")
    assert leases[2].allocations[-1].nodes.tolist() == [node]
