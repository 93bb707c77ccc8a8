"""The option schema and the configuration loader: typed values, defaults, clear errors."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import lease_manager
from lease_manager.config.schema import (
    BOOLEAN,
    DURATION,
    FLOAT,
    INTEGER,
    NAMES,
    STRING,
    Option,
    Schema,
    load_config,
)
from lease_manager.errors import ConfigError
from lease_manager.plugins import Plugins

SITE = "[simulation]\nresources = 144 CPU:1 Memory:1024\n"


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Plugins(entry_points=False).schema


def write_ini(tmp_path: Path, text: str, name: str = "run.ini") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load_error(path, schema, overrides=()) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(path, schema, overrides)
    return info.value


# ------------------------------------------------------------------------------ valid files
def test_valid_file_typed_values_and_defaults(tmp_path, schema):
    path = write_ini(tmp_path, SITE + """\
clock = simulated
speedup = 2.5
stop-when = time
runtime = 01:30:00

[tracefile]
tracefile = /data/trace.swf
procs-per-vm = 8
vm-resources = CPU:1 Memory:1024
window-start = 5:02:14:30   # days first
window-length = 3600
queues = 1, 2 3
rebase = yes
skip-bad-lines = no

[scheduling]
backfilling = conservative

[accounting]
check-invariants = no
""")
    config = load_config(path, schema)
    get = config.get
    assert get("simulation", "resources") == "144 CPU:1 Memory:1024"
    assert get("simulation", "speedup") == 2.5
    assert get("simulation", "stop-when") == "time"
    assert get("simulation", "runtime") == 5400
    assert get("tracefile", "tracefile") == "/data/trace.swf"
    assert get("tracefile", "procs-per-vm") == 8 and isinstance(get("tracefile", "procs-per-vm"),
                                                                  int)
    assert get("tracefile", "window-start") == 5 * 86400 + 2 * 3600 + 14 * 60 + 30 == 440070
    assert get("tracefile", "window-length") == 3600
    assert get("tracefile", "queues") == (1, 2, 3)
    assert get("tracefile", "rebase") is True
    assert get("tracefile", "skip-bad-lines") is False
    assert get("scheduling", "backfilling") == "conservative"
    assert get("accounting", "check-invariants") is False
    # defaults filled in
    assert get("tracefile", "paradigm") == "hpc"
    assert get("tracefile", "max-jobs") == 0
    assert get("tracefile", "oversized") == "reject"
    assert get("scheduling", "backfilling-reservations") == 1
    assert get("scheduling", "policy-host-selection") == "greedy"
    assert get("scheduling", "policy-queue") == "fcfs"
    assert get("accounting", "probes") == ()
    assert config["scheduling", "backfilling"] == "conservative"
    # every option of the schema has a value
    assert {(o.section, o.name) for o in schema} == {
        (s, n) for s, opts in config.items().items() for n in opts}
    # where each value came from
    assert config.source("tracefile", "rebase") == f"{path}:15"
    assert config.source("tracefile", "paradigm") == "default"
    assert config.path == path


def test_defaults_when_nothing_is_set(schema):
    config = load_config(None, schema, ["simulation.resources=4 CPU:1"])
    assert config.get("scheduling", "backfilling") == "aggressive"
    assert math.isinf(config.get("simulation", "runtime"))
    assert math.isinf(config.get("tracefile", "window-length"))
    assert config.get("tracefile", "window-start") == 0
    assert config.get("tracefile", "tracefile") == ""
    with pytest.raises(KeyError, match="not in the schema"):
        config.get("scheduling", "nope")


@pytest.mark.parametrize("text, value", [
    ("yes", True), ("no", False), ("True", True), ("off", False), ("1", True), ("0", False)])
def test_booleans(tmp_path, schema, text, value):
    path = write_ini(tmp_path, SITE + f"[tracefile]\nrebase = {text}\n")
    assert load_config(path, schema).get("tracefile", "rebase") is value


@pytest.mark.parametrize("text, seconds", [
    ("90", 90), ("90.5", 90.5), ("01:30:00", 5400), ("5:02:14:30", 440070),
    ("1:00:00:00", 86400), ("unlimited", math.inf)])
def test_durations(tmp_path, schema, text, seconds):
    path = write_ini(tmp_path, SITE + f"[tracefile]\nwindow-length = {text}\n")
    assert load_config(path, schema).get("tracefile", "window-length") == seconds


def test_relative_tracefile_resolved_against_config_dir(tmp_path, schema, monkeypatch):
    confdir = tmp_path / "etc"
    confdir.mkdir()
    path = write_ini(confdir, SITE + "[tracefile]\ntracefile = ../traces/t.swf\n")
    monkeypatch.chdir("/")                    # the working directory must not matter
    config = load_config(path, schema)
    got = Path(config.get("tracefile", "tracefile"))
    assert got.resolve() == (tmp_path / "traces" / "t.swf").resolve()
    # an absolute path is kept as it is
    path = write_ini(confdir, SITE + "[tracefile]\ntracefile = /abs/t.swf\n")
    assert load_config(path, schema).get("tracefile", "tracefile") == "/abs/t.swf"


def test_relative_tracefile_with_relative_config_path(tmp_path, schema, monkeypatch):
    (tmp_path / "etc").mkdir()
    write_ini(tmp_path / "etc", SITE + "[tracefile]\ntracefile = t.swf\n")
    monkeypatch.chdir(tmp_path)
    config = load_config("etc/run.ini", schema)
    assert Path(config.get("tracefile", "tracefile")) == tmp_path.resolve() / "etc" / "t.swf"


# ----------------------------------------------------------------------------------- errors
def test_unknown_option_with_suggestion(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "\n[scheduling]\nbackfiling = off\n")
    err = load_error(path, schema)
    assert str(err) == (f"{path}:5: [scheduling] backfiling: unknown option "
                        "(did you mean 'backfilling'?)")
    assert (err.file, err.line, err.field) == (str(path), 5, "[scheduling] backfiling")


def test_unknown_option_without_suggestion(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[scheduling]\nzzz = 1\n")
    err = load_error(path, schema)
    assert str(err) == f"{path}:4: [scheduling] zzz: unknown option"


def test_unknown_section_with_suggestion(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "\n[schedulng]\nbackfilling = off\n")
    err = load_error(path, schema)
    assert str(err) == f"{path}:4: unknown section [schedulng] (did you mean 'scheduling'?)"


def test_wrong_type(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[tracefile]\nprocs-per-vm = two\n")
    err = load_error(path, schema)
    assert str(err).startswith(f"{path}:4: [tracefile] procs-per-vm: ")
    assert "'two' is not an integer" in str(err)


@pytest.mark.parametrize("text, fragment", [
    ("[tracefile]\nrebase = maybe", "[tracefile] rebase: 'maybe' is not yes/no"),
    ("[accounting]\ncheck-invariants = si", "[accounting] check-invariants: 'si' is not yes/no"),
    ("[tracefile]\nwindow-start = 1:75:00", "[tracefile] window-start: '1:75:00' is not a dur"),
    ("[tracefile]\nqueues = 1, x", "[tracefile] queues: 'x' in '1, x' is not an integer"),
    ("[tracefile]\nvm-resources = CPU", "[tracefile] vm-resources: "),
])
def test_wrong_types_name_file_line_and_field(tmp_path, schema, text, fragment):
    path = write_ini(tmp_path, "[simulation]\nresources = 4 CPU:1\n" + text + "\n")
    err = load_error(path, schema)
    assert str(err).startswith(f"{path}:4: ")
    assert fragment in str(err)


def test_wrong_number(tmp_path, schema):
    path = write_ini(tmp_path, "[simulation]\nresources = 4 CPU:1\nspeedup = fast\n")
    err = load_error(path, schema)
    assert str(err) == f"{path}:3: [simulation] speedup: 'fast' is not a number"


def test_bad_site_resources(tmp_path, schema):
    path = write_ini(tmp_path, "[simulation]\nresources = lots\n")
    err = load_error(path, schema)
    assert str(err).startswith(f"{path}:2: [simulation] resources: ")


def test_value_not_in_choices(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[scheduling]\nbackfilling = agressive\n")
    err = load_error(path, schema)
    assert str(err) == (f"{path}:4: [scheduling] backfilling: 'agressive' is not one of off, "
                        "aggressive, conservative, intermediate (did you mean 'aggressive'?)")


def test_unknown_policy_name_is_not_a_choice(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[scheduling]\npolicy-host-selection = gredy\n")
    err = load_error(path, schema)
    assert "'gredy' is not one of" in str(err) and "(did you mean 'greedy'?)" in str(err)


def test_value_below_minimum(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[tracefile]\nprocs-per-vm = 0\n")
    err = load_error(path, schema)
    assert str(err) == f"{path}:4: [tracefile] procs-per-vm: '0' is below the minimum 1"
    path = write_ini(tmp_path, SITE + "[tracefile]\nmax-jobs = -1\n")
    assert "is below the minimum 0" in str(load_error(path, schema))


def test_required_option_missing(tmp_path, schema):
    path = write_ini(tmp_path, "[scheduling]\nbackfilling = off\n")
    err = load_error(path, schema)
    assert str(path) in str(err)
    assert "[simulation] resources" in str(err)
    assert "required option is missing" in str(err)
    err = load_error(None, schema)
    assert "[simulation] resources: required option is missing" in str(err)


def test_duplicate_option(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[scheduling]\nbackfilling = off\n# note\n"
                                      "backfilling = aggressive\n")
    err = load_error(path, schema)
    assert str(err) == f"{path}:6: option 'backfilling' is given twice in [scheduling]"
    assert err.line == 6


def test_duplicate_section(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[scheduling]\nbackfilling = off\n[scheduling]\n")
    err = load_error(path, schema)
    assert str(err) == f"{path}:5: section [scheduling] is given twice"


def test_unparsable_line_and_missing_header(tmp_path, schema):
    err = load_error(write_ini(tmp_path, SITE + "just some words\n"), schema)
    assert str(err).startswith(f"{tmp_path / 'run.ini'}:3: cannot parse this line")
    err = load_error(write_ini(tmp_path, "backfilling = off\n" + SITE), schema)
    assert str(err) == f"{tmp_path / 'run.ini'}:1: expected a [section] header first"


def test_missing_config_file(tmp_path, schema):
    err = load_error(tmp_path / "absent.ini", schema)
    assert str(err) == f"{tmp_path / 'absent.ini'}: configuration file not found"


# -------------------------------------------------------------------------------- overrides
def test_set_overrides_file_value(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[scheduling]\nbackfilling = off\n")
    config = load_config(path, schema, ["scheduling.backfilling=conservative",
                                        "tracefile.procs-per-vm = 4",
                                        "tracefile.Rebase=yes"])
    assert config.get("scheduling", "backfilling") == "conservative"
    assert config.source("scheduling", "backfilling") == "--set"
    assert config.get("tracefile", "procs-per-vm") == 4
    assert config.get("tracefile", "rebase") is True
    # the value may contain ':' and spaces
    config = load_config(path, schema, ["simulation.resources=2 CPU:4 Memory:8"])
    assert config.get("simulation", "resources") == "2 CPU:4 Memory:8"


def test_set_can_supply_a_required_option(schema):
    config = load_config(None, schema, ["simulation.resources=8 CPU:1"])
    assert config.get("simulation", "resources") == "8 CPU:1"
    assert config.path is None


@pytest.mark.parametrize("override, message", [
    ("tracefile.procs-per-vm=two", "--set: [tracefile] procs-per-vm: 'two' is not an integer"),
    ("tracefile.procs-per-vm=0", "--set: [tracefile] procs-per-vm: '0' is below the minimum 1"),
    ("scheduling.backfilling=easy", "--set: [scheduling] backfilling: 'easy' is not one of "),
    ("scheduling.backfiling=off", "--set: [scheduling] backfiling: unknown option "
                                  "(did you mean 'backfilling'?)"),
    ("schedulin.backfilling=off", "--set: unknown section [schedulin] "
                                  "(did you mean 'scheduling'?)"),
    ("foo=1", "--set: 'foo=1' is not section.option=value"),
    ("scheduling.backfilling", "--set: 'scheduling.backfilling' is not section.option=value"),
    (".backfilling=off", "--set: '.backfilling=off' is not section.option=value"),
    ("scheduling.=off", "--set: 'scheduling.=off' is not section.option=value"),
    # Unicode digits and underscores: Python reads them as numbers, we do not
    ("simulation.seed=1_000", "--set: [simulation] seed: '1_000' is not an integer (ASCII"),
    ("simulation.seed=\u0663", "--set: [simulation] seed: '\u0663' is not an integer (ASCII"),
    ("scheduling.suspend-rate=3\u0662", "--set: [scheduling] suspend-rate: '3\u0662' is not a "
                                       "number (ASCII"),
    ("simulation.resources=\u0661\u0664 CPU:1", "--set: [simulation] resources: "),
    ("tracefile.vm-resources=CPU:1_0", "--set: [tracefile] vm-resources: 'CPU:1_0': amount"),
    # was accepted, and the run printed a utilization of 0.0 %
    ("simulation.resources=4 CPU:1e300 Memory:1024", "--set: [simulation] resources: "
                                                     "'CPU:1e300': amount is above the maximum "
                                                     "1e+12"),
    ("tracefile.vm-resources=CPU:1 Memory:1e13", "--set: [tracefile] vm-resources: "
                                                 "'Memory:1e13': amount is above the maximum"),
    ("scheduling.suspend-rate=nan", "--set: [scheduling] suspend-rate: 'nan' is not a finite"),
    # a price that is not finite made every lease's price inf and the revenue 0
    ("pricing.rate=inf", "--set: [pricing] rate: 'inf': this option must be finite (at most "
                         "1e+09)"),
    # a run with leases ended in 'internal error: invariant violated', exit 3
    ("scheduling.shutdown-time=inf", "--set: [scheduling] shutdown-time: 'inf': this option "
                                     "must be finite (at most 1e+10)"),
    ("scheduling.shutdown-time=unlimited", "--set: [scheduling] shutdown-time: 'unlimited': "
                                           "this option must be finite"),
    ("scheduling.suspend-rate=inf", "--set: [scheduling] suspend-rate: 'inf': this option must"),
    ("scheduling.suspend-rate=1e300", "--set: [scheduling] suspend-rate: '1e300' is above the "
                                      "maximum 1e+12"),
    ("scheduling.migration-bandwidth=inf", "--set: [scheduling] migration-bandwidth: 'inf'"),
    ("scheduling.scheduling-threshold-factor=1e300", "--set: [scheduling] "
                                                    "scheduling-threshold-factor: '1e300' is"),
    ("admission.threshold=inf", "--set: [admission] threshold: 'inf': this option must be"),
    ("daemon.port=70000", "--set: [daemon] port: '70000' is above the maximum 65535"),
    ("daemon.max-body=99999999999999", "--set: [daemon] max-body: '99999999999999' is above"),
    ("daemon.reconcile-interval=inf", "--set: [daemon] reconcile-interval: 'inf': this"),
    ("slurm.commands-timeout=inf", "--set: [slurm] commands-timeout: 'inf': this option"),
    ("process.stop-grace=unlimited", "--set: [process] stop-grace: 'unlimited': this option"),
    ("simulation.seed=99999999999999999999999", "--set: [simulation] seed: "
                                                "'99999999999999999999999' is above the maximum"),
])
def test_set_is_validated(tmp_path, schema, override, message):
    path = write_ini(tmp_path, SITE)
    err = load_error(path, schema, [override])
    assert str(err).startswith(message)
    assert err.file == "--set"


def test_every_numeric_option_is_bounded():
    """Each number or duration option of the core and the shipped plugins has a finite
    maximum, and takes ``inf``/``unlimited`` only where it says so (a run's length, a trace
    window): an unbounded option took ``inf`` or 1e300 without a word."""
    from lease_manager.config.schema import DURATION, FLOAT, INTEGER
    from lease_manager.plugins import Plugins

    unbounded = [f"[{o.section}] {o.name}" for o in Plugins().schema
                 if o.type in (FLOAT, DURATION, INTEGER) and o.maximum is None
                 and not o.unlimited]
    assert unbounded == []
    unlimited = sorted(f"[{o.section}] {o.name}" for o in Plugins().schema if o.unlimited)
    assert unlimited == ["[dvfs] promise-horizon", "[simulation] runtime",
                         "[tracefile] window-length"]
    doc = Plugins().schema.document()
    shutdown = doc[doc.index("### `shutdown-time`"):]
    assert "- maximum: 1e+10" in shutdown[:shutdown.index("\n\n", 60)]
    runtime = doc[doc.index("### `runtime`"):]
    assert "- `unlimited` (or `inf`) allowed" in runtime[:runtime.index("\n\n", 60)]


def test_set_value_errors_even_when_file_is_valid(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[tracefile]\nprocs-per-vm = 2\n")
    err = load_error(path, schema, ["tracefile.procs-per-vm=two"])
    assert str(err).startswith("--set: [tracefile] procs-per-vm:")
    assert str(path) not in str(err)


def test_error_helper_names_where_a_value_was_set(tmp_path, schema):
    path = write_ini(tmp_path, SITE + "[tracefile]\nvm-resources = CPU:1\n")
    config = load_config(path, schema, ["tracefile.paradigm=cloud"])
    assert str(config.error("tracefile", "vm-resources", "too big")) == (
        f"{path}:4: [tracefile] vm-resources: too big")
    assert str(config.error("tracefile", "paradigm", "bad")) == (
        "--set: [tracefile] paradigm: bad")


# ------------------------------------------------------------------------------------ docs
def test_document_lists_every_core_option(schema):
    doc = schema.document()
    assert doc.startswith("# lease_manager configuration reference\n")
    for section in ("simulation", "tracefile", "scheduling", "accounting"):
        assert f"## [{section}]" in doc
    for opt in schema:
        assert f"### `{opt.name}`" in doc
    sections = re.split(r"^## ", doc, flags=re.M)[1:]
    by_section = {s.split("\n", 1)[0]: s for s in sections}
    assert set(by_section) == {f"[{s}]" for s in schema.sections}

    def entry(section: str, name: str) -> str:
        text = by_section[f"[{section}]"]
        return text.split(f"### `{name}`\n", 1)[1].split("### ", 1)[0]

    assert "- type: nodes" in entry("simulation", "resources")
    assert "- default: *required*" in entry("simulation", "resources")
    e = entry("scheduling", "backfilling")
    assert "- type: string" in e
    assert "- values: `off`, `aggressive`, `conservative`, `intermediate`" in e
    assert "- default: `aggressive`" in e
    assert "- type: integer" in entry("tracefile", "procs-per-vm")
    assert "- default: `1`" in entry("tracefile", "procs-per-vm")
    assert "- type: boolean (yes/no)" in entry("tracefile", "rebase")
    assert "- default: `no`" in entry("tracefile", "rebase")
    assert "- default: `yes`" in entry("accounting", "check-invariants")
    assert "- type: duration" in entry("tracefile", "window-length")
    assert "- default: `unlimited`" in entry("tracefile", "window-length")
    assert "- default: `00:00:00`" in entry("tracefile", "window-start")
    assert "- default: *empty*" in entry("tracefile", "tracefile")
    assert "- default: *empty*" in entry("tracefile", "queues")     # an empty list
    assert "- default: *empty*" in entry("accounting", "probes")
    assert "- values: `greedy`, `no-policy`" in entry("scheduling", "policy-host-selection")
    assert "``" not in doc.replace("```", "")


def test_schema_rejects_conflicting_declarations():
    a = Option("x", "y", INTEGER, 1)
    schema = Schema([a])
    schema.add([Option("x", "y", INTEGER, 1)])          # the same declaration again is fine
    with pytest.raises(ValueError, match=r"\[x\] y is declared twice"):
        schema.add([Option("x", "y", INTEGER, 2)])


def test_option_doc_is_collapsed_and_required_flag():
    opt = Option("x", "y", STRING, doc="""
        one
          two   three""")
    assert opt.doc == "one two three"
    assert opt.required and not Option("x", "z", STRING, "").required


# --------------------------------------------------------------------------------- plugins
class EnergyPlugin:
    """A tiny plugin that declares options of its own."""

    @lease_manager.hookimpl
    def register_options(self):
        return [
            Option("energy", "idle-power", FLOAT, 100.0, minimum=0,
                   doc="Power a node draws when idle, in watts."),
            Option("energy", "model", STRING, "linear", choices=("linear", "cubic"),
                   doc="Power model."),
            Option("energy", "shutdown", BOOLEAN, False, doc="Switch idle nodes off."),
            Option("energy", "wake-delay", DURATION, 60, doc="Boot time."),
            Option("energy", "meters", NAMES, ("pdu",), doc="Meters."),
        ]


@pytest.fixture(scope="module")
def plugin_schema() -> Schema:
    return Plugins(entry_points=False, extra=[EnergyPlugin()]).schema


def test_plugin_options_join_the_schema(tmp_path, plugin_schema, schema):
    assert "energy" in plugin_schema.sections and "energy" not in schema.sections
    assert plugin_schema.option("energy", "idle-power").default == 100.0
    path = write_ini(tmp_path, SITE + "[energy]\nidle-power = 42.5\nshutdown = yes\n"
                                      "wake-delay = 00:02:00\n")
    config = load_config(path, plugin_schema, ["energy.model=cubic"])
    assert config.get("energy", "idle-power") == 42.5
    assert config.get("energy", "shutdown") is True
    assert config.get("energy", "wake-delay") == 120
    assert config.get("energy", "model") == "cubic"
    assert config.get("energy", "meters") == ("pdu",)             # default
    # core options are still there
    assert config.get("scheduling", "backfilling") == "aggressive"
    # without the plugin, the section is unknown
    err = load_error(path, schema)
    assert str(err) == f"{path}:3: unknown section [energy]"


def test_plugin_options_are_validated(tmp_path, plugin_schema):
    path = write_ini(tmp_path, SITE + "[energy]\nidle-power = -1\n")
    err = load_error(path, plugin_schema)
    assert str(err) == f"{path}:4: [energy] idle-power: '-1' is below the minimum 0"
    path = write_ini(tmp_path, SITE + "[energy]\nidle-pwer = 1\n")
    err = load_error(path, plugin_schema)
    assert str(err) == f"{path}:4: [energy] idle-pwer: unknown option (did you mean 'idle-power'?)"
    err = load_error(None, plugin_schema, ["simulation.resources=4 CPU:1", "energy.model=cube"])
    assert str(err).startswith("--set: [energy] model: 'cube' is not one of linear, cubic")
    err = load_error(None, plugin_schema, ["simulation.resources=4 CPU:1",
                                           "energy.shutdown=perhaps"])
    assert str(err) == "--set: [energy] shutdown: 'perhaps' is not yes/no"


def test_plugin_options_are_documented(plugin_schema):
    doc = plugin_schema.document()
    energy = doc.split("## [energy]\n", 1)[1]
    assert "### `idle-power`" in energy
    assert "- type: number" in energy and "- default: `100.0`" in energy
    assert "Power a node draws when idle, in watts." in energy
    assert "- values: `linear`, `cubic`" in energy
    assert "- default: `01:00`" not in energy and "- default: `00:01:00`" in energy
    assert "- default: `pdu`" in energy
    assert doc.index("## [accounting]") < doc.index("## [energy]")    # after the core's


@pytest.mark.parametrize("value, message", [
    ("a" * 256 + ".swf", "the path has a name of 260 bytes (aaaaaaaaaaaaaaaaaaaaaaaa...; at "
                         "most 255)"),
    ("/" + "d/" * 2100 + "t.swf", "bytes long (at most 4095)"),
])
def test_a_path_no_file_can_have_is_one_line(tmp_path, schema, value, message):
    """A name over 255 bytes or a path over 4,095 once ended in an OSError traceback when the
    file was opened: refused where the option is read, naming it."""
    path = write_ini(tmp_path, f"[simulation]\nresources = 4 CPU:1\n[tracefile]\n"
                               f"tracefile = {value}\n")
    err = load_error(path, schema)
    assert str(err).startswith(f"{path}:4: [tracefile] tracefile: ")
    assert message in str(err) and "\n" not in str(err)


def test_a_nul_in_a_path_is_one_line(schema):
    with pytest.raises(ConfigError) as caught:
        load_config(None, schema, ["simulation.resources=4 CPU:1",
                                   "simulation.sites-file=a\x00b"])
    assert str(caught.value) == \
        "--set: [simulation] sites-file: a path cannot hold a NUL character"


def test_a_probe_named_twice_is_one_line(tmp_path, schema):
    """``probes = usage, usage`` registered the probe twice: pluggy's ValueError ("Plugin name
    already registered") and a page of traceback."""
    path = write_ini(tmp_path, "[simulation]\nresources = 4 CPU:1\n[accounting]\n"
                               "probes = usage, usage\n")
    err = load_error(path, schema)
    assert str(err) == f"{path}:4: [accounting] probes: 'usage' is named twice"


def test_a_sites_file_that_is_not_a_regular_file_is_one_line(schema):
    """``sites-file = /dev/zero`` was read until the kernel killed the process."""
    with pytest.raises(ConfigError) as caught:
        load_config(None, schema, ["simulation.resources=4 CPU:1",
                                   "simulation.sites-file=/dev/zero"])
    assert str(caught.value) == \
        "/dev/zero: the sites file is a device, pipe or socket, not a regular file"


def test_sites_of_more_than_a_million_nodes_in_all_are_one_line(tmp_path, schema):
    """Each site was bounded by the node limit, not their sum: a 1.5 KB sites file of 50 sites
    of a million nodes each ran out of memory (numpy's traceback under a 3 GB limit). The
    site that goes over is named with its line."""
    sites = tmp_path / "sites.csv"
    sites.write_text("name,resources\na,600000 CPU:1\nb,300000 CPU:1; 100000 CPU:2\n"
                     "c,1 CPU:1\nd,1000000 CPU:1\n")
    with pytest.raises(ConfigError) as caught:
        load_config(None, schema, ["simulation.resources=4 CPU:1",
                                   f"simulation.sites-file={sites}"])
    assert str(caught.value) == (f"{sites}:4: [site:c] resources: the sites have more than "
                                 "1,000,000 nodes in all (up to this one: 1,000,001)")
    path = write_ini(tmp_path, "[simulation]\nresources = 4 CPU:1\n[site:a]\n"
                               "resources = 999999 CPU:1\n[site:b]\nresources = 2 CPU:1\n")
    assert str(load_error(path, schema)) == (
        f"{path}:6: [site:b] resources: the sites have more than 1,000,000 nodes in all (up "
        "to this one: 1,000,001)")
