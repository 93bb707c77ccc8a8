"""The ``lease-manager`` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from lease_manager import __version__
from lease_manager.cli_commands import (
    cmd_config_doc,
    cmd_convert,
    cmd_explain,
    cmd_export,
    cmd_new_plugin,
    cmd_plugin_doc,
    cmd_plugins,
    cmd_report,
    cmd_serve,
    cmd_simulate,
    cmd_sweep,
)
from lease_manager.cli_commands import trace_line as trace_line
from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.plot_options import COLOUR_BY, TIME_PLOTS
from lease_manager.numbers import arg_float, arg_int


def hours_window(text: str) -> tuple[float, float]:
    """``FROM:TO`` in hours (``--states-hours``), FROM before TO."""
    low, sep, high = text.partition(":")
    try:
        window = (arg_float(low), arg_float(high)) if sep else None
    except argparse.ArgumentTypeError:
        window = None
    if window is None or not window[0] < window[1]:
        raise argparse.ArgumentTypeError(f"expected FROM:TO in hours with FROM before TO "
                                         f"(e.g. 240:264), not {text!r}")
    return window


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; for ``command = "simulate"`` without the other commands'
    parsers (a replay's start-up: it parses the same, and prints the same help and errors,
    as the top level's usage names no command)."""
    parser = argparse.ArgumentParser(
        prog="lease-manager", description="A Haizea-style lease manager: replay workload "
        "traces under scheduling and energy policies.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser("simulate", help="replay a workload trace on the simulated clock",
                         description="Replay the configuration's trace (or LWF workload) on "
                                     "the simulated clock, print a summary and write OUT/: "
                                     "run.json (what produced the run), leases.csv, "
                                     "summary.json, series/*.csv and, with a [power] model, "
                                     "node_states.csv and nodes.csv. A folder that holds a "
                                     "run is never overwritten without --force.")
    sim.add_argument("config", help="configuration file (.ini)")
    sim.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                     help="override a configuration option (repeatable)")
    sim.add_argument("--out", help="output directory (default: results/CONFIG-NAME, or "
                     "CONFIG-NAME-2, -3... if it holds a run)")
    sim.add_argument("--force", action="store_true",
                     help="replace the run --out holds (its outputs are removed first)")
    sim.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    sim.add_argument("--log-level", choices=("info", "debug"), default="info",
                     help="debug: write DIR/decisions.jsonl, one line per scheduling decision "
                     "(read it with `lease-manager explain DIR LEASE`)")
    sim.add_argument("--allow-empty", action="store_true",
                     help="replay a trace that holds no jobs (otherwise an error; a Haizea "
                          "configuration file's empty trace only warns, as Haizea runs it)")
    sim.set_defaults(func=cmd_simulate)
    if command == "simulate":
        return parser

    plug = sub.add_parser("plugins", help="list installed plugins, their policies and hooks",
                          description="Print the installed plugins (built-in and from "
                                      "packages), the policies each registers by kind, and "
                                      "the hooks each implements. Writes no file.")
    plug.add_argument("--json", action="store_true", help="machine-readable output")
    plug.set_defaults(func=cmd_plugins)

    conv = sub.add_parser(
        "convert", help="convert an SWF trace into Haizea's LWF, or LWF back into SWF",
        description="SWF -> LWF applies the replay's conversion rules ([tracefile] options); "
        "LWF -> SWF keeps the best-effort leases SWF can express and counts the others. The "
        "direction follows INPUT's format. Writes OUTPUT.")
    conv.add_argument("input", help="an SWF trace (.swf, .swf.gz) or an LWF file")
    conv.add_argument("output", help="the file to write")
    conv.add_argument("-c", "--config", help="configuration giving [simulation] resources and "
                      "the [tracefile] conversion options")
    conv.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                      help="override a configuration option (repeatable)")
    conv.add_argument("--strict", action="store_true",
                      help="LWF -> SWF: stop at the first lease SWF cannot express")
    conv.set_defaults(func=cmd_convert)

    doc = sub.add_parser("config-doc", help="print the configuration reference",
                         description="Print every section and option the installed core and "
                                     "plugins accept, with types, defaults and meanings, as "
                                     "Markdown on standard output. Writes no file.")
    doc.set_defaults(func=cmd_config_doc)

    pdoc = sub.add_parser("plugin-doc", help="print the policy reference",
                          description="Print each policy kind's protocol (its methods and "
                          "their meaning), what a policy reads of the run, the lease's public "
                          "fields and the hooks, as Markdown on standard output, from the "
                          "code itself (docs/reference/policies.md is this output). Writes no "
                          "file.")
    pdoc.set_defaults(func=cmd_plugin_doc)

    from lease_manager.policies import POLICY_KINDS

    newp = sub.add_parser("new-plugin", help="write a policy package to start from",
                          description="Write NAME/ (or --out): an installable package with a "
                          "policy of KIND that has one typed option, its entry point, a test "
                          "that replays a shipped trace with it, and a README. pip install -e "
                          "it, then run its test.")
    newp.add_argument("name", help="the policy's name (lower case, digits and dashes), also "
                      "the package's: lm-NAME, module lm_NAME")
    newp.add_argument("--kind", required=True, choices=new_plugin_kinds(POLICY_KINDS),
                      help="the policy kind")
    newp.add_argument("--out", metavar="DIR", help="the folder to write (default: lm-NAME); "
                      "it must not exist")
    newp.set_defaults(func=cmd_new_plugin)

    swp = sub.add_parser("sweep", help="run every profile x trace x seed of a sweep file",
                         description="Run a sweep file's runs (resumable: finished runs are "
                         "skipped) and collect their summaries into DIR/results.csv and "
                         "DIR/results.sqlite.")
    swp.add_argument("sweep", help="sweep file (.ini with a [sweep] section)")
    swp.add_argument("--out", help="output directory (default: results/SWEEP-NAME); one that "
                     "holds another sweep is refused unless --force or --add")
    swp.add_argument("--force", action="store_true",
                     help="replace the other sweep's results in --out")
    swp.add_argument("--add", action="store_true",
                     help="keep the other sweep's results in --out: this sweep goes to "
                     "OUT/SWEEP-NAME/, and OUT/results.csv lists both (this sweep's profiles "
                     "as SWEEP-NAME/PROFILE)")
    swp.add_argument("--list", action="store_true",
                     help="list the runs, their settings and whether each is done, without "
                     "running them")
    swp.add_argument("--only", action="append", default=[], metavar="PROFILE[,PROFILE...]",
                     help="run (or list) only these profiles (repeatable)")
    swp.add_argument("-j", "--jobs", type=arg_int, metavar="N",
                     help="local worker processes (default: the CPUs available)")
    swp.add_argument("--executor", default="local", metavar="local|dask://HOST:PORT",
                     help="where runs go: a local process pool (default) or the Dask "
                     "distributed scheduler at HOST:PORT (extra 'dask'; the workers must see "
                     "--out)")
    swp.add_argument("-q", "--quiet", action="store_true",
                     help="no progress bar and no summary line")
    swp.set_defaults(func=cmd_sweep)

    exp = sub.add_parser("explain", help="one lease's story: its decisions, its wait, and "
                         "who held its nodes",
                         description="Tell one lease of a run in plain words: each decision "
                         "about it (from DIR/decisions.jsonl, written by `simulate --log-level "
                         "debug`), how long it waited, and which leases held the nodes it "
                         "started on while it waited (from DIR/leases.csv).")
    exp.add_argument("dir", help="a run's folder (simulate --out)")
    exp.add_argument("lease", type=arg_int, help="the lease's id (leases.csv's lease_id)")
    exp.set_defaults(func=cmd_explain)

    rep = sub.add_parser("report", help="compare a sweep's profiles; draw plots",
                         description="On a sweep's folder: rebuild DIR/results.csv and "
                         "results.sqlite from the run folders, print per-profile tables (mean "
                         "and standard deviation over seeds), write DIR/comparison.csv and, "
                         "with --plots, PNG figures into DIR/plots/. On one run's folder: "
                         "print its summary and, with --plots, draw its figures into "
                         "DIR/plots/.")
    rep.add_argument("dir", help="a sweep's output directory, or one run's")
    rep.add_argument("--plots", action="store_true",
                     help="write PNG plots into DIR/plots/ (extra 'plots': matplotlib)")
    rep.add_argument("--metric", action="append", default=[], metavar="FIELD",
                     help="compare this summary field (repeatable; default: avg_wait, "
                     "makespan, utilization, avg_bounded_slowdown and plugins' fields)")
    rep.add_argument("--gantt", metavar="RUN_ID",
                     help="the run to draw a Gantt chart of (default: the first)")
    rep.add_argument("--gantt-leases", type=arg_int, default=200, metavar="N",
                     help="draw the first N leases to start (default 200; 0: all)")
    rep.add_argument("--gantt-hours", type=arg_float, metavar="H",
                     help="draw only leases starting within H hours of the first")
    rep.add_argument("--seed", type=arg_int,
                     help="the seed whose runs the time-series plots show (default: the "
                     "smallest)")
    rep.add_argument("--gantt-colour", choices=COLOUR_BY, default="auto",
                     help="what the Gantt chart's colours say: the lease's wait, its size "
                     "(VMs) or its type (default auto: type when the leases drawn are of "
                     "several types, else wait)")
    rep.add_argument("--time-plot", choices=TIME_PLOTS, default="panels",
                     help="figures over time (power, utilisation, queue length, series): "
                     "every step, one panel per profile (default), or daily means, every "
                     "profile's on one axis (for power with the day's lowest and highest)")
    rep.add_argument("--states-run", metavar="RUN_ID",
                     help="the run whose node power states are drawn (default: the one with "
                     "the most node switch-ons)")
    rep.add_argument("--states-hours", type=hours_window, metavar="FROM:TO",
                     help="draw the node power states of these hours only (e.g. 240:264)")
    rep.add_argument("--html", action="store_true",
                     help="write one self-contained HTML page (no network needed to open it): "
                     "the summary, the settings, the Gantt chart and every plot as "
                     "interactive charts, and the table of leases (of runs, for a sweep)")
    rep.add_argument("--html-out", metavar="FILE",
                     help="where --html writes the page (default DIR/report.html)")
    rep.set_defaults(func=cmd_report)

    exp = sub.add_parser("export", help="write a run's schedule for other tools",
                         description="Write the schedule of one run folder (simulate's, or a "
                         "sweep's run) as Batsim's jobs.csv (--format batsim, read by evalys; "
                         "default RUN-DIR/jobs.csv) or as a Standard Workload Format file "
                         "(--format swf; default RUN-DIR/schedule.swf).")
    exp.add_argument("dir", metavar="RUN-DIR", help="a run's output folder (has leases.csv)")
    exp.add_argument("--format", required=True, choices=("batsim", "swf"),
                     help="batsim: jobs.csv; swf: the simulated schedule as SWF")
    exp.add_argument("--out", metavar="FILE", help="the file to write (default in RUN-DIR)")
    exp.set_defaults(func=cmd_export)

    srv = sub.add_parser("serve", help="run the lease daemon on the real clock",
                         description="Take lease requests through a JSON HTTP API, keep them "
                         "in SQLite, and carry them out with the configured enactment backend "
                         "([daemon] options). SIGTERM or SIGINT stop it; restarted, it carries "
                         "on from its state folder, where it writes leases.db (every lease and "
                         "change of state), token (mode 0600), daemon.json (its address), "
                         "summary.json when it stops, and enactment/ (the process backend's "
                         "VM folders with each VM's out.log and err.log).")
    srv.add_argument("config", help="configuration file (.ini)")
    srv.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                     help="override a configuration option (repeatable)")
    srv.add_argument("--speedup", type=arg_float, help="schedule seconds per wall second "
                     "(demos and tests; default [simulation] speedup)")
    srv.add_argument("--port", type=arg_int, help="API port (default [daemon] port; 0: any)")
    srv.add_argument("-v", "--verbose", action="store_true", help="log every request")
    srv.set_defaults(func=cmd_serve)

    from lease_manager.daemon.client import add_client_commands

    add_client_commands(sub)
    return parser


def new_plugin_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """The policy kinds ``new-plugin`` has a template of: all but enactment backends
    (``plugin_template.TEMPLATE_KINDS``, without loading the templates for every command)."""
    return tuple(kind for kind in kinds if kind != "enactment")


def load_numpy() -> None:
    """Load numpy with OpenBLAS's thread pool at one thread, unless numpy is loaded already or
    the user set ``OPENBLAS_NUM_THREADS``. The manager is one thread and multiplies no
    matrices large enough for the pool, whose threads spin when it starts: about 0.09 CPU-s
    of every run on a 2-core machine. Sums over long series (``np.dot``) then do not depend on
    the machine's number of cores either. The setting is for this process only: it is gone
    from the environment the manager's own processes (VMs, sweep runs) inherit."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def main(argv: Sequence[str] | None = None) -> int:
    load_numpy()
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except LeaseManagerError as exc:
        print(f"lease-manager: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lease-manager: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # output piped into a command that stopped reading (``| head``)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
