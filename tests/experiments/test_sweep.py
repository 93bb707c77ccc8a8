"""Sweeps: the sweep file, its runs on a local pool and on Dask, resuming, failures, the table.

The main sweep is 3 profiles (backfilling off / aggressive / conservative) x 2 traces (the
first 150 jobs of the SDSC Blue excerpt, and 150 of its last 200 jobs as a second file) x 3 seeds =
18 runs. It is run once as a subprocess with ``--jobs 2``, interrupted (SIGINT) after its first
runs finish, and resumed; the resumed result is the reference the Dask run must equal.
"""

from __future__ import annotations

import csv
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lease_manager import cli
from lease_manager.errors import ConfigError, LeaseManagerError
from lease_manager.experiments.results import TIMING_COLUMNS
from lease_manager.experiments.sweep import load_sweep, parse_seeds, run_status, run_sweep
from lease_manager.plugins import Plugins

from support import TRACES

ROOT = Path(__file__).resolve().parents[2]
TRACE = TRACES / "sdsc-blue-600requests.swf"
PROFILES = ("off", "aggressive", "conservative")
TRACE_NAMES = ("sdsc-blue-600requests", "later")


def write_later_trace(directory: Path) -> Path:
    """The last 200 jobs of the excerpt as a trace of its own (replayed rebased)."""
    path = directory / "later.swf"
    path.write_text("".join(f"{line}\n" for line in TRACE.read_text().splitlines()[400:]))
    return path


def sweep_text(trace2: str = "later.swf", *, seeds: str = "1-3", max_jobs: int = 150,
               profiles: tuple[str, ...] = PROFILES, extra: str = "") -> str:
    """Line 1 [sweep], 2 profiles, 3 traces, 4 seeds, 6 [common:simulation], 7 resources,
    9 [common:tracefile] 10 vm-resources 11 max-jobs 12 rebase, 14 [common:accounting]
    15 probes, then one [PROFILE:scheduling] section per profile (17-18, 20-21, 23-24)."""
    text = (f"[sweep]\nprofiles = {', '.join(profiles)}\ntraces = {TRACE}, {trace2}\n"
            f"seeds = {seeds}\n\n"
            "[common:simulation]\nresources = 144 CPU:1 Memory:1024\n\n"
            f"[common:tracefile]\nvm-resources = CPU:1 Memory:1024\nmax-jobs = {max_jobs}\n"
            "rebase = yes\n\n"
            "[common:accounting]\nprobes = usage\n")
    for profile in profiles:
        text += f"\n[{profile}:scheduling]\nbackfilling = {profile}\n"
    return text + extra


def make_sweep(directory: Path, **kwargs) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_later_trace(directory)
    path = directory / "sweep.ini"
    path.write_text(sweep_text(**kwargs))
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def cli_run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lease_manager.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def all_run_ids(seeds=(1, 2, 3)) -> list[str]:
    return [f"{p}/{t}/seed-{s}" for p in PROFILES for t in TRACE_NAMES for s in seeds]


# ---------------------------------------------------------------------------- the file
def test_sweep_file_expands_to_profile_trace_seed_runs(tmp_path):
    path = make_sweep(tmp_path)
    sweep = load_sweep(path)
    assert sweep.profiles == PROFILES
    assert [name for name, _ in sweep.traces] == list(TRACE_NAMES)
    assert sweep.seeds == (1, 2, 3)
    assert [r.run_id for r in sweep.runs] == all_run_ids()
    run = sweep.runs[4]   # off / later / seed 2
    assert (run.profile, run.trace, run.seed, run.trace_path) == ("off", "later", 2, "later.swf")
    assert dict(run.settings) == {"simulation.resources": "144 CPU:1 Memory:1024",
                                  "tracefile.vm-resources": "CPU:1 Memory:1024",
                                  "tracefile.max-jobs": "150", "tracefile.rebase": "yes",
                                  "accounting.probes": "usage",
                                  "scheduling.backfilling": "off"}
    # the trace is made absolute (overrides resolve against the working directory)
    assert run.overrides[-2:] == (f"tracefile.tracefile={tmp_path / 'later.swf'}",
                                  "simulation.seed=2")
    assert "simulate" in run.command() and "--set" in run.command()


def test_profile_options_override_common_ones_and_base(tmp_path):
    base = tmp_path / "base.ini"
    base.write_text("[simulation]\nresources = 10 CPU:1\n[scheduling]\nbackfilling = off\n")
    path = make_sweep(tmp_path, profiles=("off", "conservative"), seeds="4",
                      extra="[common:scheduling]\nbackfilling = aggressive\n")
    path.write_text(path.read_text().replace("[sweep]\n", "[sweep]\nbase = base.ini\n"))
    sweep = load_sweep(path)
    assert sweep.base == base
    by_profile = {r.profile: dict(r.settings) for r in sweep.runs}
    assert by_profile["off"]["scheduling.backfilling"] == "off"
    assert by_profile["conservative"]["scheduling.backfilling"] == "conservative"
    assert {r.seed for r in sweep.runs} == {4}


def test_profiles_default_to_the_sections_and_seeds_to_the_configuration(tmp_path):
    write_later_trace(tmp_path)
    path = tmp_path / "s.ini"
    path.write_text(f"[sweep]\ntraces = {TRACE}\n[b:scheduling]\nbackfilling = off\n"
                    "[a:scheduling]\nbackfilling = conservative\n"
                    "[common:simulation]\nresources = 4 CPU:1\n")
    sweep = load_sweep(path)
    assert sweep.profiles == ("b", "a")
    assert [r.run_id for r in sweep.runs] == ["b/sdsc-blue-600requests/seed-0",
                                              "a/sdsc-blue-600requests/seed-0"]


@pytest.mark.parametrize("text, seeds", [("1, 2, 5", (1, 2, 5)), ("1-4", (1, 2, 3, 4)),
                                         ("0 - 2, 7", (0, 1, 2, 7)), ("3", (3,))])
def test_parse_seeds(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "3-1", "1, 1", "-2", "1.5", "١-٣", "٣", "1_0",
                                  "1-3, ٤"])
def test_parse_seeds_errors(text):
    with pytest.raises(ValueError):
        parse_seeds(text)


@pytest.mark.parametrize("text", ["0-10000", "0-100000000000", "1, 0-9999", "0-9998 9999 2"])
def test_seeds_are_capped_and_refused_at_once(text):
    """Seed ranges were unbounded and repeats were looked for in a list: ``0-50000`` took
    10 CPU-s and ``0-100000000000`` never finished."""
    import time

    began = time.process_time()
    with pytest.raises(ValueError, match="more than 10,000 seeds|given twice"):
        parse_seeds(text)
    assert time.process_time() - began < 1
    assert len(parse_seeds("0-9999")) == 10_000


SWEEP_ERRORS = [
    # (edit of the sweep file, expected line, expected text)
    (lambda t: t.replace("backfilling = off", "backfiling = off"), 18,
     "[off:scheduling] backfiling: unknown option (did you mean 'backfilling'?)"),
    (lambda t: t.replace("[off:scheduling]", "[off:schedulng]"), 17,
     "unknown configuration section [schedulng] (did you mean 'scheduling'?)"),
    (lambda t: t.replace("[off:scheduling]", "[offf:scheduling]"), 17,
     "profile 'offf' is not in [sweep] profiles (did you mean 'off'?)"),
    (lambda t: t.replace("max-jobs = 150", "max-jobs = many"), 11,
     "[common:tracefile] max-jobs: 'many' is not an integer"),
    (lambda t: t.replace("seeds = 1-3", "seeds = 1-x"), 4, "[sweep] seeds: '1-x' is not a seed"),
    (lambda t: t.replace("later.swf", "absent.swf"), 3, "trace file not found"),
    (lambda t: t.replace("probes = usage", "probes = usag"), 15,
     "[common:accounting] probes: profile 'off': no probe policy named 'usag'"),
    (lambda t: t.replace("backfilling = off", "backfilling = of"), 18,
     "'of' is not one of off, aggressive, conservative, intermediate (did you mean 'off'?)"),
    (lambda t: t.replace("rebase = yes", "tracefile = x.swf"), 12,
     "[common:tracefile] tracefile: set by [sweep] traces"),
    (lambda t: t.replace("[sweep]", "[sweep]\nprofile = a"), 2,
     "[sweep] profile: unknown option (did you mean 'profiles'?)"),
    (lambda t: t.replace("[common:simulation]", "[simulation]"), 6,
     "section [simulation] is not [sweep], [common:SECTION], [axis:NAME] or [PROFILE:SECTION]"),
]


@pytest.mark.parametrize("edit, line, text", SWEEP_ERRORS)
def test_sweep_file_errors_name_file_line_and_field(tmp_path, edit, line, text):
    path = make_sweep(tmp_path)
    path.write_text(edit(path.read_text()))
    with pytest.raises(ConfigError) as info:
        load_sweep(path)
    assert info.value.file == str(path)
    assert info.value.line == line, str(info.value)
    assert text in str(info.value)


def test_sweep_file_error_on_the_command_line(tmp_path, capsys):
    path = make_sweep(tmp_path)
    path.write_text(path.read_text().replace("backfilling = off", "backfiling = off"))
    assert cli.main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == (f"lease-manager: error: {path}:18: [off:scheduling] backfiling: unknown "
                   "option (did you mean 'backfilling'?)\n")
    assert not (tmp_path / "out").exists()   # nothing started


def test_example_sweep_files_load():
    sweep = load_sweep(ROOT / "etc" / "sweep-example.ini")
    assert len(sweep.profiles) == 3 and len(sweep.traces) == 2 and len(sweep.seeds) == 3
    assert {dict(r.settings)["scheduling.backfilling"] for r in sweep.runs} == set(PROFILES)


def test_thesis_sweep_lists_when_the_consolidation_plugin_is_installed(capsys):
    plugins = Plugins()
    needed = {("host-selection", "ea-consolidation"), ("host-selection", "ea-time-horizon"),
              ("annotator", "thesis-workload"), ("probe", "resource-contention")}
    missing = [name for kind, name in needed if name not in plugins.policies.get(kind, {})]
    if missing:
        pytest.skip(f"the consolidation plugin is not installed ({', '.join(sorted(missing))})")
    assert cli.main(["sweep", str(ROOT / "etc" / "thesis-ch6-sweep.ini"), "--list",
                     "--out", "/nonexistent-sweep-out"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("60 runs (12 profiles x 1 trace x 5 seeds)")
    assert "hpc-ea-time-horizon-8/sdsc-blue-30days/seed-5" in out


@pytest.mark.parametrize("name, head", [
    ("thesis-ch7-blue-sweep.ini", "80 runs (8 profiles x 2 traces x 5 seeds)"),
    ("thesis-ch7-ds-sweep.ini", "40 runs (8 profiles x 1 trace x 5 seeds)")])
def test_thesis_ch7_sweeps_list_when_both_plugins_are_installed(name, head, capsys):
    """The chapter-7 experiment as sweeps (crossed from three axes) on the windows shipped in
    traces/ (a clone runs them)."""
    plugins = Plugins()
    if "autonomic" not in plugins.policies.get("queue", {}) or "ea-time-horizon" not in \
            plugins.policies.get("host-selection", {}):
        pytest.skip("the consolidation and autonomic plugins are not installed")
    assert cli.main(["sweep", str(ROOT / "etc" / name), "--list",
                     "--out", "/nonexistent-sweep-out"]) == 0
    assert capsys.readouterr().out.startswith(head)


# -------------------------------------------------------------- run, interrupt, resume
def default_sigint() -> None:
    """In the child, before exec: SIGINT back to its default action.

    A shell that starts a command in the background without job control (``pytest ... &`` in a
    script, some CI runners) sets SIGINT to "ignore", the child inherits it, and Python then
    installs no KeyboardInterrupt handler: the sweep would run to its end whatever the test
    sends. That, not a race, is why this test failed in some runs.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """The 18-run sweep, interrupted by SIGINT after its first runs, then resumed."""
    d = tmp_path_factory.mktemp("resume")
    path = make_sweep(d)
    out = d / "out"
    proc = subprocess.Popen([sys.executable, "-m", "lease_manager.cli", "sweep", str(path),
                             "--out", str(out), "--jobs", "2"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    deadline = time.monotonic() + 60
    while len(list(out.glob("*/*/*/summary.json"))) < 3 and proc.poll() is None:
        assert time.monotonic() < deadline, "the sweep made no progress"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    first_out, first_err = proc.communicate(timeout=60)
    first = subprocess.CompletedProcess(proc.args, proc.returncode, first_out, first_err)
    before = {run_id: (out / run_id / "summary.json").stat().st_mtime_ns
              for run_id in all_run_ids() if (out / run_id / "summary.json").is_file()}
    leases_before = {run_id: (out / run_id / "leases.csv").stat().st_mtime_ns
                     for run_id in before}
    second = cli_run("sweep", path, "--out", out, "--jobs", "2")
    return dict(path=path, out=out, first=first, second=second, before=before,
                leases_before=leases_before)


def test_interrupted_sweep_stops_and_keeps_finished_runs(resumed):
    first, before = resumed["first"], resumed["before"]
    assert first.returncode == 130, first.stderr
    assert "interrupted" in first.stderr and "run the same command again" in first.stderr
    assert 3 <= len(before) < 18, "the sweep was not interrupted in the middle"
    assert "Traceback" not in first.stderr


def test_resumed_sweep_does_not_redo_finished_runs(resumed):
    second, out, before = resumed["second"], resumed["out"], resumed["before"]
    assert second.returncode == 0, second.stderr
    assert (f"18 runs (3 profiles x 2 traces x 3 seeds): {18 - len(before)} run now, "
            f"{len(before)} already done, 0 failed") in second.stdout
    for run_id, mtime in before.items():
        assert (out / run_id / "summary.json").stat().st_mtime_ns == mtime, run_id
        assert (out / run_id / "leases.csv").stat().st_mtime_ns == \
            resumed["leases_before"][run_id], run_id
    assert all(run_status(out / run_id) == "done" for run_id in all_run_ids())
    assert not list(out.rglob(".partial"))


def test_result_table_has_one_row_per_run(resumed):
    out = resumed["out"]
    rows = read_csv(out / "results.csv")
    assert [r["run_id"] for r in rows] == all_run_ids()
    header = list(rows[0])
    assert header[:5] == ["run_id", "profile", "trace", "seed", "status"]
    for column in ("scheduling.backfilling", "tracefile.max-jobs", "accounting.probes",
                   "avg_wait", "makespan", "utilization", "trace.jobs_read",
                   "simulation.cpu_seconds", "error"):
        assert column in header
    for row in rows:
        profile, trace, seed = row["run_id"].split("/")
        assert (row["profile"], row["trace"], f"seed-{row['seed']}") == (profile, trace, seed)
        assert row["status"] == "done" and row["error"] == ""
        assert row["scheduling.backfilling"] == profile
        summary = json.loads((out / row["run_id"] / "summary.json").read_text())
        assert float(row["avg_wait"]) == summary["avg_wait"]
        assert int(row["leases_total"]) == summary["leases_total"] == 150
    # the backfilling modes differ on these traces
    waits = {r["profile"]: float(r["avg_wait"]) for r in rows if r["trace"] == "later"}
    assert waits["off"] > waits["aggressive"]
    with sqlite3.connect(out / "results.sqlite") as con:
        assert con.execute("SELECT COUNT(*), COUNT(DISTINCT run_id) FROM runs").fetchone() == (
            18, 18)
        (wait,) = con.execute('SELECT avg_wait FROM runs WHERE profile = ? AND trace = ? '
                              'AND seed = 2', ("off", "later")).fetchone()
        assert wait == waits["off"]
        (backfilling,) = con.execute('SELECT DISTINCT "scheduling.backfilling" FROM runs '
                                     'WHERE profile = ?', ("conservative",)).fetchone()
        assert backfilling == "conservative"


def test_each_run_folder_is_complete(resumed):
    out = resumed["out"]
    run_dir = out / "aggressive" / "later" / "seed-3"
    assert {p.name for p in run_dir.iterdir()} == {"run.json", "leases.csv", "summary.json",
                                                    "series"}
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["run_id"] == "aggressive/later/seed-3" and meta["seed"] == 3
    assert meta["settings"]["scheduling.backfilling"] == "aggressive"
    # the placement that ran, and why auto chose it, in run.json and summary.json
    assert meta["placement"] == "at-start (auto)"
    assert json.loads((run_dir / "summary.json").read_text())["placement"] == "at-start (auto)"
    assert {p.name for p in (run_dir / "series").iterdir()} >= {"utilization.csv",
                                                                 "queue_length.csv"}
    plan = json.loads((out / "sweep.json").read_text())
    assert plan["runs"] == all_run_ids() and plan["profiles"] == list(PROFILES)


def test_list_shows_runs_and_their_state(resumed, capsys):
    out = resumed["out"]
    (out / "off" / "later" / "seed-1" / "summary.json").rename(
        out / "off" / "later" / "seed-1" / "summary.json.bak")
    try:
        assert cli.main(["sweep", str(resumed["path"]), "--out", str(out), "--list"]) == 0
    finally:
        (out / "off" / "later" / "seed-1" / "summary.json.bak").rename(
            out / "off" / "later" / "seed-1" / "summary.json")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"18 runs (3 profiles x 2 traces x 3 seeds) in {out}/: 17 done, "
                        "0 failed, 1 partial, 0 pending")
    assert lines[1].startswith("every run: simulation.resources=144 CPU:1 Memory:1024")
    assert len(lines) == 2 + 18
    assert lines[2].split() == ["off/sdsc-blue-600requests/seed-1", "done",
                                "scheduling.backfilling=off"]
    assert lines[5].split()[:2] == ["off/later/seed-1", "partial"]


def test_changed_settings_are_not_mixed_with_finished_runs(resumed, capsys):
    """The sweep file edited after its runs finished: run again into the same folder, it is
    refused (another sweep file is refused before that: test_sweep_folder.py)."""
    path = resumed["path"]
    original = path.read_text()
    path.write_text(original.replace("backfilling = conservative", "backfilling = intermediate"))
    try:
        assert cli.main(["sweep", str(path), "--out", str(resumed["out"]), "--jobs", "1"]) == 2
    finally:
        path.write_text(original)
    err = capsys.readouterr().err
    assert "finished runs were made with other settings" in err
    assert "conservative/sdsc-blue-600requests/seed-1" in err


# ----------------------------------------------------------------------------------- Dask
def test_dask_local_cluster_gives_identical_results(resumed, tmp_path):
    distributed = pytest.importorskip("distributed")
    sweep = load_sweep(resumed["path"])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        outcome = run_sweep(sweep, tmp_path / "dask", executor=address)
    assert (outcome.done, outcome.failed, outcome.interrupted) == (18, [], False)
    local = read_csv(resumed["out"] / "results.csv")
    remote = read_csv(tmp_path / "dask" / "results.csv")
    assert len(local) == len(remote) == 18
    for a, b in zip(local, remote):
        for column in TIMING_COLUMNS:
            a.pop(column), b.pop(column)
        assert a == b
    for run_id in all_run_ids():
        for name in ("leases.csv", "series/utilization.csv", "series/queue_length.csv"):
            assert (resumed["out"] / run_id / name).read_bytes() == \
                (tmp_path / "dask" / run_id / name).read_bytes(), (run_id, name)


def test_dask_executor_needs_the_extra(tmp_path, monkeypatch, capsys):
    path = make_sweep(tmp_path, profiles=("off",), seeds="1")
    monkeypatch.setitem(sys.modules, "distributed", None)   # as if not installed
    assert cli.main(["sweep", str(path), "--out", str(tmp_path / "o"),
                     "--executor", "dask://127.0.0.1:1"]) == 2
    assert "pip install 'lease-manager[dask]'" in capsys.readouterr().err


def test_bad_executor(tmp_path, capsys):
    path = make_sweep(tmp_path, profiles=("off",), seeds="1")
    assert cli.main(["sweep", str(path), "--executor", "slurm"]) == 2
    assert "expected 'local' or dask://HOST:PORT" in capsys.readouterr().err


# ------------------------------------------------------------------------------- failures
def corrupt_trace(directory: Path) -> Path:
    """A trace whose 5th line has 'abc' as its run time: the run fails while replaying."""
    lines = TRACE.read_text().splitlines()[:40]
    fields = lines[4].split()
    fields[3] = "abc"
    lines[4] = " ".join(fields)
    path = directory / "broken.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_failed_run_is_reported_and_the_others_go_on(tmp_path, capsys):
    corrupt_trace(tmp_path)
    path = make_sweep(tmp_path, profiles=("off", "aggressive"), seeds="1-2", max_jobs=30)
    path.write_text(path.read_text().replace("later.swf", "broken.swf"))
    out = tmp_path / "out"
    assert cli.main(["sweep", str(path), "--out", str(out), "--jobs", "2", "-q"]) == 1
    err = capsys.readouterr().err
    failed = [f"{p}/broken/seed-{s}" for p in ("off", "aggressive") for s in (1, 2)]
    for run_id in failed:
        assert f"failed: {run_id}: {tmp_path / 'broken.swf'}:5: field 4 (run time): 'abc' " \
               "is not a number" in err
        assert run_status(out / run_id) == "failed"
        text = (out / run_id / "error.txt").read_text()
        assert "field 4 (run time)" in text.splitlines()[0]
        assert "to reproduce: lease-manager simulate" in text
        assert not (out / run_id / "summary.json").exists()
    assert "4 run(s) failed" in err
    rows = read_csv(out / "results.csv")
    assert len(rows) == 8
    assert {r["run_id"]: r["status"] for r in rows} == {
        **{f"{p}/sdsc-blue-600requests/seed-{s}": "done" for p in ("off", "aggressive")
           for s in (1, 2)}, **{run_id: "failed" for run_id in failed}}
    assert all("'abc' is not a number" in r["error"] for r in rows if r["status"] == "failed")
    # a rerun retries the failed runs only
    done = {r["run_id"]: (out / r["run_id"] / "summary.json").stat().st_mtime_ns
            for r in rows if r["status"] == "done"}
    assert cli.main(["sweep", str(path), "--out", str(out), "--jobs", "1"]) == 1
    assert "0 run now, 4 already done, 4 failed" in capsys.readouterr().out
    assert all((out / r / "summary.json").stat().st_mtime_ns == t for r, t in done.items())


def test_run_sweep_in_process_with_one_job(tmp_path):
    path = make_sweep(tmp_path, profiles=("conservative",), seeds="7", max_jobs=40)
    outcome = run_sweep(load_sweep(path), tmp_path / "out", jobs=1)
    assert (outcome.total, outcome.done, outcome.already_done, outcome.failed) == (2, 2, 0, [])
    again = run_sweep(load_sweep(path), tmp_path / "out", jobs=1)
    assert (again.done, again.already_done) == (0, 2)
    rows = read_csv(tmp_path / "out" / "results.csv")
    assert [r["run_id"] for r in rows] == ["conservative/sdsc-blue-600requests/seed-7",
                                           "conservative/later/seed-7"]
    assert [r["seed"] for r in rows] == ["7", "7"]


def test_unknown_executor_scheme_is_an_error():
    from lease_manager.experiments.sweep import dask_address

    assert dask_address("dask://head:8786") == "tcp://head:8786"
    assert dask_address("tcp://head:8786") == "tcp://head:8786"
    with pytest.raises(LeaseManagerError):
        dask_address("http://head")


def test_a_number_given_to_a_number_or_file_option_is_not_made_a_path(tmp_path):
    """`electricity-price = 0.10` in a sweep file stayed 0.10 in load_config but was resolved
    as the file SWEEP-DIR/0.10 by the sweep (every run failed with 'file not found'); a file
    name is still resolved against the sweep file's folder."""
    (tmp_path / "price.csv").write_text("time,price\n0,0.2\n")
    path = tmp_path / "s.ini"
    path.write_text(f"""[sweep]
profiles = a, b
traces = {TRACE}
[common:simulation]
resources = 144 CPU:1 Memory:1024
[common:power]
pstates = 1:1:2
[a:power]
electricity-price = 0.10
[b:power]
electricity-price = price.csv
""")
    runs = {r.profile: r for r in load_sweep(path).runs}
    assert "power.electricity-price=0.10" in runs["a"].overrides
    assert f"power.electricity-price={tmp_path / 'price.csv'}" in runs["b"].overrides
