"""Sweep files that cross axes (``[sweep] axes`` and ``[axis:NAME]``), ``--only``, and the
thesis sweep files written with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lease_manager import cli
from lease_manager.errors import ConfigError
from lease_manager.experiments.sweep_file import load_sweep, only_profiles
from lease_manager.plugins import Plugins

from support import ROOT, TRACES

TRACE = TRACES / "sdsc-blue-600requests.swf"

CROSSED = f"""[sweep]
traces = {TRACE}
seeds = 1
axes = mode, site

[common:tracefile]
max-jobs = 20

[axis:mode]
off = scheduling.backfilling=off
easy = scheduling.backfilling=aggressive

[axis:site]
small = simulation.resources=64 CPU:1 Memory:1024
big = simulation.resources=144 CPU:1 Memory:1024
    tracefile.procs-per-vm=2

[easy-big:tracefile]
max-jobs = 10
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.ini"
    path.write_text(text)
    return path


def settings(sweep, profile: str) -> dict[str, str]:
    return dict(next(r for r in sweep.runs if r.profile == profile).settings)


def test_axes_cross_into_profiles_named_by_their_values(tmp_path):
    """2 modes x 2 sites = 4 profiles, the first axis varying slowest; a value may set two
    options; a section named after a crossed profile adds to it (and wins)."""
    sweep = load_sweep(write(tmp_path, CROSSED), Plugins(entry_points=False))
    assert sweep.profiles == ("off-small", "off-big", "easy-small", "easy-big")
    assert settings(sweep, "off-small") == {
        "tracefile.max-jobs": "20", "scheduling.backfilling": "off",
        "simulation.resources": "64 CPU:1 Memory:1024"}
    assert settings(sweep, "easy-big") == {
        "tracefile.max-jobs": "10", "scheduling.backfilling": "aggressive",
        "simulation.resources": "144 CPU:1 Memory:1024", "tracefile.procs-per-vm": "2"}


def test_only_keeps_the_named_profiles_and_refuses_unknown_ones(tmp_path):
    sweep = load_sweep(write(tmp_path, CROSSED), Plugins(entry_points=False))
    assert only_profiles(sweep, ["easy-big", "off-small"]).profiles == ("off-small", "easy-big")
    with pytest.raises(ConfigError, match="no profile 'easy-bigg' in the sweep .did you mean "
                                          "'easy-big'"):
        only_profiles(sweep, ["easy-bigg"])


def test_sweep_only_from_the_command_line_lists_one_profile(tmp_path, capsys):
    path = write(tmp_path, CROSSED)
    assert cli.main(["sweep", str(path), "--list", "--only", "off-big",
                     "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 run (1 profile x 1 trace x 1 seed)")
    assert "off-big/sdsc-blue-600requests/seed-1" in out


@pytest.mark.parametrize("change, line, message", [
    (lambda t: t.replace("axes = mode, site", "axes = mode, site, speed"), 4,
     "no [axis:speed] section gives the values of axis 'speed'"),
    (lambda t: t.replace("axes = mode, site", "axes = mode"), 13,
     "axis 'site' is not in [sweep] axes"),
    (lambda t: t.replace("off = scheduling.backfilling=off\neasy = scheduling.backfilling="
                         "aggressive\n", ""), 9, "axis 'mode' has no values"),
    (lambda t: t.replace("off = scheduling.backfilling=off", "off = scheduling.backfiling=off"),
     10, "[axis:mode] off: unknown option (did you mean 'backfilling'?)"),
    (lambda t: t.replace("off = scheduling.backfilling=off", "off = scheduling.backfilling"),
     10, "'scheduling.backfilling' is not section.option=value"),
    (lambda t: t.replace("off = scheduling.backfilling=off", "off = scheduling.backfilling=of"),
     10, "[axis:mode] off: 'of' is not one of"),
    (lambda t: t.replace("tracefile.procs-per-vm=2", "scheduling.backfilling=off"), 15,
     "scheduling.backfilling is set by axes 'mode' and 'site'"),
    (lambda t: t.replace("small = simulation", "sm/all = simulation"), 14,
     "'sm/all' cannot name a profile"),
    (lambda t: t.replace("off = scheduling.backfilling=off", "off = tracefile.tracefile=x.swf"),
     10, "set by [sweep] traces, not per profile"),
])
def test_axis_errors_name_the_file_line_and_field(tmp_path, change, line, message):
    path = write(tmp_path, change(CROSSED))
    with pytest.raises(ConfigError) as err:
        load_sweep(path, Plugins(entry_points=False))
    assert err.value.file == str(path)
    assert err.value.line == line, str(err.value)
    assert message in str(err.value)


@pytest.mark.parametrize("name, profiles, example", [
    ("thesis-ch6-sweep.ini", 12, "hpc-ea-time-horizon-8"),
    ("thesis-ch7-blue-sweep.ini", 8, "nonauto-green2-8cores"),
    ("thesis-ch7-ds-sweep.ini", 8, "auto-green1-4cores"),
])
def test_the_thesis_sweep_files_cross_into_the_thesis_configurations(name, profiles, example):
    plugins = Plugins()
    if "ea-time-horizon" not in plugins.policies.get("host-selection", {}) or \
            "autonomic" not in plugins.policies.get("queue", {}):
        pytest.skip("the consolidation and autonomic plugins are not installed")
    path = ROOT / "etc" / name
    sweep = load_sweep(path, plugins)   # its traces ship in traces/: a clone runs it
    assert len(sweep.profiles) == profiles and example in sweep.profiles
    assert len(path.read_text().splitlines()) < 70   # a screenful


def test_a_trace_whose_name_climbs_out_of_the_output_folder_is_refused(tmp_path):
    """``...swf`` reduces to ``..``: its runs would have made (and cleared) ``PROFILE/..``, the
    sweep's own profile folder. It is refused, naming the line; nothing is written."""
    trace = tmp_path / "...swf"
    trace.write_bytes(TRACE.read_bytes())
    path = write(tmp_path, f"[sweep]\ntraces = {trace}\n[a:scheduling]\nbackfilling = off\n")
    with pytest.raises(ConfigError) as err:
        load_sweep(path, Plugins(entry_points=False))
    assert err.value.line == 2 and "its name '..' cannot name a run folder" in str(err.value)


def test_a_run_folder_always_stays_inside_the_output_folder(tmp_path):
    """Defence in depth: a run id that would leave ``--out`` never becomes a task."""
    import attrs

    from lease_manager.errors import LeaseManagerError

    sweep = load_sweep(write(tmp_path, CROSSED), Plugins(entry_points=False))
    spec = sweep.runs[0]
    assert spec.task(tmp_path / "out")["dir"] == str((tmp_path / "out" / spec.run_id).resolve())
    for bad in ("off-small/../seed-1", "../x/seed-1", "a/b", "a/b/c/d", "a//seed-1"):
        with pytest.raises(LeaseManagerError, match="does not name a folder inside"):
            attrs.evolve(spec, run_id=bad).task(tmp_path / "out")


def test_an_axis_value_may_set_a_sites_options(tmp_path):
    """``site:NAME.option=value`` in an axis value sets that site's option; an option a site
    may not set is one line naming the axis value."""
    text = f"""[sweep]
traces = {TRACE}
axes = spread

[common:simulation]
resources = 4 CPU:1 Memory:1024

[axis:spread]
low = site:a.carbon-rate=normal:0.2:0.05
    site:a.resources=4 CPU:1 Memory:1024
high = site:a.carbon-rate=normal:0.2:0.4
    site:a.resources=4 CPU:1 Memory:1024
"""
    sweep = load_sweep(write(tmp_path, text), Plugins(entry_points=False))
    assert settings(sweep, "high")["site:a.carbon-rate"] == "normal:0.2:0.4"
    bad = text.replace("site:a.carbon-rate=normal:0.2:0.4", "site:a.policy-queue=fcfs")
    with pytest.raises(ConfigError, match=r"\[axis:spread\] high.*not an option a site may set"):
        load_sweep(write(tmp_path, bad), Plugins(entry_points=False))
