"""The ``lease-manager`` command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import attrs

from . import __version__
from .errors import LeaseManagerError


def _simulate(args: argparse.Namespace) -> int:
    from .invariants import InvariantViolation
    from .run import default_out_dir, load_run

    run = load_run(args.config, args.set)
    out = Path(args.out) if args.out else default_out_dir(args.config)
    bar = _progress_bar(run, args.quiet)
    try:
        summary = run.run(progress=bar.update if bar else None)
    except InvariantViolation as exc:
        run.write(out)
        print(f"lease-manager: internal error: invariant violated: {exc} "
              f"(outputs written to {out})", file=sys.stderr)
        return 3
    finally:
        if bar:
            bar.close()
    run.write(out)
    if not args.quiet:
        _print_summary(summary, out)
    return 0


class _Progress:
    """A tqdm bar over the bytes of the trace read so far (only on a terminal)."""

    def __init__(self, run) -> None:
        from tqdm import tqdm

        self.reader = run.trace_reader
        self.bar = tqdm(total=self.reader.size, unit="B", unit_scale=True, desc="replay",
                        leave=False, file=sys.stderr)

    def update(self, now: float) -> None:
        self.bar.n = self.reader.position
        self.bar.set_postfix_str(f"t={now:,.0f}s", refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _progress_bar(run, quiet: bool) -> _Progress | None:
    if quiet or run.trace_reader is None or not sys.stderr.isatty():
        return None
    return _Progress(run)


def _print_summary(s: dict, out: Path) -> None:
    sim = s["simulation"]
    trace = s["trace"]
    print(f"leases: {s['leases_total']:,} submitted, {s['leases_completed']:,} completed, "
          f"{s['leases_rejected']:,} rejected, {s['leases_unfinished']:,} unfinished")
    if trace["jobs_skipped"] or trace["bad_lines"]:
        skipped = ", ".join(f"{n:,} {why}" for why, n in trace["jobs_skipped"].items())
        print(f"trace: {trace['jobs_read']:,} jobs read; skipped {skipped or 'none'}; "
              f"{trace['bad_lines']} bad lines")
    for reason, n in s["rejected_by_reason"].items():
        print(f"rejected: {n:,} {reason}")
    print(f"makespan {s['makespan']:,.0f} s, average wait {s['avg_wait']:,.1f} s "
          f"(max {s['max_wait']:,.0f} s), bounded slowdown {s['avg_bounded_slowdown']:.2f}, "
          f"utilization {s['utilization']:.1%}")
    print(f"simulated in {sim['cpu_seconds']:.2f} CPU-s, peak memory {sim['peak_rss_mb']:.0f} MB;"
          f" results in {out}/")


def _plugins(args: argparse.Namespace) -> int:
    from .plugins import Plugins

    infos = Plugins().describe()
    if args.json:
        print(json.dumps([attrs.asdict(info) for info in infos], indent=2))
        return 0
    for info in infos:
        print(f"{info.name}  [{info.distribution} {info.version}]")
        if info.policies:
            print(f"    policies: {'; '.join(info.policies)}")
        print(f"    hooks:    {', '.join(info.hooks) or '-'}")
    return 0


def _config_doc(args: argparse.Namespace) -> int:
    from .plugins import Plugins

    sys.stdout.write(Plugins().schema.document())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lease-manager", description="A Haizea-style lease manager: replay workload "
        "traces under scheduling and energy policies.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser("simulate", help="replay a workload trace on the simulated clock")
    sim.add_argument("config", help="configuration file (.ini)")
    sim.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                     help="override a configuration option (repeatable)")
    sim.add_argument("--out", help="output directory (default: results/CONFIG-NAME)")
    sim.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    sim.set_defaults(func=_simulate)

    plug = sub.add_parser("plugins", help="list installed plugins, their policies and hooks")
    plug.add_argument("--json", action="store_true", help="machine-readable output")
    plug.set_defaults(func=_plugins)

    doc = sub.add_parser("config-doc", help="print the configuration reference")
    doc.set_defaults(func=_config_doc)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except LeaseManagerError as exc:
        print(f"lease-manager: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lease-manager: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
