"""Start-up cost: an SWF replay loads no heavy library that it does not use.

Every installed plugin is loaded at start-up, so a module-level import of a heavy library in
any plugin is paid by every run (scipy.optimize alone costs about 0.4 CPU-s, more than the
rest of a one-lease replay). Libraries are imported where they are used instead.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: what a replay of an SWF trace with etc/sample.ini never needs
HEAVY = ("scipy", "lxml", "matplotlib", "pandas", "pvlib", "deap", "ssl", "http.client",
         "plotly")

PROGRAM = """
import sys
from lease_manager.cli import main
code = main(sys.argv[1:])
heavy = {heavy!r}
print(",".join(m for m in heavy if m in sys.modules))
sys.exit(code)
"""


def one_job_trace(tmp_path: Path) -> Path:
    """An SWF trace of the 30-day trace's first job (a one-lease replay: start-up alone)."""
    trace = ROOT / "traces" / "sdsc-blue-30days.swf"
    first = next(line for line in trace.read_text().splitlines()
                 if line.strip() and not line.startswith(";"))
    one = tmp_path / "one.swf"
    one.write_text(first + "\n")
    return one


def test_a_one_lease_swf_replay_imports_no_heavy_library(tmp_path: Path) -> None:
    one = one_job_trace(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(heavy=HEAVY), "simulate",
         str(ROOT / "etc" / "sample.ini"), "--set", f"tracefile.tracefile={one}", "--quiet",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert loaded == "", f"start-up imported {loaded}"


THREADS = """
import os, sys
from lease_manager.cli import load_numpy
load_numpy()
print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS", "-"))
"""


def _threads_after_load(env_extra: dict[str, str]) -> tuple[int, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | env_extra
    out = subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True,
                         env=env, timeout=60, check=True).stdout.split()
    return int(out[0]), out[1]


def test_the_command_line_loads_numpy_with_one_blas_thread_and_leaves_no_setting() -> None:
    """The command line loads numpy before anything else, with OpenBLAS's pool at one thread
    (its threads spin when the pool starts: about 0.09 CPU-s per run on two cores). The
    process then has a single thread, and the setting is not left in the environment that
    the manager's own processes inherit; a setting the user made is kept."""
    if not Path("/proc/self/task").is_dir():
        import pytest

        pytest.skip("threads are counted in /proc")
    assert _threads_after_load({}) == (1, "-")
    assert _threads_after_load({"OPENBLAS_NUM_THREADS": "1"}) == (1, "1")


def test_importing_the_package_loads_no_numpy() -> None:
    """``import lease_manager`` loads its exported names when first used, so that the command
    line can set numpy up first (and scripts that import it pay for what they use)."""
    out = subprocess.run([sys.executable, "-c", "import sys, lease_manager; "
                          "print('numpy' in sys.modules); from lease_manager import Lease; "
                          "print(Lease.__name__, 'numpy' in sys.modules)"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split() == ["False", "Lease", "True"]


def _parse(parser, argv: list[str]) -> tuple:
    """What parsing ``argv`` gives: the namespace, or the exit status and what was printed."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = vars(parser.parse_args(argv))
        except SystemExit as exc:
            return ("exit", exc.code, out.getvalue(), err.getvalue())
    return ("args", args, out.getvalue(), err.getvalue())


def test_simulate_parses_alone_as_with_every_command() -> None:
    """A replay builds only its own command's parser: the same arguments, help and errors as
    the full command line's."""
    from lease_manager.cli import build_parser

    full, alone = build_parser(), build_parser("simulate")
    commands = next(a for a in alone._actions if a.dest == "command")
    assert list(commands.choices) == ["simulate"]   # (the others are not built)
    for argv in (["simulate", "etc/sample.ini"],
                 ["simulate", "x.ini", "--set", "a.b=1", "--set", "c.d=2", "--out", "o",
                  "--force", "-q", "--log-level", "debug", "--allow-empty"],
                 ["simulate", "--help"], ["simulate"], ["simulate", "x.ini", "--bad"],
                 ["simulate", "x.ini", "--log-level", "loud"], ["simulate", "x.ini", "extra"],
                 ["simulate", "x.ini", "--version"]):
        assert _parse(alone, argv) == _parse(full, argv), argv


DEFAULT_RUN = """
import sys
from lease_manager.cli import main
code = main(sys.argv[1:])
print(",".join(sorted(m for m in sys.modules if m in {modules!r} or m.startswith({prefixes!r}))))
sys.exit(code)
"""

#: what a default replay (etc/sample.ini, no power model) does not need to load: metadata and
#: its email parser (plugins are found without them), logging, processes and signals (the
#: daemon's backends), the statistics module, the offline planner, GreenPar's MILP, the
#: hints of error messages (difflib), the other commands, the backends' work values and
#: their user switching, the LWF reader, the power profile (attrs classes, ~1 ms each to make),
#: the process backend's VM processes, the decision log, the guard of a package's policies'
#: answers, Haizea's workload overheads and the multi-site parts (modules a one-site replay
#: does not use)
NOT_LOADED = ("importlib.metadata", "email", "logging", "subprocess", "signal", "getpass",
              "statistics", "gzip", "importlib.resources", "lease_manager.plugin_template",
              "lm_greenpar.milp", "difflib", "lease_manager.enactment.work",
              "lease_manager.enactment.run_as", "lease_manager.workload.lwf",
              "lease_manager.energy.power_profile", "lease_manager.enactment.vm_processes",
              "lease_manager.observers.decisions", "lease_manager.policies.answers",
              "lease_manager.workload.overheads", "lease_manager.multisite")
NOT_LOADED_PACKAGES = ("lease_manager.daemon", "lease_manager.web", "lease_manager.planning",
                       "lease_manager.experiments.sweep", "lease_manager.experiments.report",
                       "lease_manager.experiments.plots", "lease_manager.config.haizea")


def test_a_default_replay_loads_neither_metadata_nor_logging_nor_the_daemon(tmp_path) -> None:
    one = one_job_trace(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c",
         DEFAULT_RUN.format(modules=set(NOT_LOADED), prefixes=NOT_LOADED_PACKAGES),
         "simulate", str(ROOT / "etc" / "sample.ini"), "--set", f"tracefile.tracefile={one}",
         "--quiet", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
