"""Kassab et al.'s orders, by hand."""

from __future__ import annotations

import numpy as np

from lease_manager import PlanTask
from lm_greenpower.orders import order_tasks, possible_places, two_queues

# (length, watts): p x phi = 75, 40, 60, 70
TASKS = [PlanTask(i, i + 1, p, 1, w) for i, (p, w) in enumerate([(3, 25), (4, 10), (4, 15),
                                                                (2, 35)])]


def ids(tasks):
    return [t.lease_id for t in tasks]


def test_orders_by_time_power_and_both():
    assert ids(order_tasks("lpt", TASKS)) == [2, 3, 1, 4]      # ties keep the given order
    assert ids(order_tasks("spt", TASKS)) == [4, 1, 2, 3]
    assert ids(order_tasks("lpn", TASKS)) == [4, 1, 3, 2]
    assert ids(order_tasks("lptpn", TASKS)) == [1, 4, 3, 2]
    assert ids(order_tasks("random", TASKS)) == [1, 2, 3, 4]


def test_two_queues_take_turns_skipping_what_the_other_took():
    """LPTPN 1 4 3 2, LPT 2 3 1 4: 1 (LPTPN), 2 (LPT), 4 (LPTPN), 3 (LPT: 3 not taken)."""
    assert ids(order_tasks("twoqs", TASKS)) == [1, 2, 4, 3]
    assert two_queues("abc", "cba") == ["a", "c", "b"]


def test_least_possible_places_on_the_envelope():
    """Envelope 50 50 30 30 50 (W). A task needing 40 W for 2 intervals fits at 0 only (1
    place); 25 W for 1 interval anywhere (5); 45 W for 3 intervals nowhere (0)."""
    cap = np.array([50.0, 50, 30, 30, 50])
    assert possible_places(np.array([2, 1, 3]), np.array([40.0, 25, 45]), cap).tolist() == [
        1, 5, 0]
    tasks = [PlanTask(0, 1, 2, 1, 30), PlanTask(1, 2, 1, 1, 15), PlanTask(2, 3, 3, 1, 35)]
    # with 10 W of static power: needs 40, 25 and 45 W
    assert ids(order_tasks("lpp", tasks, cap, 10.0)) == [3, 1, 2]


def test_the_orders_of_fig_3s_contest_seed_84():
    """Issue 39: the three longest tasks of Fig. 3's instance seed 84, phi_max 75, x10, in the
    workload's order (id: p, phi, p x phi): 25: 429, 50, 21,450; 29: 363, 66, 23,958; 34: 363,
    20, 7,260. From the text (section 4.2), line by line:
    LPT (p descending; 29 and 34 tie at 363 and keep their order): 25 29 34;
    LPTPN (p x phi descending): 29 25 34;
    TwoQs (LPTPN's queue, then LPT's, in turn, each skipping what the other took): LPTPN's
    first, 29; LPT's first not taken, 25; LPTPN's next not taken, 34: 29 25 34, LPTPN's order;
    LPN (phi descending): 29 25 34. The authors' released code sorts and alternates the same
    way (LPTPN's queue first). So TwoQs, LPTPN and LPN all place 29 before 25, and on this
    instance 29 takes the first interval of the stretch both need (see
    test_greenpower_planners.py::test_the_opening_interval_of_a_stretch_goes_to_the_first)."""
    tasks = [PlanTask(0, 25, 429, 1, 50), PlanTask(1, 29, 363, 1, 66),
             PlanTask(2, 34, 363, 1, 20)]
    assert ids(order_tasks("lpt", tasks)) == [25, 29, 34]
    assert ids(order_tasks("lptpn", tasks)) == [29, 25, 34]
    assert ids(order_tasks("twoqs", tasks)) == [29, 25, 34]
    assert ids(order_tasks("lpn", tasks)) == [29, 25, 34]
