"""Haizea 1.0 and 1.1 configuration files read as they are (``config/haizea.py``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lease_manager.config.haizea import ConfigErrors
from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.plugins import Plugins

#: the options of Haizea's own test configuration (tests/base_config_simulator.conf in
#: Haizea's repository), with its trace file's path replaced
HAIZEA_TEST_CONFIG = """\
[general]
loglevel: STATUS
mode: simulated
lease-preparation: unmanaged
lease-failure-handling: exit-raise
persistence-file: none

[simulation]
clock: simulated
starttime: 2006-11-25 13:00:00
resources: in-tracefile
imagetransfer-bandwidth: 100
#status-message-interval: 15

[scheduling]
mapper: greedy
policy-admission: accept-all
policy-preemption: ar-preempts-everything
policy-host-selection: greedy
shutdown-time: 0
suspendresume-exclusion: local
wakeup-interval: 3
backfilling: aggressive
# backfilling-reservations: 4
enactment-overhead: 2
override-suspend-time: 0
suspension: all
suspend-rate: 32
resume-rate: 32
migration: yes


[deploy-imagetransfer]
transfer-mechanism: multicast
avoid-redundant-transfers: True
diskimage-reuse: none
diskimage-cache-size: 20480


[tracefile]
tracefile: TRACE
#imagefile: /usr/share/haizea/traces/sample.images
#injectionfile: /usr/share/haizea/traces/multi/inj1.lwf
#bootshutdown-overhead: 20
#runtime-overhead: 5

[accounting]
datafile: /var/tmp/haizea/results.dat
probes: ar best-effort immediate cpu-utilization"""


SCENARIO_WAIT = ("<?xml version='1.0'?><lease-workload name='wait'><site><resource-types "
                 "names='CPU Memory'/><nodes><node-set numnodes='4'><res type='CPU' amount='100'/>"
                 "<res type='Memory' amount='1024'/></node-set></nodes></site><lease-requests>"
                 + "".join(f"<lease-request arrival='00:00:00'><lease id='{i}' "
                           "preemptible='true'><nodes><node-set numnodes='4'><res amount='100' "
                           "type='CPU'/><res amount='1024' type='Memory'/></node-set></nodes>"
                           "<start/><duration time='00:15:00'/><software><none/></software>"
                           "</lease></lease-request>" for i in range(1, 9))
                 + "</lease-requests></lease-workload>")


def write(tmp_path: Path, text: str, name: str = "haizea.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_haizeas_test_configuration_loads_unchanged(tmp_path):
    """Every option of Haizea's test configuration has its Haizea meaning here."""
    path = write(tmp_path, HAIZEA_TEST_CONFIG.replace("TRACE", "trace.lwf"))
    cfg = load_config(path, Plugins(entry_points=False).schema)
    get = cfg.get
    assert get("simulation", "clock") == "simulated"
    assert get("simulation", "starttime") == "2006-11-25 13:00:00"
    assert get("simulation", "resources") == "in-tracefile"
    # Haizea's ar-preempts-everything lets ARs preempt best-effort leases only
    assert get("scheduling", "policy-preemption") == "ar-preempts-be"
    assert get("scheduling", "backfilling") == "aggressive"
    assert get("scheduling", "policy-host-selection") == "haizea-greedy"   # its exact score
    assert get("scheduling", "enactment-overhead") == 2
    assert get("scheduling", "overhead-in-shutdown") is True          # Haizea's shutdown
    assert get("scheduling", "shutdown-after-early-end") is False     # Haizea's premature end
    assert get("scheduling", "override-suspend-time") == 0
    assert get("scheduling", "override-resume-time") is None
    assert get("scheduling", "suspend-rate") == 32
    assert get("scheduling", "migration") == "yes"
    assert get("scheduling", "migration-bandwidth") == 12.5          # Haizea's 100 Mb/s
    assert get("scheduling", "preemption-order") == "least-preemptable-first"
    assert get("scheduling", "reevaluation") == "replan"               # Haizea's only one
    assert get("scheduling", "suspendresume-model") == "haizea"
    assert get("pricing", "unit") == "node-hour"
    assert get("tracefile", "tracefile") == str(tmp_path / "trace.lwf")
    assert get("accounting", "datafile") == "/var/tmp/haizea/results.dat"
    assert get("accounting", "probes") == ("ar", "best-effort", "immediate", "cpu-utilization")
    line = HAIZEA_TEST_CONFIG.splitlines().index("enactment-overhead: 2") + 1
    assert cfg.source("scheduling", "enactment-overhead") == f"{path}:{line}"


def test_haizea_defaults_where_the_file_says_nothing(tmp_path):
    path = write(tmp_path, "[general]\nmode: simulated\n[simulation]\nresources: 4 CPU:100 "
                           "Memory:1024\n[scheduling]\nsuspension: none\n[accounting]\n")
    cfg = load_config(path, Plugins(entry_points=False).schema)
    assert cfg.get("scheduling", "policy-preemption") == "no-preemption"
    assert cfg.get("simulation", "clock") == "simulated"
    assert cfg.get("scheduling", "overhead-in-shutdown") is True


#: the options of Haizea 1.0's sample configuration (etc/sample_trace.conf, which Haizea's
#: etc/gen_sample_config.py writes; its comments left out), trace path replaced
SAMPLE = """\
[general]
loglevel: INFO
mode: simulated
lease-preparation: unmanaged
persistence-file: none

[scheduling]
policy-preemption: ar-preempts-everything
wakeup-interval: 10
backfilling: aggressive
suspension: all
suspend-rate: 32
resume-rate: 32
migration: yes

[simulation]
clock: simulated
starttime: 2006-11-25 13:00:00
resources: 4  CPU:100 Memory:1024
imagetransfer-bandwidth: 100

[accounting]
datafile: /var/tmp/haizea/results.dat
probes: ar best-effort immediate cpu-utilization

[deploy-imagetransfer]
transfer-mechanism: multicast
avoid-redundant-transfers: True
diskimage-reuse: none
diskimage-cache-size: 20480

[tracefile]
tracefile: sample.lwf
"""


def test_errors_in_three_sections_are_reported_at_once(tmp_path):
    """Haizea's sample configuration with a mistake in [general], [scheduling] and
    [accounting]: one line each, with its line number, in one error."""
    text = (SAMPLE.replace("loglevel: INFO", "loglevel: LOUD")
                  .replace("backfilling: aggressive", "backfilling: eager")
                  .replace("probes: ar best-effort immediate cpu-utilization",
                           "probes: ar best-effort immediate utilisation"))
    path = write(tmp_path, text)
    with pytest.raises(ConfigErrors) as info:
        load_config(path, Plugins(entry_points=False).schema)
    lines = str(info.value).splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"{path}:2: [general] loglevel: 'LOUD' is not one of STATUS")
    assert lines[1].startswith(f"{path}:10: [scheduling] backfilling: 'eager' is not one of")
    assert lines[2].startswith(f"{path}:24: [accounting] probes: 'utilisation' is not one of "
                               "Haizea's probes (did you mean 'cpu-utilization'?)")


def test_haizeas_sample_configuration_runs(tmp_path):
    """Unchanged but for its trace: Haizea's wait.lwf (8 leases of the whole site, 15 min)."""
    from lease_manager.run import load_run

    (tmp_path / "sample.lwf").write_text(SCENARIO_WAIT)
    run = load_run(write(tmp_path, SAMPLE))
    summary = run.run()
    assert summary["leases_completed"] == 8 and summary["makespan"] == 8 * 900


def test_opennebula_and_unknown_options_are_refused_saying_what_to_do(tmp_path):
    text = SAMPLE.replace("mode: simulated", "mode: opennebula") + \
        "[opennebula]\nhost: localhost\n"
    text = text.replace("wakeup-interval: 10", "wakeup-interval: 10\nbackfiling: off")
    path = write(tmp_path, text)
    with pytest.raises(ConfigErrors) as info:
        load_config(path, Plugins(entry_points=False).schema)
    message = str(info.value)
    assert f"{path}:3: [general] mode: OpenNebula enactment is not supported: run " \
           "`lease-manager serve`" in message
    assert "[scheduling] backfiling: unknown Haizea option (did you mean 'backfilling'?)" \
        in message
    assert "[opennebula] host: OpenNebula enactment is not supported" in message


def test_haizea_11s_deadline_mapper_is_the_greedy_mapper(tmp_path):
    """Haizea 1.1's ``mapper: deadline`` (set by its test_deadline.py) is accepted: it is the
    greedy mapper, whose preemptions keep deadline victims' deadlines, as ours always do; it
    changes nothing else. Other mappers are refused, naming both."""
    plain = load_config(write(tmp_path, SAMPLE, "greedy.conf"), Plugins(entry_points=False).schema)
    text = SAMPLE.replace("[scheduling]\n", "[scheduling]\nmapper: deadline\n")
    cfg = load_config(write(tmp_path, text), Plugins(entry_points=False).schema)
    for option in ("policy-preemption", "policy-host-selection", "backfilling"):
        assert cfg.get("scheduling", option) == plain.get("scheduling", option)
    path = write(tmp_path, SAMPLE.replace("[scheduling]\n", "[scheduling]\nmapper: optimal\n"))
    with pytest.raises(ConfigError) as info:
        load_config(path, Plugins(entry_points=False).schema)
    assert "'optimal': the mappers are Haizea's greedy and deadline mappers" in str(info.value)


def test_a_missing_required_option_is_one_of_the_errors(tmp_path):
    path = write(tmp_path, SAMPLE.replace("suspension: all\n", "").replace("mode: simulated\n",
                                                                          ""))
    with pytest.raises(ConfigErrors) as info:
        load_config(path, Plugins(entry_points=False).schema)
    assert "[general] mode: required option is missing" in str(info.value)
    assert "[scheduling] suspension: required option is missing" in str(info.value)


def test_a_multi_file_is_sent_to_sweep(tmp_path):
    path = write(tmp_path, "[general]\nmode: simulated\n[multi]\ntracedir: .\n")
    with pytest.raises(ConfigErrors, match="multi-configuration file is a sweep"):
        load_config(path, Plugins(entry_points=False).schema)


def test_our_own_sections_may_be_added_to_a_haizea_file(tmp_path):
    path = write(tmp_path, SAMPLE + "[power]\npstates = 2.4:100:200\n")
    cfg = load_config(path, Plugins(entry_points=False).schema)
    assert cfg.get("power", "pstates") == "2.4:100:200"


def test_trace_overheads_and_memory_override_are_mapped(tmp_path):
    path = write(tmp_path, SAMPLE.replace("tracefile: sample.lwf", "tracefile: sample.lwf\n"
                                          "add-overhead: besteffort\n"
                                          "runtime-slowdown-overhead: 5\n"
                                          "bootshutdown-overhead: 20\noverride-memory: 512"))
    cfg = load_config(path, Plugins(entry_points=False).schema)
    assert cfg.get("tracefile", "add-overhead") == "besteffort"
    assert cfg.get("tracefile", "runtime-slowdown-overhead") == 5
    assert cfg.get("tracefile", "runtime-slowdown-as") == "haizea"    # Haizea's semantics
    assert cfg.get("tracefile", "bootshutdown-overhead") == 20
    assert cfg.get("tracefile", "override-memory") == 512


def test_our_own_configurations_are_not_read_as_haizeas(tmp_path):
    path = write(tmp_path, "[simulation]\nresources = 4 CPU:1\n", "ours.ini")
    cfg = load_config(path, Plugins(entry_points=False).schema)
    assert cfg.get("scheduling", "policy-preemption") == "ar-preempts-everything"
    assert cfg.get("scheduling", "overhead-in-shutdown") is False
    assert math.isinf(cfg.get("simulation", "runtime"))
    with pytest.raises(ConfigError, match="unknown section"):
        load_config(write(tmp_path, "[generall]\n", "typo.ini"),
                    Plugins(entry_points=False).schema)


def test_our_own_configurations_report_every_error_at_once(tmp_path):
    path = write(tmp_path, "[simulation]\nresources = 4 CPU:1\n[scheduling]\n"
                           "backfilling = eager\nsuspension = some\n[acounting]\nprobes = usage\n",
                 "ours.ini")
    with pytest.raises(ConfigErrors) as info:
        load_config(path, Plugins(entry_points=False).schema)
    assert str(info.value).splitlines() == [
        f"{path}:4: [scheduling] backfilling: 'eager' is not one of off, aggressive, "
        "conservative, intermediate",
        f"{path}:5: [scheduling] suspension: 'some' is not one of none, serial-only, all",
        f"{path}:6: unknown section [acounting] (did you mean 'accounting'?)"]
    assert isinstance(info.value, ConfigError) and info.value.line == 4


def test_resources_from_a_site_file_or_the_lwf_trace(tmp_path):
    """``file:PATH`` reads an XML <site> (relative to the configuration); ``in-tracefile``
    takes the LWF trace's <site>; a trace without one is refused in one line."""
    from lease_manager.run import load_run

    site = ('<site><resource-types names="CPU Memory"/><nodes><node-set numnodes="3">'
            '<res type="CPU" amount="100"/><res type="Memory" amount="1024"/></node-set>'
            '</nodes></site>')
    (tmp_path / "site.xml").write_text(site)
    (tmp_path / "trace.lwf").write_text(
        f'<?xml version="1.0"?><lease-workload name="t">{site}<lease-requests/>'
        '</lease-workload>')
    (tmp_path / "nosite.lwf").write_text(
        '<?xml version="1.0"?><lease-workload name="t"><lease-requests/></lease-workload>')
    for resources in ("file:site.xml", "in-tracefile"):
        path = write(tmp_path, SAMPLE.replace("resources: 4  CPU:100 Memory:1024",
                                              f"resources: {resources}")
                     .replace("tracefile: sample.lwf", "tracefile: trace.lwf"))
        run = load_run(path)
        assert run.nodes.capacity.tolist() == [[100, 1024]] * 3
        run.close()
    path = write(tmp_path, SAMPLE.replace("resources: 4  CPU:100 Memory:1024",
                                          "resources: in-tracefile")
                 .replace("tracefile: sample.lwf", "tracefile: nosite.lwf"))
    with pytest.raises(Exception, match="describes no site"):
        load_run(path)


def test_haizeas_user_feedback_pricing_is_refused(tmp_path):
    path = write(tmp_path, SAMPLE.replace("policy-preemption: ar-preempts-everything",
                                          "policy-preemption: ar-preempts-everything\n"
                                          "policy-pricing: maximum"))
    with pytest.raises(ConfigError, match="Haizea's 'maximum' pricing .* is not supported"):
        load_config(path, Plugins(entry_points=False).schema)


def test_an_opennebula_file_leads_with_its_mode(tmp_path):
    """An OpenNebula file has no [simulation] section: the missing ``resources`` (which its
    mode does not use) was reported first, before the line that matters."""
    text = "[general]\nloglevel: INFO\nmode: opennebula\n\n[scheduling]\nsuspension: none\n" \
        "\n[opennebula]\nhost: localhost\n"
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, Plugins(entry_points=False).schema)
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{path}:3: [general] mode: OpenNebula enactment is not "
                               "supported")
    assert not any("required option is missing" in line for line in lines)


def test_haizea_11s_comma_resources(tmp_path):
    """Haizea 1.1 parses only ``4 CPU:100,Memory:1024``; it was refused with a number-parsing
    error. It is the same site as 1.0's ``4 CPU:100 Memory:1024``."""
    comma = load_config(write(tmp_path, SAMPLE.replace("4  CPU:100 Memory:1024",
                                                       "4 CPU:100,Memory:1024"), "comma.conf"),
                        Plugins(entry_points=False).schema)
    space = load_config(write(tmp_path, SAMPLE), Plugins(entry_points=False).schema)
    assert comma.get("simulation", "resources") == "4 CPU:100 Memory:1024"
    assert space.get("simulation", "resources") == "4  CPU:100 Memory:1024"


def test_set_takes_haizeas_names_on_a_haizea_file(tmp_path):
    """``--set`` on a Haizea file took only lease_manager's names: Haizea's
    ``simulation.imagetransfer-bandwidth`` and ``general.lease-preparation`` were unknown."""
    path = write(tmp_path, SAMPLE)
    schema = Plugins(entry_points=False).schema
    cfg = load_config(path, schema, ["simulation.imagetransfer-bandwidth=50",
                                     "general.lease-preparation=imagetransfer"])
    assert cfg.get("preparation", "imagetransfer-bandwidth") == 50
    assert cfg.get("preparation", "lease-preparation") == "imagetransfer"
    assert cfg.source("preparation", "imagetransfer-bandwidth") == "--set"
    with pytest.raises(ConfigError, match=r"^--set: \[general\] mode: OpenNebula"):
        load_config(path, schema, ["general.mode=opennebula"])


@pytest.mark.parametrize("level, logged", [("INFO", False), ("DEBUG", True), ("VDEBUG", True)])
def test_haizeas_debug_loglevel_writes_the_decision_log(tmp_path, level, logged):
    path = write(tmp_path, SAMPLE.replace("loglevel: INFO", f"loglevel: {level}"))
    cfg = load_config(path, Plugins(entry_points=False).schema)
    assert cfg.get("accounting", "decision-log") is logged
