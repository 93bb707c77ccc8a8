"""What each ``lease-manager`` command does: the handlers :func:`lease_manager.cli.build_parser`
binds to its subcommands (``args.func``), and the console output of a replay."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

import attrs

from lease_manager.errors import LeaseManagerError, TraceError


def cmd_simulate(args: argparse.Namespace) -> int:
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


def cmd_plugins(args: argparse.Namespace) -> int:
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


def cmd_convert(args: argparse.Namespace) -> int:
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


def cmd_config_doc(args: argparse.Namespace) -> int:
    from lease_manager.plugins import Plugins

    sys.stdout.write(Plugins().schema.document())
    return 0


def cmd_plugin_doc(args: argparse.Namespace) -> int:
    from lease_manager.policies.reference import policy_reference

    sys.stdout.write(policy_reference())
    return 0


def cmd_new_plugin(args: argparse.Namespace) -> int:
    from lease_manager.plugin_template import write_plugin

    folder = write_plugin(args.name, args.kind, Path(args.out) if args.out else None)
    print(f"lease-manager: wrote {folder}: install it with pip install -e {folder}, then run "
          f"its test with python -m pytest {folder}", file=sys.stderr)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from lease_manager.experiments.sweep import default_jobs, sweep_command

    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        raise LeaseManagerError("--jobs must be at least 1")
    only = [name for item in args.only for name in item.split(",") if name.strip()]
    return sweep_command(args.sweep, args.out, list_only=args.list, executor=args.executor,
                         jobs=jobs, quiet=args.quiet, only=[n.strip() for n in only],
                         force=args.force, add=args.add)


def cmd_report(args: argparse.Namespace) -> int:
    from lease_manager.experiments.report import report_command

    return report_command(args.dir, plots=args.plots, metrics=args.metric, gantt=args.gantt,
                          gantt_leases=args.gantt_leases or None, gantt_hours=args.gantt_hours,
                          seed=args.seed, colour_by=args.gantt_colour,
                          time_plot=args.time_plot, states_run=args.states_run,
                          states_window=args.states_hours, html=args.html,
                          html_out=args.html_out)


def cmd_explain(args: argparse.Namespace) -> int:
    from lease_manager.experiments.explain import explain

    sys.stdout.write(explain(args.dir, args.lease))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from lease_manager.experiments.export import export_command

    return export_command(args.dir, args.format, args.out)


def cmd_serve(args: argparse.Namespace) -> int:
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
