"""A policy's answer is checked where it enters the core: a duplicate, out-of-range or
wrongly-typed answer stops the run in one line naming the policy, the plugin and package that
provide it (here: a test module, in no installed package) and what was wrong.

Each test runs a misbehaving policy of one kind on a small site (4 nodes of 1 core unless
said otherwise) and checks the one-line error."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lease_manager import (
    AdmissionPolicy,
    Allocation,
    AllocationPolicy,
    HostSelectionPolicy,
    NodePowerPolicy,
    OperatingPointPolicy,
    PreemptionPolicy,
    PricingPolicy,
    QueuePolicy,
    SiteSelectionPolicy,
    VMRequest,
    hookimpl,
)
from lease_manager.kernel.lease import Lease, LeaseType
from lease_manager.plugins import Plugins
from lease_manager.policies.answers import PolicyAnswerError
from lease_manager.policies.planners import InOrder

from support import HOUR, MIN, be, simulate

WHO = r"\(plugin '[^']+', module test_answers, in no installed package\)"


class _Provides:
    def __init__(self, *classes: type) -> None:
        self.classes = classes

    @hookimpl
    def register_policies(self):
        return list(self.classes)


def plugins(*classes: type) -> Plugins:
    return Plugins(entry_points=False, extra=[_Provides(*classes)])


def refused(kind: str, name: str, message: str, leases, *settings: str, cls: type,
            resources: str = "4 CPU:1 Memory:1024") -> None:
    """The run stops with a PolicyAnswerError that reads ``KIND policy 'NAME' (WHO):
    MESSAGE`` (``message``: a regular expression), on one line."""
    pattern = rf"^{kind} policy '{name}' {WHO}: {message}$"
    with pytest.raises(PolicyAnswerError, match=pattern) as caught:
        simulate(leases, *settings, resources=resources, plugins=plugins(cls))
    assert "\n" not in str(caught.value)


# --------------------------------------------------------------------------- host selection
def _hosts(answer):
    class Hosts(HostSelectionPolicy):
        name = "bad-hosts"

        def order_hosts(self, lease, start, end, table):
            return answer

    return Hosts


@pytest.mark.parametrize("answer, message", [
    ([2, 2, 1, 0], r"order_hosts\(\) returned node 2 2 times for lease 1: each node at most "
                   r"once"),
    ([0, 4], r"order_hosts\(\) returned node 4 for lease 1: the nodes are 0 to 3"),
    ([3, -1], r"order_hosts\(\) returned node -1 for lease 1: the nodes are 0 to 3"),
    ([0.0, 1.0], r"order_hosts\(\) returned \[0\.0, 1\.0\] for lease 1: a sequence of node "
                 r"indices \(integers\)"),
    ([True, False], r"order_hosts\(\) returned \[True, False\] for lease 1: a sequence of "
                    r"node indices \(integers\)"),
    ([[0, 1]], r"order_hosts\(\) returned \[\[0, 1\]\] for lease 1: a sequence of node "
               r"indices \(integers\)"),
    ([0, [1, 2]], r"order_hosts\(\) returned \[0, \[1, 2\]\] for lease 1: a sequence of node "
                  r"indices \(integers\)"),
    (None, r"order_hosts\(\) returned None for lease 1: a sequence of node indices "
           r"\(integers\)"),
])
def test_host_selection_answers(answer, message):
    """The issue's case first: a duplicate host index (it used to die in the slot table with
    ``KeyError: 2``)."""
    refused("host-selection", "bad-hosts", message, [be(1, 2, HOUR, 0)],
            "scheduling.policy-host-selection=bad-hosts", cls=_hosts(answer))


def test_a_good_host_selection_answer_of_any_sequence_type_passes():
    """A list, a tuple and an unsigned array are all node indices: lease 1 (2 VMs) goes on
    nodes 3 and 2, the first two of the order."""
    for answer in ([3, 2, 1, 0], (3, 2, 1, 0), np.array([3, 2], "uint8")):
        lease = be(1, 2, HOUR, 0)
        simulate([lease], "scheduling.policy-host-selection=bad-hosts",
                 plugins=plugins(_hosts(answer)))
        assert sorted(lease.allocations[0].nodes.tolist()) == [2, 3]


# --------------------------------------------------------------------- admission, pricing
def test_admission_answer_is_none_or_a_reason():
    class Admit(AdmissionPolicy):
        name = "bad-admit"

        def admit(self, lease, now):
            return 1

    refused("admission", "bad-admit", r"admit\(\) returned 1 for lease 1: None to accept, or "
            r"the reason for rejecting \(a str\)", [be(1, 1, HOUR, 0)],
            "scheduling.policy-admission=bad-admit", cls=Admit)


@pytest.mark.parametrize("price, shown", [("10", "'10'"), (math.nan, "nan"), (None, "None")])
def test_price_is_a_number(price, shown):
    class Price(PricingPolicy):
        name = "bad-price"

        def price(self, lease, now):
            return price

    refused("pricing", "bad-price", rf"price\(\) returned {shown} for lease 1: a price is a "
            r"number", [be(1, 1, HOUR, 0)], "scheduling.policy-pricing=bad-price", cls=Price)


# ---------------------------------------------------------------------------------- queue
def test_hold_answers_true_or_false():
    class Hold(QueuePolicy):
        name = "bad-hold"

        def hold(self, lease, now):
            return "no"

    refused("queue", "bad-hold", r"hold\(\) returned 'no' for lease 1: True or False",
            [be(1, 1, HOUR, 0)], "scheduling.policy-queue=bad-hold", cls=Hold)


def test_sort_keys_compare_with_each_other():
    """Lease 1's key is a number, lease 2's a string: the queue could not order them."""
    class Keys(QueuePolicy):
        name = "bad-keys"

        def sort_key(self, lease):
            return lease.submit if lease.id == 1 else "late"

    refused("queue", "bad-keys", r"sort_key\(\) returned 'late' for lease 2, which does not "
            r"compare with its key 0 of an earlier lease", [be(1, 4, HOUR, 0), be(2, 4, HOUR, 0),
                                                            be(3, 4, HOUR, 0)],
            "scheduling.policy-queue=bad-keys", cls=Keys)


@pytest.mark.parametrize("twice, message", [
    (True, r"release\(\) returned lease 1 twice"),
    (False, r"release\(\) returned <Lease 2 .*>, which is not one of the held leases it was "
            r"given"),
])
def test_release_returns_held_leases_once(twice, message):
    """Lease 1 is held; lease 2 is not: the policy releases lease 1 twice, or lease 2."""
    other = be(2, 1, HOUR, 0)

    class Release(QueuePolicy):
        name = "bad-release"

        def hold(self, lease, now):
            return lease.id == 1

        def release(self, held, now):
            return [held[0], held[0]] if twice else [other]

    refused("queue", "bad-release", message, [be(1, 1, HOUR, 0), other],
            "scheduling.policy-queue=bad-release", cls=Release)


# ----------------------------------------------------------------------------- preemption
def test_preemption_score_is_none_or_a_number():
    """An advance reservation of 4 nodes, asked at 0:01 for 0:10, needs the nodes best-effort
    lease 1 holds from 0:00: the policy is asked to score lease 1, and answers a string."""
    class Score(PreemptionPolicy):
        name = "bad-score"

        def score(self, preemptor, preemptee, now):
            return "high"

    site = [100.0, 1024.0]
    leases = [Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(4, site), HOUR, HOUR),
              Lease(2, LeaseType.ADVANCE_RESERVATION, MIN, VMRequest.uniform(4, site), HOUR,
                    HOUR, start_request=10 * MIN)]
    refused("preemption", "bad-score", r"score\(\) returned 'high' for lease 1 preempted by "
            r"2: None, or a number", leases, "scheduling.policy-preemption=bad-score",
            cls=Score, resources="4 CPU:100 Memory:1024")


# ----------------------------------------------------------------------------- node power
POWER = ("power.pstates=1.0:100:200", "power.switch-off=5:50", "power.switch-on=20:150",
         "power.off-watts=5", "power.policy-node-power=bad-power")


@pytest.mark.parametrize("pick, message", [
    (lambda idle: [int(idle[0]), int(idle[0])], r"switch_off\(\) returned node 1 twice"),
    (lambda idle: [0], r"switch_off\(\) returned 0, which is not one of the idle nodes it "
                       r"was given"),
    (lambda idle: [float(idle[0])], r"switch_off\(\) returned 1\.0, which is not one of the "
                                    r"idle nodes it was given"),
    (lambda idle: None, r"switch_off\(\) returned None: an iterable of idle node indices"),
])
def test_switch_off_picks_idle_nodes_once(pick, message):
    """Lease 1 runs on node 0 (nodes in index order); nodes 1 to 3 are idle from 0."""
    class SwitchOff(NodePowerPolicy):
        name = "bad-power"

        def switch_off(self, idle, idle_since, now):
            return pick(idle)

    refused("node-power", "bad-power", message, [be(1, 1, HOUR, 0)], *POWER,
            "scheduling.policy-host-selection=no-policy", cls=SwitchOff)


def test_next_check_is_none_or_a_time():
    class Check(NodePowerPolicy):
        name = "bad-power"

        def next_check(self, idle_since):
            return "soon"

    refused("node-power", "bad-power", r"next_check\(\) returned 'soon': None, or a time",
            [be(1, 1, HOUR, 0)], *POWER, cls=Check)


def test_stays_on_answers_true_or_false():
    """Every idle node is picked; the policy is then asked whether it stays on, and answers
    None."""
    class StaysOn(NodePowerPolicy):
        name = "bad-power"

        def switch_off(self, idle, idle_since, now):
            return idle

        def stays_on(self, now, next_start, off_seconds, on_seconds):
            return None

    refused("node-power", "bad-power", r"stays_on\(\) returned None: True or False",
            [be(1, 1, HOUR, 0)], *POWER, cls=StaysOn)


@pytest.mark.parametrize("level, shown", [(1, "1"), (0.0, "0.0"), (-1, "-1")])
def test_operating_point_is_a_level_index(level, shown):
    """One level (index 0) in the model."""
    class Level(OperatingPointPolicy):
        name = "bad-level"

        def level(self, lease, now):
            return level

    refused("operating-point", "bad-level", rf"level\(\) returned {shown} for lease 1: the "
            r"levels are 0 to 0", [be(1, 1, HOUR, 0)], *POWER[:-1],
            "power.policy-operating-point=bad-level", cls=Level)


# ------------------------------------------------------------------------- site selection
SITES = ("site:a.resources=1 CPU:1 Memory:1024", "site:b.resources=1 CPU:1 Memory:1024",
         "simulation.policy-site-selection=bad-site")


def test_site_selection_chooses_a_site_index_or_a_reason():
    class Select(SiteSelectionPolicy):
        name = "bad-site"

        def select(self, lease, sites, length, now):
            return 2

    with pytest.raises(PolicyAnswerError, match=rf"^site-selection policy 'bad-site' {WHO}: "
                       r"select\(\) chose 2 for lease 1: a site's index \(0 to 1\), or why no "
                       r"site may have it$"):
        run_sites([be(1, 1, HOUR, 0)], Select)


@pytest.mark.parametrize("sends, message", [
    (lambda leases: [leases[0], leases[0]], r"select_batch\(\) sent lease 1 twice"),
    (lambda leases: leases[:1], r"select_batch\(\) sent no site for leases \[2\] of its batch: "
                                r"every lease once"),
])
def test_select_batch_sends_every_lease_once(sends, message):
    """Leases 1 and 2 arrive in the same 10-minute cycle."""
    class Batch(SiteSelectionPolicy):
        name = "bad-site"

        def select_batch(self, leases, sites, now, send):
            for lease in sends(list(leases)):
                send(lease, 0)

    with pytest.raises(PolicyAnswerError, match=rf"^site-selection policy 'bad-site' {WHO}: "
                       + message + "$"):
        run_sites([be(1, 1, HOUR, 0), be(2, 1, HOUR, MIN)], Batch,
                  "simulation.site-selection-cycle=600")


def run_sites(leases, cls, *settings):
    from lease_manager.config.schema import load_config
    from lease_manager.run import Run

    with_plugins = plugins(cls)
    config = load_config(None, with_plugins.schema, [*SITES, *settings])
    Run(config, with_plugins, leases=leases).run()


# ------------------------------------------------------------------------ malleable leases
def _shape(nodes: int) -> Allocation:
    return Allocation(VMRequest.uniform(2, [1.0, 0.0]), float(nodes), 1.0)


@pytest.mark.parametrize("method, message", [
    ("initial", r"initial\(\) returned '2 nodes' for lease 1: None, or an Allocation"),
    ("reallocate", r"reallocate\(\) returned <Lease 1 .*>: each decision is a \(lease, "
                   r"Allocation\) pair"),
    ("twice", r"reallocate\(\) decided lease 1 twice"),
    ("next_event", r"next_event\(\) returned None: a time \(inf: none\)"),
])
def test_allocation_answers(method, message):
    """Lease 1 (2 VMs) arrives malleable; every epoch (10 min) the policy reallocates."""
    class Allocate(AllocationPolicy):
        name = "bad-allocation"

        def initial(self, lease, now):
            return "2 nodes" if method == "initial" else _shape(2)

        def reallocate(self, now, reasons):
            running = list(self.ctx.scheduler.running())
            if method == "twice":
                return [(lease, _shape(2)) for lease in running * 2]
            return running if method == "reallocate" else []

        def next_event(self, now):
            return None if method == "next_event" else math.inf

    refused("allocation", "bad-allocation", message, [be(1, 2, HOUR, 0)],
            "malleable.policy-allocation=bad-allocation", "malleable.epoch=600", cls=Allocate)


# -------------------------------------------------------------------------------- planner
def test_a_planner_returns_its_board(tmp_path):
    class Plan(InOrder):
        name = "bad-planner"

        def plan(self, tasks, board):
            super().plan(tasks, board)
            return None

    cap = tmp_path / "cap.csv"
    cap.write_text("time,watts\n0,100\n")
    lease = be(1, 1, 2, 0, memory=1)
    lease.extra["watts"] = "10"
    refused("planner", "bad-planner", r"plan\(\) returned None: the PowerBoard holding its "
            r"plan", [lease], "power.pstates=1:10:10", "power.switch-on=2:20",
            "power.switch-off=1:15", "power.initial-state=off",
            "power.policy-node-power=switch-off-idle", "planning.policy-planner=bad-planner",
            "planning.interval=1", f"power.power-cap={cap}", cls=Plan,
            resources="1 CPU:1 Memory:1024")
