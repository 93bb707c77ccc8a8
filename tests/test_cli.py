"""The ``lease-manager`` command, run as a subprocess: outputs, exit codes and error lines.

Starting an interpreter costs about a third of a second, so every command of this module is
declared as a *scenario* (a function that prepares its files in its own directory and returns
the arguments) and all scenarios are launched together, a few at a time, when the module
starts; each test then waits for the result of its own scenario.
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

from support import TRACES

TRACE = TRACES / "sdsc-blue-600requests.swf"
HEADER = ["lease_id", "source_id", "type", "state", "submit", "start", "end", "vms",
          "requested", "actual", "wait"]
SUMMARY_KEYS = {"leases_total", "leases_completed", "leases_rejected", "makespan", "avg_wait",
                "max_wait", "avg_slowdown", "avg_bounded_slowdown", "utilization", "simulation"}


# --------------------------------------------------------------------------------- helpers
def config_text(trace: Path | str, resources: str = "144 CPU:1 Memory:1024",
                extra: str = "") -> str:
    """Line 1 [simulation], 2 resources, 4 [tracefile], 5 tracefile, 6 vm-resources,
    8 [scheduling], 9 backfilling, 10 onwards ``extra``."""
    return (f"[simulation]\nresources = {resources}\n\n"
            f"[tracefile]\ntracefile = {trace}\nvm-resources = CPU:1 Memory:1024\n\n"
            f"[scheduling]\nbackfilling = aggressive\n" + extra)


def write_config(directory: Path, trace: Path | str = TRACE, name: str = "small.ini",
                 **kwargs) -> Path:
    path = directory / name
    path.write_text(config_text(trace, **kwargs))
    return path


def small_trace(directory: Path, lines: int = 12) -> Path:
    """The first ``lines`` jobs of the SDSC Blue trace. Processors (field 8) of the first 12:
    4 4 4 4 4 4 4 64 4 16 16 1 (jobs 13..22, 25, 26, 27); all run times are >= 0."""
    path = directory / "small.swf"
    path.write_text("".join(f"{line}\n" for line in TRACE.read_text().splitlines()[:lines]))
    return path


def corrupt(directory: Path) -> Path:
    """A copy of the trace whose 5th line has 'abc' as its run time (field 4)."""
    lines = TRACE.read_text().splitlines()
    fields = lines[4].split()
    fields[3] = "abc"
    lines[4] = " ".join(fields)
    path = directory / "corrupt.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def trace_jobs(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith(";")]


def read_leases(out: Path) -> list[dict[str, str]]:
    with (out / "leases.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def read_summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def assert_one_error_line(proc: subprocess.CompletedProcess) -> str:
    """A user error: non-zero exit, exactly one line on stderr, no traceback."""
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("lease-manager: error: "), proc.stderr
    return lines[0]


# ------------------------------------------------------------------------------- scenarios
SCENARIOS: dict[str, Callable[[Path], list]] = {}


def scenario(fn: Callable[[Path], list]) -> Callable[[Path], list]:
    """Register ``fn(directory) -> command-line arguments`` under its name."""
    SCENARIOS[fn.__name__] = fn
    return fn


@attrs.frozen
class Result:
    proc: subprocess.CompletedProcess
    dir: Path

    @property
    def out(self) -> Path:
        return self.dir / "out"


def _run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    if args and args[0] == "__shell__":   # a scenario of several commands
        return subprocess.run(["bash", "-c", args[1]], cwd=cwd, capture_output=True,
                              text=True, timeout=120)
    return subprocess.run([sys.executable, "-m", "lease_manager.cli", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Launch every scenario at once; ``runs[name]`` waits for one and gives its Result."""
    pool = ThreadPoolExecutor(max_workers=4)
    futures: dict[str, tuple[Future, Path]] = {}
    for name, prepare in SCENARIOS.items():
        directory = tmp_path_factory.mktemp(name)
        futures[name] = (pool.submit(_run, prepare(directory), directory), directory)

    class Results:
        def __getitem__(self, name: str) -> Result:
            future, directory = futures[name]
            return Result(future.result(), directory)

    yield Results()
    pool.shutdown(wait=True)


# ---------------------------------------------------------------------------- simulate
@scenario
def full(d):
    """The 600-request SDSC Blue trace on 144 nodes."""
    return ["simulate", write_config(d), "--out", d / "out"]


def test_simulate_writes_leases_csv(runs):
    r = runs["full"]
    assert r.proc.returncode == 0, r.proc.stderr
    with (r.out / "leases.csv").open(newline="") as fh:
        header = next(csv.reader(fh))
    assert header[:len(HEADER)] == HEADER
    rows = read_leases(r.out)
    # the trace's jobs with a run time >= 0 become leases, one row each, in job order
    jobs = [j for j in trace_jobs(TRACE) if float(j[3]) >= 0]
    assert len(trace_jobs(TRACE)) == 600 and len(jobs) == 567
    assert len(rows) == 567
    assert [r["lease_id"] for r in rows] == [str(i) for i in range(1, 568)]
    assert [r["source_id"] for r in rows] == [j[0] for j in jobs]
    assert {r["state"] for r in rows} == {"done"}
    assert {r["type"] for r in rows} == {"best-effort"}
    # the first job, by hand: "13 0 22 43 32 0.03 -1 4 64800 ..." on an empty site
    first = rows[0]
    assert (first["source_id"], first["submit"], first["start"], first["end"], first["vms"],
            first["requested"], first["actual"], first["wait"]) == (
        "13", "0", "0", "43", "4", "64800", "43", "0")
    for row in rows:
        assert float(row["wait"]) == pytest.approx(float(row["start"]) - float(row["submit"]))
        assert float(row["wait"]) >= 0
        assert float(row["end"]) - float(row["start"]) == pytest.approx(float(row["actual"]))


def test_simulate_writes_summary_json(runs):
    r = runs["full"]
    summary = read_summary(r.out)
    assert SUMMARY_KEYS <= set(summary)
    assert summary["leases_total"] == 567
    assert summary["leases_completed"] == 567
    assert summary["leases_rejected"] == 0
    assert summary["trace"]["jobs_read"] == 600
    assert summary["trace"]["jobs_skipped"] == {"run time < 0": 33}
    assert summary["makespan"] > 0
    assert 0 <= summary["avg_wait"] <= summary["max_wait"]
    assert summary["avg_bounded_slowdown"] >= 1 and summary["avg_slowdown"] >= 1
    assert 0 < summary["utilization"] <= 1
    rows = read_leases(r.out)
    assert summary["max_wait"] == max(float(row["wait"]) for row in rows)
    assert summary["avg_wait"] == pytest.approx(sum(float(row["wait"]) for row in rows) / 567)
    sim = summary["simulation"]
    assert sim["cpu_seconds"] >= 0 and sim["peak_rss_mb"] > 0


def test_simulate_prints_a_short_summary(runs):
    r = runs["full"]
    lines = r.proc.stdout.splitlines()
    assert 2 <= len(lines) <= 8, r.proc.stdout
    assert lines[0] == "leases: 567 submitted, 567 completed, 0 rejected, 0 unfinished"
    assert "33 run time < 0" in r.proc.stdout
    assert "makespan" in r.proc.stdout and "utilization" in r.proc.stdout
    assert str(r.out) in lines[-1]
    assert r.proc.stderr == ""
    # the placement that ran, and why auto chose it, on one line; in both JSON files
    assert "placement: at-start (auto)" in lines
    assert read_summary(r.out)["placement"] == "at-start (auto)"
    assert json.loads((r.out / "run.json").read_text())["placement"] == "at-start (auto)"


@scenario
def set_and_quiet(d):
    return ["simulate", write_config(d), "--quiet", "--out", d / "out",
            "--set", "tracefile.max-jobs=20", "--set", "scheduling.backfilling=off"]


def test_simulate_set_and_quiet(runs):
    r = runs["set_and_quiet"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert r.proc.stdout == "" and r.proc.stderr == ""
    rows = read_leases(r.out)
    assert [row["source_id"] for row in rows] == [j[0] for j in trace_jobs(TRACE)[:20]]
    assert read_summary(r.out)["leases_total"] == 20


@scenario
def oversized_reject(d):
    return ["simulate", write_config(d, small_trace(d), resources="4 CPU:1 Memory:1024"),
            "--out", d / "out"]


def test_oversized_leases_rejected_by_default(runs):
    r = runs["oversized_reject"]
    assert r.proc.returncode == 0, r.proc.stderr
    summary = read_summary(r.out)
    assert summary["leases_total"] == 12
    assert summary["leases_rejected"] == 3          # jobs 21 (64 procs), 25 and 26 (16 procs)
    assert summary["leases_completed"] == 9
    rows = read_leases(r.out)
    assert sorted(row["source_id"] for row in rows if row["state"] == "rejected") == [
        "21", "25", "26"]
    assert "3 rejected" in r.proc.stdout


@scenario
def skip_bad_lines(d):
    return ["simulate", write_config(d, corrupt(d)), "--out", d / "out",
            "--set", "tracefile.skip-bad-lines=yes", "--set", "tracefile.max-jobs=10"]


def test_skip_bad_lines_goes_on(runs):
    r = runs["skip_bad_lines"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert "1 bad lines" in r.proc.stdout
    summary = read_summary(r.out)
    assert summary["trace"]["bad_lines"] == 1 and summary["leases_total"] == 10
    # line 5 (job 17) is skipped; the next ten jobs are replayed
    assert [row["source_id"] for row in read_leases(r.out)] == [
        j[0] for j in trace_jobs(TRACE)[:11] if j[0] != "17"]


# ---------------------------------------------------------------------------- bad inputs
@scenario
def malformed_swf(d):
    return ["simulate", write_config(d, corrupt(d)), "--out", d / "out"]


def test_error_malformed_swf_line(runs):
    r = runs["malformed_swf"]
    msg = assert_one_error_line(r.proc)
    assert f"{r.dir / 'corrupt.swf'}:5: field 4 (run time): 'abc' is not a number" in msg


@scenario
def unknown_option(d):
    return ["simulate", write_config(d, extra="backfiling = off\n")]


def test_error_unknown_option(runs):
    r = runs["unknown_option"]
    msg = assert_one_error_line(r.proc)
    assert msg == (f"lease-manager: error: {r.dir / 'small.ini'}:10: [scheduling] backfiling: "
                   "unknown option (did you mean 'backfilling'?)")


@scenario
def wrong_type(d):
    path = d / "bad.ini"
    path.write_text(config_text(TRACE).replace("[tracefile]\n",
                                               "[tracefile]\nprocs-per-vm = two\n"))
    return ["simulate", path]


def test_error_wrong_type(runs):
    r = runs["wrong_type"]
    msg = assert_one_error_line(r.proc)
    assert msg == (f"lease-manager: error: {r.dir / 'bad.ini'}:5: [tracefile] procs-per-vm: "
                   "'two' is not an integer")


@scenario
def wrong_type_in_set(d):
    return ["simulate", write_config(d), "--set", "tracefile.procs-per-vm=two"]


def test_error_wrong_type_in_set(runs):
    msg = assert_one_error_line(runs["wrong_type_in_set"].proc)
    assert msg == "lease-manager: error: --set: [tracefile] procs-per-vm: 'two' is not an integer"


@scenario
def missing_trace(d):
    return ["simulate", write_config(d, "no-such-trace.swf")]


def test_error_missing_trace_file(runs):
    r = runs["missing_trace"]
    msg = assert_one_error_line(r.proc)
    assert f"{r.dir / 'small.ini'}:5: [tracefile] tracefile" in msg
    assert "not found" in msg and "no-such-trace.swf" in msg
    assert not (r.dir / "results").exists()


@scenario
def missing_config(d):
    return ["simulate", d / "absent.ini"]


def test_error_missing_config_file(runs):
    r = runs["missing_config"]
    msg = assert_one_error_line(r.proc)
    assert msg == f"lease-manager: error: {r.dir / 'absent.ini'}: configuration file not found"


@scenario
def oversized_error(d):
    return ["simulate", write_config(d, small_trace(d), resources="4 CPU:1 Memory:1024"),
            "--set", "tracefile.oversized=error", "--out", d / "out"]


def test_error_oversized_lease(runs):
    r = runs["oversized_error"]
    msg = assert_one_error_line(r.proc)
    # line 8 is job 21, the first to ask for more than 4 VMs (64 processors)
    assert f"{r.dir / 'small.swf'}:8: requested processors: larger than the site" in msg
    assert "64 VMs" in msg


# ------------------------------------------------------------------ config-doc and plugins
@scenario
def config_doc(d):
    return ["config-doc"]


def test_config_doc(runs):
    proc = runs["config_doc"].proc
    assert proc.returncode == 0 and proc.stderr == ""
    for text in ("[simulation]", "[tracefile]", "[scheduling]", "[accounting]", "backfilling",
                 "procs-per-vm", "policy-host-selection", "*required*"):
        assert text in proc.stdout


@scenario
def plugins(d):
    return ["plugins"]


def test_plugins(runs):
    proc = runs["plugins"].proc
    assert proc.returncode == 0 and proc.stderr == ""
    out = proc.stdout
    assert "lease_manager.policies.defaults" in out
    assert "lease_manager.policies.host_selection" in out
    for policy in ("host-selection: greedy", "host-selection: no-policy", "queue: fcfs",
                   "admission: accept-all", "pricing: free"):
        assert policy in out
    # which host selection policies support placement = at-start (haizea-greedy does not)
    assert "    host selection with placement = at-start: greedy, no-policy\n" in out


# ------------------------------------------------------------- empty traces, bad output paths
@scenario
def empty_trace(d):
    (d / "empty.swf").write_text("; only a header\n")
    return ["simulate", write_config(d, d / "empty.swf"), "--out", d / "out"]


def test_an_empty_trace_is_an_error_naming_the_file(runs):
    r = runs["empty_trace"]
    msg = assert_one_error_line(r.proc)
    assert msg == (f"lease-manager: error: {r.dir / 'empty.swf'}: the trace holds no jobs: "
                   "nothing to replay (--allow-empty writes an empty run)")
    assert not r.out.exists()


@scenario
def empty_trace_allowed(d):
    (d / "empty.swf").write_text("")
    return ["simulate", write_config(d, d / "empty.swf"), "--out", d / "out", "--allow-empty"]


def test_allow_empty_writes_an_empty_run(runs):
    r = runs["empty_trace_allowed"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert read_summary(r.out)["leases_total"] == 0


HAIZEA_EMPTY_LWF = """<?xml version="1.0"?>
<lease-workload name="sample">
  <lease-requests>
<!--
    <lease-request arrival="00:00:00.00">
      <lease preemptible="true">
        <nodes><node-set numnodes="1">
          <res amount="100" type="CPU"/><res amount="1024" type="Memory"/>
        </node-set></nodes>
        <start/>
        <duration time="01:00:00.00"/>
      </lease>
    </lease-request>
-->
  </lease-requests>
</lease-workload>
"""


@scenario
def haizea_empty_trace(d):
    """Haizea's shipped sample.lwf: every request commented out (step 1 of its quickstart)."""
    (d / "sample.lwf").write_text(HAIZEA_EMPTY_LWF)
    (d / "haizea.conf").write_text("[general]\nmode: simulated\n[simulation]\nresources: 4 "
                                   "CPU:100 Memory:1024\n[scheduling]\nsuspension: none\n"
                                   "[tracefile]\ntracefile: sample.lwf\n[accounting]\n")
    return ["simulate", d / "haizea.conf", "--out", d / "out", "-q"]


def test_a_haizea_files_empty_trace_runs_with_a_warning(runs):
    """Haizea runs a trace without requests and stops: so does a Haizea configuration file,
    with one line of warning (our own files keep the error: the tests above)."""
    r = runs["haizea_empty_trace"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert r.proc.stderr == (f"lease-manager: warning: {r.dir / 'sample.lwf'}: the trace holds "
                             "no jobs: an empty run\n")
    assert read_summary(r.out)["leases_total"] == 0


@scenario
def convert_to_a_missing_folder(d):
    return ["convert", TRACE, d / "nowhere" / "x.lwf", "-c", write_config(d)]


def test_convert_to_a_missing_folder_is_one_line(runs):
    r = runs["convert_to_a_missing_folder"]
    msg = assert_one_error_line(r.proc)
    assert msg == (f"lease-manager: error: cannot write {r.dir / 'nowhere' / 'x.lwf'}: folder "
                   f"{r.dir / 'nowhere'} does not exist")


@scenario
def sweep_out_is_a_file(d):
    (d / "notes.md").write_text("mine\n")
    (d / "sweep.ini").write_text(f"[sweep]\ntraces = {TRACE}\n\n[common:simulation]\n"
                                 "resources = 144 CPU:1 Memory:1024\n")
    return ["sweep", d / "sweep.ini", "--out", d / "notes.md", "-q"]


def test_a_sweep_into_a_file_is_one_line_and_leaves_it(runs):
    r = runs["sweep_out_is_a_file"]
    msg = assert_one_error_line(r.proc)
    assert msg == (f"lease-manager: error: cannot write results to {r.dir / 'notes.md'}: it is "
                   "a file, not a folder")
    assert (r.dir / "notes.md").read_text() == "mine\n"


def test_every_command_says_what_it_does_in_its_help():
    from lease_manager.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in commands.choices.items():
        assert sub.description and len(sub.description) > 40, name


# ------------------------------------------------------------------------------ run folders
@scenario
def twice_without_out(d):
    """Two runs of the same configuration without --out (the second in the module's
    results/small-2), chained in one shell."""
    config = write_config(d, small_trace(d))
    cmd = f"{sys.executable} -m lease_manager.cli simulate {config} -q"
    return ["__shell__", f"{cmd} && {cmd}"]


@scenario
def out_holds_a_run(d):
    config = write_config(d, small_trace(d))
    cmd = f"{sys.executable} -m lease_manager.cli simulate {config} -q --out {d / 'out'}"
    export = f"{sys.executable} -m lease_manager.cli export {d / 'out'} --format batsim"
    return ["__shell__", f"{cmd} && {export} > /dev/null && mkdir -p {d / 'out' / 'series'} && "
                         f"touch {d / 'out' / 'series' / 'stale.csv'} {d / 'out' / 'mine.txt'}"
                         f" && {{ {cmd} 2> {d / 'refused.txt'}; echo $? > {d / 'code.txt'}; }}"
                         f" && {cmd} --force"]


def test_without_out_each_run_gets_a_folder_of_its_own(runs):
    r = runs["twice_without_out"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert read_summary(r.dir / "results" / "small")["leases_total"] == 12
    assert read_summary(r.dir / "results" / "small-2")["leases_total"] == 12


def test_a_run_folder_is_replaced_only_with_force(runs):
    r = runs["out_holds_a_run"]
    assert r.proc.returncode == 0, r.proc.stderr
    assert (r.dir / "code.txt").read_text().strip() == "2"
    assert (r.dir / "refused.txt").read_text() == (
        f"lease-manager: error: {r.out} holds a run already: --force replaces it, or choose "
        "another --out\n")
    assert (r.out / "mine.txt").exists() and not (r.out / "series" / "stale.csv").exists()
    assert not (r.out / "jobs.csv").exists()      # the old run's export went with it
    meta = json.loads((r.out / "run.json").read_text())
    assert meta["overrides"] == [] and meta["seed"] == 0
    assert meta["effective"]["scheduling"]["backfilling"] == "aggressive"
    assert meta["effective"]["simulation"]["resources"]
    assert meta["trace"]["path"] == str(r.dir / "small.swf")
    assert meta["trace"]["sha256"] == hashlib.sha256(
        (r.dir / "small.swf").read_bytes()).hexdigest()
    assert meta["command"].endswith(f"--out {r.out} --force")
    assert "lease-manager (built-in)" in meta["plugins"]


def test_console_summary_accounts_for_every_job_read(tmp_path, capsys):
    """The first 105 jobs of the Blue trace: 4 have a negative run time, the 105th is read and
    turned away by max-jobs = 100, and reading stops there."""
    from lease_manager import cli

    sample = Path(__file__).resolve().parents[1] / "etc" / "sample.ini"
    assert cli.main(["simulate", str(sample), "--out", str(tmp_path / "run"),
                     "--set", "tracefile.max-jobs=100"]) == 0
    assert ("trace: 105 jobs read: 100 replayed, 4 skipped (4 run time < 0), 1 filtered "
            "(1 beyond max-jobs: reading stopped there)\n") in capsys.readouterr().out


def test_progress_bar_counts_the_traces_jobs_with_rate_and_simulated_time(tmp_path,
                                                                           monkeypatch):
    """On a terminal the bar's total is the trace's 5,545 job lines (not its bytes); it ends
    with every one of them done with: replayed, skipped or filtered."""
    import io
    import re
    import sys

    from lease_manager import cli

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    sample = Path(__file__).resolve().parents[1] / "etc" / "sample.ini"
    assert cli.main(["simulate", str(sample), "--out", str(tmp_path / "run")]) == 0
    frames = [f for f in err.getvalue().split("\r") if f.startswith("replay:")]
    assert frames, err.getvalue()
    counts = [tuple(map(int, re.search(r"(\d+)/(\d+)", f).groups())) for f in frames]
    assert {total for _, total in counts} == {5545}
    assert counts[-1][0] == 5545 and [n for n, _ in counts] == sorted(n for n, _ in counts)
    assert "jobs/s" in frames[-1] and "simulated" in frames[-1] and "days" in frames[-1]


@pytest.mark.parametrize("fails", [False, True])
def test_simulate_freezes_the_set_up_for_the_replay_only(tmp_path, monkeypatch, fails):
    """The objects there are when the replay starts are left out of the garbage collector's
    passes while it runs, and given back to them when it ends, well or not (a caller in the
    same process, like this test, collects as before)."""
    import gc

    from lease_manager import cli
    from lease_manager.run import Run

    during = []
    replay = Run.run

    def run(self, *args, **kwargs):
        during.append(gc.get_freeze_count())
        if fails:
            raise KeyboardInterrupt
        return replay(self, *args, **kwargs)

    monkeypatch.setattr(Run, "run", run)
    sample = Path(__file__).resolve().parents[1] / "etc" / "sample.ini"
    before = gc.get_freeze_count()
    code = cli.main(["simulate", str(sample), "--quiet", "--out", str(tmp_path / "run"),
                     "--set", "tracefile.max-jobs=10"])
    assert code == (130 if fails else 0)
    assert during and during[0] > before   # (the run itself among them)
    assert gc.get_freeze_count() == before == 0
