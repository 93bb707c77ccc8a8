"""The ``lease-manager`` command."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from lease_manager import __version__
from lease_manager.errors import LeaseManagerError, TraceError
from lease_manager.experiments.plot_options import COLOUR_BY, TIME_PLOTS
from lease_manager.numbers import arg_float, arg_int


def _simulate(args: argparse.Namespace) -> int:
    from lease_manager.experiments.run_folder import claim, describe, fresh_folder, write_run_json
    from lease_manager.observers.invariants import InvariantViolation
    from lease_manager.run import default_out_dir, load_run

    overrides = list(args.set)
    if args.log_level == "debug":      # the decision log (observers/decisions.py)
        overrides.append("accounting.decision-log=yes")
    run = load_run(args.config, overrides)
    datafile = run.config.get("accounting", "datafile")   # Haizea's: the run folder's name
    default = Path(datafile).with_suffix("") if datafile else default_out_dir(args.config)
    out = Path(args.out) if args.out else fresh_folder(default)
    existed = out.exists()
    claim(out, args.force)   # before the run: a bad output folder should not cost a simulation
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LeaseManagerError(f"cannot write results to {out}: {exc.strerror}") from None
    run.stream_outputs(out)   # leases.csv is written as leases end, not kept
    bar = _progress_bar(run, args.quiet)
    # what exists now (modules, the run's set-up) lives through the replay: the garbage
    # collector's full passes need not walk it again and again (a short replay is mostly
    # such passes over the modules)
    gc.freeze()
    try:
        summary = run.run(progress=bar.update if bar else None)
    except InvariantViolation as exc:
        run.write(out)
        print(f"lease-manager: internal error: invariant violated: {exc} "
              f"(outputs written to {out})", file=sys.stderr)
        return 3
    except BaseException:
        run.accounting.discard_stream()   # no half-written leases.csv left behind
        raise
    finally:
        gc.unfreeze()   # (a caller in the same process collects as before)
        if bar:
            bar.close()
    trace = run.config.get("tracefile", "tracefile")
    if summary["trace"]["jobs_read"] == 0 and trace and run.config.haizea:
        # Haizea runs a trace without requests and stops (its sample.lwf, all commented out)
        print(f"lease-manager: warning: {trace}: the trace holds no jobs: an empty run",
              file=sys.stderr)
    elif summary["trace"]["jobs_read"] == 0 and trace and not args.allow_empty:
        run.accounting.discard_stream()
        if not existed and not any(out.iterdir()):
            out.rmdir()
        raise TraceError("the trace holds no jobs: nothing to replay (--allow-empty writes "
                         "an empty run)", file=trace)
    run.write(out)
    write_run_json(out, describe(run.config, args.set, run.plugins, out, args.config,
                                 placement=run.placement.label()))
    if not args.quiet:
        _print_summary(summary, out)
    return 0


class _Progress:
    """A tqdm bar over the trace's jobs: those done with (a lease in its final state, or a job
    skipped or filtered out) out of the jobs in the trace, with the rate and the time left, and
    the simulated time reached. Only on a terminal."""

    def __init__(self, run) -> None:
        from tqdm import tqdm

        from lease_manager.workload.swf import count_jobs

        self.run = run
        self.now = 0.0
        if run.trace_reader is not None:
            total = count_jobs(run.trace_reader.path)
            max_jobs = run.config.get("tracefile", "max-jobs")
            total = min(total, max_jobs) if max_jobs else total
        else:
            total = run.trace_stats.replayed
        self.bar = tqdm(total=total or None, unit=" jobs", desc="replay", leave=False,
                        file=sys.stderr, dynamic_ncols=True)

    def update(self, now: float) -> None:
        self.now = now
        stats = self.run.trace_stats
        done = (sum(self.run.accounting.states.values()) + sum(stats.skipped.values())
                + sum(stats.filtered.values()))
        self.bar.n = min(done, self.bar.total) if self.bar.total else done
        self.bar.set_postfix_str(f"simulated {now / 86400:,.1f} days", refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.update(self.now)   # the last frame: every job done with
        self.bar.close()


def _progress_bar(run, quiet: bool) -> _Progress | None:
    if quiet or not sys.stderr.isatty():
        return None
    return _Progress(run)


def _counts(total: int, word: str, by_reason: dict[str, int], note: str = "") -> str:
    from lease_manager.workload.swf import STOPPING_FILTERS

    if not total:
        return f"0 {word}"
    reasons = ", ".join(f"{n:,} {why}" + (note if why in STOPPING_FILTERS else "")
                        for why, n in by_reason.items())
    return f"{total:,} {word} ({reasons})"


def trace_line(trace: dict) -> str:
    """The console line accounting for every job read: replayed, skipped and filtered, by
    reason."""
    skipped, filtered = trace["jobs_skipped"], trace["jobs_filtered"]
    parts = [f"{trace['jobs_replayed']:,} replayed",
             _counts(sum(skipped.values()), "skipped", skipped),
             _counts(sum(filtered.values()), "filtered", filtered,
                     ": reading stopped there")]
    bad = trace["bad_lines"]
    line = f"trace: {trace['jobs_read']:,} jobs read: " + ", ".join(parts)
    return line + (f"; {bad:,} bad lines skipped" if bad else "")


def _print_summary(s: dict, out: Path) -> None:
    sim = s["simulation"]
    trace = s["trace"]
    print(f"leases: {s['leases_total']:,} submitted, {s['leases_completed']:,} completed, "
          f"{s['leases_rejected']:,} rejected, {s['leases_unfinished']:,} unfinished")
    print(trace_line(trace))
    print(f"placement: {s['placement']}")
    for reason, n in s["rejected_by_reason"].items():
        print(f"rejected: {n:,} {reason}")
    print(f"makespan {s['makespan']:,.0f} s, average wait {s['avg_wait']:,.1f} s "
          f"(max {s['max_wait']:,.0f} s), bounded slowdown {s['avg_bounded_slowdown']:.2f}, "
          f"utilization {s['utilization']:.1%}")
    print(f"simulated in {sim['cpu_seconds']:.2f} CPU-s, peak memory {sim['peak_rss_mb']:.0f} MB;"
          f" results in {out}/")


def _plugins(args: argparse.Namespace) -> int:
    from lease_manager.plugins import Plugins

    infos = Plugins().describe()
    if args.json:
        print(json.dumps([attrs.asdict(info) for info in infos], indent=2))
        return 0
    for info in infos:
        print(f"{info.name}  [{info.distribution} {info.version}]")
        if info.per_run:
            print(f"    per run:  {info.per_run}")
        if info.policies:
            print(f"    policies: {'; '.join(info.policies)}")
        if info.at_start:
            print(f"    host selection with placement = at-start: {', '.join(info.at_start)}")
        print(f"    hooks:    {', '.join(info.hooks) or '-'}")
    return 0


def _convert(args: argparse.Namespace) -> int:
    from lease_manager.config.schema import load_config
    from lease_manager.plugins import Plugins
    from lease_manager.run import swf_conversion, vm_vector
    from lease_manager.workload.convert import ConversionStats, lwf_to_swf, swf_to_lwf
    from lease_manager.workload.lwf import is_lwf
    from lease_manager.workload.site_source import site_nodes
    from lease_manager.workload.swf import TraceStats

    if not Path(args.input).is_file():   # before the configuration: the first thing to fix
        raise LeaseManagerError(f"{args.input}: " + ("is a folder, not a trace"
                                                     if Path(args.input).is_dir()
                                                     else "file not found"))
    config = load_config(args.config, Plugins().schema, args.set)
    nodes = site_nodes(config)
    output = Path(args.output)
    if not output.parent.is_dir():
        raise LeaseManagerError(f"cannot write {output}: folder {output.parent} does not exist")
    if output.is_dir():
        raise LeaseManagerError(f"cannot write {output}: it is a folder")
    stats: ConversionStats | TraceStats
    try:
        if is_lwf(args.input):
            stats = lwf_to_swf(args.input, args.output, nodes.types,
                               config.get("tracefile", "procs-per-vm"), strict=args.strict,
                               vm_vector=vm_vector(config, nodes))
        else:
            stats = swf_to_lwf(args.input, args.output, swf_conversion(config, nodes),
                               nodes.types,
                               skip_bad_lines=config.get("tracefile", "skip-bad-lines"))
    except OSError as exc:   # a file we may not read or write, a full disk...
        raise LeaseManagerError(f"{exc.filename or output}: {exc.strerror}") from None
    print(json.dumps(stats.as_dict(), indent=2))
    return 0


def _config_doc(args: argparse.Namespace) -> int:
    from lease_manager.plugins import Plugins

    sys.stdout.write(Plugins().schema.document())
    return 0


def _plugin_doc(args: argparse.Namespace) -> int:
    from lease_manager.policies.reference import policy_reference

    sys.stdout.write(policy_reference())
    return 0


def _new_plugin(args: argparse.Namespace) -> int:
    from lease_manager.plugin_template import write_plugin

    folder = write_plugin(args.name, args.kind, Path(args.out) if args.out else None)
    print(f"lease-manager: wrote {folder}: install it with pip install -e {folder}, then run "
          f"its test with python -m pytest {folder}", file=sys.stderr)
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from lease_manager.experiments.sweep import default_jobs, sweep_command

    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        raise LeaseManagerError("--jobs must be at least 1")
    only = [name for item in args.only for name in item.split(",") if name.strip()]
    return sweep_command(args.sweep, args.out, list_only=args.list, executor=args.executor,
                         jobs=jobs, quiet=args.quiet, only=[n.strip() for n in only],
                         force=args.force, add=args.add)


def _report(args: argparse.Namespace) -> int:
    from lease_manager.experiments.report import report_command

    return report_command(args.dir, plots=args.plots, metrics=args.metric, gantt=args.gantt,
                          gantt_leases=args.gantt_leases or None, gantt_hours=args.gantt_hours,
                          seed=args.seed, colour_by=args.gantt_colour,
                          time_plot=args.time_plot, states_run=args.states_run,
                          states_window=args.states_hours, html=args.html,
                          html_out=args.html_out)


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


def _explain(args: argparse.Namespace) -> int:
    from lease_manager.experiments.explain import explain

    sys.stdout.write(explain(args.dir, args.lease))
    return 0


def _export(args: argparse.Namespace) -> int:
    from lease_manager.experiments.export import export_command

    return export_command(args.dir, args.format, args.out)


def _serve(args: argparse.Namespace) -> int:
    import logging

    from lease_manager.daemon.service import Daemon

    overrides = list(args.set)
    if args.speedup is not None:
        overrides.append(f"simulation.speedup={args.speedup}")
    if args.port is not None:
        overrides.append(f"daemon.port={args.port}")
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    daemon = Daemon(args.config, tuple(overrides))

    def ready(d: Daemon) -> None:
        print(f"lease-manager: serving on {d.url} (token in {d.token_path()}, state in "
              f"{d.state_dir})", file=sys.stderr, flush=True)

    try:
        daemon.serve_forever(ready=ready)
    except LeaseManagerError:
        raise
    except Exception:   # a bug: say so plainly; the state folder is intact for a restart
        logging.getLogger("lease_manager.daemon").exception(
            "internal error: the daemon stopped (its state in %s is intact: start it again "
            "to carry on)", daemon.state_dir)
        return 3
    return 0


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
    sim.set_defaults(func=_simulate)
    if command == "simulate":
        return parser

    plug = sub.add_parser("plugins", help="list installed plugins, their policies and hooks",
                          description="Print the installed plugins (built-in and from "
                                      "packages), the policies each registers by kind, and "
                                      "the hooks each implements. Writes no file.")
    plug.add_argument("--json", action="store_true", help="machine-readable output")
    plug.set_defaults(func=_plugins)

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
    conv.set_defaults(func=_convert)

    doc = sub.add_parser("config-doc", help="print the configuration reference",
                         description="Print every section and option the installed core and "
                                     "plugins accept, with types, defaults and meanings, as "
                                     "Markdown on standard output. Writes no file.")
    doc.set_defaults(func=_config_doc)

    pdoc = sub.add_parser("plugin-doc", help="print the policy reference",
                          description="Print each policy kind's protocol (its methods and "
                          "their meaning), what a policy reads of the run, the lease's public "
                          "fields and the hooks, as Markdown on standard output, from the "
                          "code itself (docs/reference/policies.md is this output). Writes no "
                          "file.")
    pdoc.set_defaults(func=_plugin_doc)

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
    newp.set_defaults(func=_new_plugin)

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
    swp.set_defaults(func=_sweep)

    exp = sub.add_parser("explain", help="one lease's story: its decisions, its wait, and "
                         "who held its nodes",
                         description="Tell one lease of a run in plain words: each decision "
                         "about it (from DIR/decisions.jsonl, written by `simulate --log-level "
                         "debug`), how long it waited, and which leases held the nodes it "
                         "started on while it waited (from DIR/leases.csv).")
    exp.add_argument("dir", help="a run's folder (simulate --out)")
    exp.add_argument("lease", type=arg_int, help="the lease's id (leases.csv's lease_id)")
    exp.set_defaults(func=_explain)

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
    rep.set_defaults(func=_report)

    exp = sub.add_parser("export", help="write a run's schedule for other tools",
                         description="Write the schedule of one run folder (simulate's, or a "
                         "sweep's run) as Batsim's jobs.csv (--format batsim, read by evalys; "
                         "default RUN-DIR/jobs.csv) or as a Standard Workload Format file "
                         "(--format swf; default RUN-DIR/schedule.swf).")
    exp.add_argument("dir", metavar="RUN-DIR", help="a run's output folder (has leases.csv)")
    exp.add_argument("--format", required=True, choices=("batsim", "swf"),
                     help="batsim: jobs.csv; swf: the simulated schedule as SWF")
    exp.add_argument("--out", metavar="FILE", help="the file to write (default in RUN-DIR)")
    exp.set_defaults(func=_export)

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
    srv.set_defaults(func=_serve)

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
