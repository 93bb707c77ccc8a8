"""``[scheduling] placement``: what ``auto`` chooses, and why; a named placement refused in one
line when a feature of the run needs the other."""

from __future__ import annotations

import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseType
from lease_manager.placement import NEEDS_WHEN_PLANNED, choose
from lease_manager.plugins import Plugins
from lease_manager.policies import Annotator
from lease_manager.workload.site_source import site_nodes

from support import ROOT, TRACES


class _Deadlines(Annotator):
    """Makes every lease a deadline lease (as Garg et al.'s workload does some)."""

    name = "deadlines"

    def annotate(self, lease):
        lease.type = LeaseType.DEADLINE
        lease.deadline = lease.submit + 10 * lease.requested_duration


class _Tags(Annotator):
    """Adds an attribute only, and says so."""

    name = "tags"
    supports_placement_at_start = True

    def annotate(self, lease):
        lease.extra["tag"] = "x"


class _Annotators:
    @hookimpl
    def register_policies(self):
        return [_Deadlines, _Tags]

SWF = TRACES / "sdsc-blue-30days.swf"
LWF = ROOT / "tests" / "lwf" / "example.lwf"
PLUGINS = Plugins(entry_points=False, extra=[_Annotators()])
SWITCHING = ("power.pstates=2.0:100:200", "power.policy-node-power=switch-off-idle",
             "power.switch-on=20:150")
CAP = ("power.pstates=2.0:100:200", "power.power-cap=1e6", "power.initial-state=off",
       "power.switch-on=20:150")


def chosen(*settings: str, serve: bool = False, from_trace: bool = True, haizea: bool = False):
    config = load_config(None, PLUGINS.schema, ["simulation.resources=4 CPU:1 Memory:1024",
                                                f"tracefile.tracefile={SWF}", *settings])
    config.haizea = haizea
    return choose(config, PLUGINS, serve=serve, from_trace=from_trace)


def test_auto_counts_an_swf_replay():
    choice = chosen()
    assert choice.placement == "at-start" and choice.label() == "at-start (auto)"


@pytest.mark.parametrize("settings, kwargs, reason", [
    ((), {"haizea": True}, "Haizea configuration"),
    ((), {"serve": True}, "daemon"),
    ((), {"from_trace": False}, "leases given in code"),
    ((f"tracefile.tracefile={LWF}",), {}, "LWF trace"),
    ((f"tracefile.injectionfile={LWF}",), {}, "injection file"),
    (CAP, {}, "power cap"),
    (("scheduling.migration=yes",), {}, "migration"),
    (("preparation.lease-preparation=imagetransfer",), {}, "image transfers"),
    (("scheduling.policy-host-selection=haizea-greedy",), {}, "host selection"),
    (("tracefile.annotators=tags, deadlines",), {}, "annotator"),
])
def test_auto_keeps_when_planned_for_a_feature_that_pins_nodes(settings, kwargs, reason):
    choice = chosen(*settings, **kwargs)
    assert choice.placement == "when-planned"
    assert choice.label() == f"when-planned (auto: {reason})"
    assert reason in NEEDS_WHEN_PLANNED


def test_auto_counts_with_an_annotator_that_adds_attributes_only():
    assert chosen("tracefile.annotators=tags").label() == "at-start (auto)"


def test_auto_counts_a_power_model_whose_nodes_stay_on():
    assert chosen("power.pstates=2.0:100:200").label() == "at-start (auto)"


def test_auto_counts_a_constant_cap_on_identical_nodes_that_stay_on():
    config = load_config(None, PLUGINS.schema, ["simulation.resources=4 CPU:1 Memory:1024",
                                                f"tracefile.tracefile={SWF}",
                                                "power.pstates=2.0:100:200",
                                                "power.power-cap=1e6"])
    choice = choose(config, PLUGINS, serve=False, from_trace=True, nodes=site_nodes(config))
    assert choice.label() == "at-start (auto)"


def test_auto_counts_nodes_that_switch():
    assert chosen(*SWITCHING).label() == "at-start (auto)"
    assert chosen("power.pstates=2.0:100:200", "power.initial-state=off").label() == \
        "at-start (auto)"
    assert chosen("scheduling.placement=at-start", *SWITCHING).label() == "at-start"


def test_a_named_placement_is_the_one_that_runs():
    assert chosen("scheduling.placement=when-planned").label() == "when-planned"
    assert chosen("scheduling.placement=at-start").label() == "at-start"
    # a Haizea file that names at-start gets it
    assert chosen("scheduling.placement=at-start", haizea=True).placement == "at-start"


@pytest.mark.parametrize("settings, kwargs, feature", [
    (CAP, {}, "power cap"),
    ((), {"serve": True}, "daemon"),
    ((f"tracefile.tracefile={LWF}",), {}, "LWF trace"),
    (("scheduling.policy-host-selection=haizea-greedy",), {}, "host selection"),
])
def test_naming_at_start_for_a_run_it_cannot_serve_is_refused_in_one_line(settings, kwargs,
                                                                         feature):
    with pytest.raises(ConfigError) as err:
        chosen("scheduling.placement=at-start", *settings, **kwargs)
    message = str(err.value)
    assert "\n" not in message
    assert "[scheduling] placement" in message
    assert f"at-start cannot serve this run ({feature}:" in message
    assert "use when-planned or auto" in message


class _LooksAheadProbe:
    """A probe that asks about node 0's future plan at every cycle's end."""

    kind = "probe"
    name = "looks-ahead"

    def __init__(self, ctx):
        self.ctx = ctx

    @hookimpl
    def scheduling_cycle_end(self, ctx, now):
        ctx.table.change_points(now, node=0)


class _Probes:
    @hookimpl
    def register_policies(self):
        return [_LooksAheadProbe]


def test_a_policy_that_asks_about_nodes_future_under_auto_is_told_in_one_line():
    """auto counts this SWF replay; a probe asking the table about a node's future plan (which
    a counting table does not keep) stops the run with one line saying what to set, not a
    traceback."""
    from lease_manager.errors import LeaseManagerError
    from lease_manager.run import Run

    plugins = Plugins(entry_points=False, extra=[_Probes()])
    config = load_config(ROOT / "etc" / "sample.ini", plugins.schema,
                         ["tracefile.max-jobs=20", "accounting.probes=looks-ahead"])
    run = Run(config, plugins)
    with pytest.raises(LeaseManagerError) as err:
        run.run()
    message = str(err.value)
    assert message.startswith("placement = at-start (auto): with placement = at-start, nodes "
                              "have no future plan")
    assert message.endswith("set [scheduling] placement = when-planned)")
    assert "\n" not in message
    # named when planned, the same probe runs
    config = load_config(ROOT / "etc" / "sample.ini", plugins.schema,
                         ["tracefile.max-jobs=20", "accounting.probes=looks-ahead",
                          "scheduling.placement=when-planned"])
    assert Run(config, plugins).run()["leases_completed"] == 20
