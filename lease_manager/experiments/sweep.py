"""Experiment sweeps: many runs of the same traces under named profiles and seeds.

A *sweep file* is Haizea's multi-configuration file with a ``[sweep]`` control section::

    [sweep]
    base = sample.ini                 # optional: a configuration the overrides apply to
    traces = ../traces/a.swf, ../traces/b.swf
    seeds = 1-3                       # or 1, 2, 3 (default: the configuration's seed)
    profiles = off, easy              # optional: default, the profiles named by sections

    [common:tracefile]                # applies to every profile
    max-jobs = 500

    [off:scheduling]                  # applies to profile "off"
    backfilling = off

It expands to one run per (profile, trace, seed), whose configuration is the base file, then the
``common:`` options, then the profile's, then ``tracefile.tracefile=TRACE`` and
``simulation.seed=SEED``. Everything is validated against the full schema before any run
starts. A run is a pure function of its :class:`RunSpec` (plain data) and writes its own folder
``OUT/PROFILE/TRACE/seed-N`` (cleared first if an earlier attempt left it unfinished); it is
finished once ``summary.json`` is there (written last, atomically), so a sweep resumes by
skipping finished runs and can run anywhere that sees ``OUT``: a local process pool or a Dask
cluster.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import signal
import sys
import time
import traceback
import uuid
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Sequence

import attrs

from lease_manager.config.schema import _suggest, load_config, read_ini
from lease_manager.errors import ConfigError, LeaseManagerError

SWEEP_SECTION = "sweep"
SWEEP_OPTIONS = ("base", "traces", "tracedir", "seeds", "profiles")
COMMON = "common"
#: options that the [sweep] section sets for every run, not the profiles
RESERVED = {("tracefile", "tracefile"): "traces", ("simulation", "seed"): "seeds"}
#: options that list policies by name (the schema checks single names, not lists)
POLICY_LISTS = {"probe": ("accounting", "probes"), "annotator": ("tracefile", "annotators")}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")

DONE, FAILED, PARTIAL, PENDING = "done", "failed", "partial", "pending"


@attrs.frozen
class RunSpec:
    """One run of a sweep: everything a worker needs, as plain data."""

    run_id: str                             #: ``PROFILE/TRACE/seed-N``: the folder under OUT
    profile: str
    trace: str                              #: the trace's name (file name without .swf[.gz])
    trace_path: str                         #: as written in the sweep file
    seed: int
    base: str | None                        #: absolute path of the base configuration
    #: ``section.option`` -> value as written (common options, then the profile's)
    settings: tuple[tuple[str, str], ...]
    #: ``section.option=value`` overrides for :func:`load_config` (paths made absolute)
    overrides: tuple[str, ...]

    def meta(self) -> dict[str, Any]:
        """What ``run.json`` records: enough to rebuild the result table from the folder."""
        return {"run_id": self.run_id, "profile": self.profile, "trace": self.trace,
                "trace_path": self.trace_path, "seed": self.seed, "base": self.base,
                "settings": dict(self.settings), "overrides": list(self.overrides),
                "command": self.command()}

    def command(self, out: str | Path | None = None) -> str:
        """The ``lease-manager simulate`` command that reproduces this run alone."""
        args = ["lease-manager", "simulate", self.base or os.devnull]   # no base: empty file
        for item in self.overrides:
            args += ["--set", item]
        if out is not None:
            args += ["--out", str(out)]
        return " ".join(shlex.quote(a) for a in args)

    def task(self, out: str | Path) -> dict[str, Any]:
        """The worker's argument (see :func:`execute_run`)."""
        return {"run_id": self.run_id, "dir": str(Path(out).resolve() / self.run_id),
                "base": self.base, "overrides": list(self.overrides), "meta": self.meta()}


@attrs.frozen
class Sweep:
    """A parsed, validated sweep file."""

    path: Path
    base: Path | None
    profiles: tuple[str, ...]
    traces: tuple[tuple[str, str], ...]     #: (name, path as written)
    seeds: tuple[int, ...]
    runs: tuple[RunSpec, ...]

    def describe(self) -> str:
        def n(count: int, word: str) -> str:
            return f"{count} {word}" + ("" if count == 1 else "s")

        return (f"{n(len(self.runs), 'run')} ({n(len(self.profiles), 'profile')} x "
                f"{n(len(self.traces), 'trace')} x {n(len(self.seeds), 'seed')})")


# ------------------------------------------------------------------------------- parsing
def _read_ini(path: Path) -> tuple[configparser.ConfigParser, dict[tuple[str, str], int]]:
    return read_ini(path, "sweep file")


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"1, 2, 5"``, ``"1-10"`` or a mix (``"1-3 7"``) -> the seeds, in order, once each."""
    seeds: list[int] = []
    for part in re.split(r"[,\s]+", re.sub(r"\s*-\s*", "-", text.strip())):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"{part!r} is not a seed (a non-negative integer) or a range A-B")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"the range {part!r} is empty")
        for seed in range(lo, hi + 1):
            if seed in seeds:
                raise ValueError(f"seed {seed} is given twice")
            seeds.append(seed)
    if not seeds:
        raise ValueError("no seeds given")
    return tuple(seeds)


def _split_paths(text: str) -> list[str]:
    """Trace paths: separated by commas or lines, or else by white space (as in Haizea)."""
    parts = re.split(r"[,\n]", text) if ("," in text or "\n" in text) else text.split()
    return [p.strip() for p in parts if p.strip()]


def trace_name(path: str) -> str:
    name = Path(path).name
    for suffix in (".gz", ".swf"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def load_sweep(path: str | Path, plugins: Any = None) -> Sweep:
    """Read and validate a sweep file against the schema of ``plugins`` (default: installed)."""
    from lease_manager.plugins import Plugins

    plugins = plugins if plugins is not None else Plugins()
    schema = plugins.schema
    path = Path(path)
    parser, where = _read_ini(path)
    file = str(path)
    here = path.resolve().parent

    def err(message: str, section: str, name: str = "", field: str | None = None):
        line = where.get((section, name)) or where.get((section, ""))
        return ConfigError(message, file=file, line=line, field=field)

    # ---- the [sweep] section
    if not parser.has_section(SWEEP_SECTION):
        raise ConfigError(f"no [{SWEEP_SECTION}] section (it lists the traces, seeds and "
                          "profiles)", file=file)
    control = dict(parser.items(SWEEP_SECTION))
    for name in control:
        if name not in SWEEP_OPTIONS:
            raise err(f"unknown option{_suggest(name, SWEEP_OPTIONS)}; [sweep] takes "
                      f"{', '.join(SWEEP_OPTIONS)}", SWEEP_SECTION, name,
                      field=f"[sweep] {name}")

    base: Path | None = None
    if control.get("base", "").strip():
        base = (here / control["base"].strip()).resolve()
        if not base.is_file():
            raise err(f"base configuration not found: {base}", SWEEP_SECTION, "base",
                      field="[sweep] base")

    if not control.get("traces", "").strip():
        raise err("no traces given (traces = path, path...)", SWEEP_SECTION, "traces",
                  field="[sweep] traces")
    tracedir = here / control.get("tracedir", "").strip()
    traces: list[tuple[str, str]] = []
    resolved: dict[str, Path] = {}
    for written in _split_paths(control["traces"]):
        full = (tracedir / written).resolve()
        if not full.is_file():
            raise err(f"trace file not found: {full}", SWEEP_SECTION, "traces",
                      field="[sweep] traces")
        name = trace_name(written)
        if name in resolved:
            raise err(f"two traces are named {name!r} ({resolved[name]} and {full}); run "
                      "folders are named after the trace file", SWEEP_SECTION, "traces",
                      field="[sweep] traces")
        resolved[name] = full
        traces.append((name, written))

    seeds: tuple[int, ...] | None = None
    if control.get("seeds", "").strip():
        try:
            seeds = parse_seeds(control["seeds"])
        except ValueError as exc:
            raise err(str(exc), SWEEP_SECTION, "seeds", field="[sweep] seeds") from None

    # ---- [common:SECTION] and [PROFILE:SECTION]
    named: list[str] = []
    options: dict[str, list[tuple[str, str, str, str]]] = {}   # profile -> (key, text, value)
    for section in parser.sections():
        if section == SWEEP_SECTION:
            continue
        profile, colon, cfg_section = (s.strip() for s in section.partition(":"))
        if not colon or not profile or not cfg_section:
            hint = _suggest(section, [SWEEP_SECTION])
            raise err(f"section [{section}] is not [{SWEEP_SECTION}], [common:SECTION] or "
                      f"[PROFILE:SECTION]{hint}", section)
        if cfg_section not in schema.sections:
            raise err(f"unknown configuration section [{cfg_section}]"
                      f"{_suggest(cfg_section, schema.sections)}", section)
        if profile != COMMON:
            if not _NAME.fullmatch(profile):
                raise err(f"profile name {profile!r} must be letters, digits, '_', '.', '+' "
                          "or '-' (it names a folder)", section)
            if profile not in named:
                named.append(profile)
        for name, text in parser.items(section):
            field = f"[{section}] {name}"
            opt = schema.option(cfg_section, name)
            if opt is None:
                known = [o.name for o in schema.options_in(cfg_section)]
                raise err(f"unknown option{_suggest(name, known)}", section, name, field=field)
            if (cfg_section, name) in RESERVED:
                raise err(f"set by [sweep] {RESERVED[(cfg_section, name)]}, not per profile",
                          section, name, field=field)
            try:
                opt.convert(text)
            except ValueError as exc:
                raise err(str(exc), section, name, field=field) from None
            value = text.strip()
            if opt.type.relative_to_config and value:
                value = str((here / value).resolve())
            options.setdefault(profile, []).append((f"{cfg_section}.{name}", text.strip(), value,
                                                    section))

    if control.get("profiles", "").strip():
        profiles = [p for p in re.split(r"[,\s]+", control["profiles"].strip()) if p]
        for p in profiles:
            if not _NAME.fullmatch(p) or p == COMMON:
                raise err(f"{p!r} cannot name a profile", SWEEP_SECTION, "profiles",
                          field="[sweep] profiles")
        if len(set(profiles)) != len(profiles):
            raise err("a profile is listed twice", SWEEP_SECTION, "profiles",
                      field="[sweep] profiles")
        for p in named:
            if p not in profiles:
                section = next(s for *_, s in options[p])
                raise err(f"profile {p!r} is not in [sweep] profiles"
                          f"{_suggest(p, profiles)}", section)
    else:
        profiles = named or ["default"]

    # ---- validate each profile's configuration as a whole, then expand
    runs: list[RunSpec] = []
    for profile in profiles:
        items = options.get(COMMON, []) + options.get(profile, [])
        merged: dict[str, tuple[str, str, str]] = {}
        for key, text, value, section in items:
            merged[key] = (text, value, section)   # the profile's override the common ones

        overrides = [f"{key}={value}" for key, (_, value, _) in merged.items()]
        first_trace = str(resolved[traces[0][0]])
        try:
            config = load_config(base, schema, overrides + [f"tracefile.tracefile={first_trace}"])
            # lists of policy names are checked when a run starts; check them now
            for kind, (section, name) in POLICY_LISTS.items():
                for policy in config.get(section, name):
                    try:
                        plugins.policy(kind, policy)
                    except ConfigError as exc:
                        raise config.error(section, name, exc.detail) from None
        except ConfigError as exc:
            raise _located(exc, profile, merged, err, file) from None
        profile_seeds = seeds if seeds is not None else (config.get("simulation", "seed"),)
        for name, written in traces:
            for seed in profile_seeds:
                runs.append(RunSpec(
                    run_id=f"{profile}/{name}/seed-{seed}", profile=profile, trace=name,
                    trace_path=written, seed=seed, base=str(base) if base else None,
                    settings=tuple((key, text) for key, (text, _, _) in merged.items()),
                    overrides=tuple(overrides + [f"tracefile.tracefile={resolved[name]}",
                                                 f"simulation.seed={seed}"])))
    all_seeds = tuple(dict.fromkeys(r.seed for r in runs))
    return Sweep(path=path, base=base, profiles=tuple(profiles), traces=tuple(traces),
                 seeds=all_seeds, runs=tuple(runs))


def _located(exc: ConfigError, profile: str, merged: dict[str, tuple[str, str, str]],
             err: Callable[..., ConfigError], file: str) -> ConfigError:
    """An error about a profile's whole configuration, at the sweep file's line of the option
    it names (``merged``: ``section.option`` -> (text, value, sweep file section))."""
    m = re.fullmatch(r"\[(.+)\] (.+)", exc.field or "")
    key = f"{m.group(1)}.{m.group(2)}" if m else None
    if key in merged:
        section, name = merged[key][2], key.partition(".")[2]
        return err(f"profile {profile!r}: {exc.detail}", section, name,
                   field=f"[{section}] {name}")
    if exc.file == "--set" or exc.file is None:
        return ConfigError(f"profile {profile!r}: {exc.detail}", file=file, field=exc.field)
    return exc


# ------------------------------------------------------------------------------- the work
def run_status(run_dir: Path) -> str:
    """``done`` (summary.json is there), ``failed`` (error.txt), ``partial`` or ``pending``."""
    if (run_dir / "summary.json").is_file():
        return DONE
    if (run_dir / "error.txt").is_file():
        return FAILED
    if run_dir.exists():
        return PARTIAL
    return PENDING


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_error(run_dir: Path, meta: dict[str, Any], message: str, detail: str = "") -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    if not (run_dir / "run.json").exists():
        _write_atomic(run_dir / "run.json", json.dumps(meta, indent=2) + "\n")
    text = message.rstrip("\n") + "\n"
    text += f"\nto reproduce: {meta.get('command', '')}\n"
    if detail:
        text += "\n" + detail
    _write_atomic(run_dir / "error.txt", text)


def execute_run(task: dict[str, Any]) -> dict[str, Any]:
    """Run one sweep run and write its folder; never raises for the run's own errors.

    ``task`` is plain data (see :meth:`RunSpec.task`): ``run_id``, ``dir``, ``base``,
    ``overrides`` and ``meta``. The folder gets ``run.json`` first, then the run's outputs, and
    ``summary.json`` last (renamed into place), or ``error.txt`` if the run failed. Returns
    ``{"run_id", "status", "error", "seconds"}``.
    """
    from lease_manager.run import load_run

    t0 = time.perf_counter()
    run_dir = Path(task["dir"])
    result: dict[str, Any] = {"run_id": task["run_id"], "status": DONE, "error": None,
                              "seconds": 0.0}
    if (run_dir / "summary.json").is_file():   # finished meanwhile (a resubmitted task)
        return result
    if run_dir.exists():                       # leftovers of an interrupted or failed attempt
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    _write_atomic(run_dir / "run.json", json.dumps(task["meta"], indent=2) + "\n")
    try:
        run = load_run(task["base"], task["overrides"])
        run.run()
        staging = run_dir / ".partial"
        run.write(staging)
        for entry in sorted(staging.iterdir()):
            if entry.name != "summary.json":
                os.replace(entry, run_dir / entry.name)
        os.replace(staging / "summary.json", run_dir / "summary.json")   # finished
        staging.rmdir()
    except Exception as exc:   # noqa: BLE001 - a failed run is reported, the others go on
        message = str(exc) if isinstance(exc, LeaseManagerError) else \
            f"{type(exc).__name__}: {exc}"
        detail = "" if isinstance(exc, LeaseManagerError) else traceback.format_exc()
        shutil.rmtree(run_dir / ".partial", ignore_errors=True)
        _write_error(run_dir, task["meta"], message, detail)
        result.update(status=FAILED, error=message)
    result["seconds"] = round(time.perf_counter() - t0, 3)
    return result


# ---------------------------------------------------------------------------- executors
Callback = Callable[[dict[str, Any], dict[str, Any]], None]


def _crashed(task: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    """The result of a task whose worker died or could not run it."""
    message = f"the worker running it failed: {type(exc).__name__}: {exc}"
    run_dir = Path(task["dir"])
    if not (run_dir / "summary.json").is_file():
        try:
            _write_error(run_dir, task["meta"], message)
        except OSError:
            pass
    return {"run_id": task["run_id"], "status": FAILED, "error": message, "seconds": 0.0}


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    terminate = getattr(pool, "terminate_workers", None)   # Python 3.14+
    if terminate is not None:
        terminate()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.terminate()
        except Exception:  # noqa: BLE001 - already gone
            pass


def run_local(tasks: Sequence[dict[str, Any]], jobs: int, on_result: Callback) -> None:
    """Run ``tasks`` in a pool of ``jobs`` processes (in this process when ``jobs`` is 1)."""
    if jobs <= 1:
        for task in tasks:
            on_result(task, execute_run(task))
        return
    import multiprocessing

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)),
                               mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {pool.submit(execute_run, task): task for task in tasks}
        for future in as_completed(futures):
            task = futures[future]
            try:
                result = future.result()
            except Exception as exc:   # noqa: BLE001 - e.g. a worker killed by the OOM killer
                result = _crashed(task, exc)
            on_result(task, result)
    except BaseException:
        _terminate_workers(pool)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def dask_address(executor: str) -> str:
    """``dask://HOST:PORT`` -> the scheduler address for ``distributed.Client``."""
    scheme, sep, rest = executor.partition("://")
    if not sep or not rest:
        raise LeaseManagerError(f"--executor {executor!r}: expected 'local' or "
                                "dask://HOST:PORT")
    if scheme == "dask":
        return f"tcp://{rest}"
    if scheme in ("tcp", "tls", "inproc", "ucx"):
        return executor
    raise LeaseManagerError(f"--executor {executor!r}: expected 'local' or dask://HOST:PORT")


def connect_dask(address: str) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (extra ``dask``)."""
    try:
        from distributed import Client
    except ImportError:
        raise LeaseManagerError("the Dask executor needs the 'dask' extra: "
                                "pip install 'lease-manager[dask]'") from None
    try:
        return Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise LeaseManagerError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


def run_dask(tasks: Sequence[dict[str, Any]], client: Any, on_result: Callback) -> None:
    """Send ``tasks`` to a Dask cluster through ``client``; the workers must see the output
    folder (a shared file system) and have lease_manager (and the plugins) installed."""
    from distributed import as_completed as dask_completed

    token = uuid.uuid4().hex[:8]
    futures = {}
    try:
        for task in tasks:
            key = f"lease-manager-{token}-{task['run_id']}"
            futures[client.submit(execute_run, task, key=key, pure=False, retries=0)] = task
        for future in dask_completed(list(futures)):
            task = futures[future]
            try:
                result = future.result()
            except Exception as exc:   # noqa: BLE001 - a lost worker, a failed transfer
                result = _crashed(task, exc)
            on_result(task, result)
    except BaseException:
        client.cancel(list(futures))
        raise


# ------------------------------------------------------------------------------ a sweep
@attrs.define
class Outcome:
    """What a sweep did."""

    total: int = 0
    already_done: int = 0
    done: int = 0
    failed: list[tuple[str, str]] = attrs.Factory(list)
    interrupted: bool = False

    @property
    def left(self) -> int:
        return self.total - self.already_done - self.done - len(self.failed)


class _Progress:
    """A tqdm bar of runs done, with the time left (only on a terminal)."""

    def __init__(self, total: int, initial: int) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, initial=initial, unit="run", desc="sweep", leave=True,
                        file=sys.stderr, dynamic_ncols=True)

    def update(self, result: dict[str, Any], failed: int) -> None:
        if result["status"] == FAILED:
            self.bar.write(f"failed: {result['run_id']}: {result['error']}", file=sys.stderr)
        self.bar.set_postfix_str(f"{failed} failed" if failed else "", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def check_stale(sweep: Sweep, out: Path) -> list[str]:
    """Finished runs under ``out`` whose recorded settings differ from the sweep file's."""
    stale = []
    for spec in sweep.runs:
        run_dir = out / spec.run_id
        if not (run_dir / "summary.json").is_file():
            continue
        try:
            meta = json.loads((run_dir / "run.json").read_text())
        except (OSError, ValueError):
            continue
        if meta.get("settings") != dict(spec.settings) or meta.get("base") != spec.base:
            stale.append(spec.run_id)
    return stale


def write_plan(sweep: Sweep, out: Path) -> None:
    """``OUT/sweep.json``: the sweep's profiles, traces, seeds and runs, in order."""
    out.mkdir(parents=True, exist_ok=True)
    plan = {"sweep": str(sweep.path.resolve()), "base": str(sweep.base) if sweep.base else None,
            "profiles": list(sweep.profiles), "traces": [n for n, _ in sweep.traces],
            "seeds": list(sweep.seeds), "runs": [r.run_id for r in sweep.runs]}
    _write_atomic(out / "sweep.json", json.dumps(plan, indent=2) + "\n")


def run_sweep(sweep: Sweep, out: str | Path, *, executor: str = "local", jobs: int = 1,
              progress: bool = False, echo: Callable[[str], None] | None = None) -> Outcome:
    """Run every unfinished run of ``sweep`` under ``out``; collect the result table.

    Finished runs are skipped; failed runs are reported and the others go on. An interruption
    (Ctrl-C, SIGTERM) stops the workers; the finished runs stay finished.
    """
    from lease_manager.experiments.results import write_results

    out = Path(out)
    stale = check_stale(sweep, out)
    if stale:
        shown = ", ".join(stale[:3]) + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
        raise LeaseManagerError(f"{out}: finished runs were made with other settings than "
                                f"{sweep.path} now gives ({shown}); use another --out or "
                                "delete them")
    client = connect_dask(dask_address(executor)) if executor != "local" else None
    write_plan(sweep, out)
    outcome = Outcome(total=len(sweep.runs))
    tasks = []
    for spec in sweep.runs:
        if run_status(out / spec.run_id) == DONE:
            outcome.already_done += 1
        else:
            tasks.append(spec.task(out))
    bar = _Progress(outcome.total, outcome.already_done) if progress and tasks else None

    def on_result(task: dict[str, Any], result: dict[str, Any]) -> None:
        if result["status"] == DONE:
            outcome.done += 1
        else:
            outcome.failed.append((result["run_id"], result["error"] or "?"))
        if bar is not None:
            bar.update(result, len(outcome.failed))
        elif result["status"] == FAILED and echo is not None:
            echo(f"failed: {result['run_id']}: {result['error']}")   # now, not at the end

    try:
        if tasks:
            if client is None:
                run_local(tasks, jobs, on_result)
            else:
                run_dask(tasks, client, on_result)
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        if client is not None:
            client.close()
        if bar is not None:
            bar.close()
        write_results(out)
    return outcome


class _Terminated(KeyboardInterrupt):
    pass


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise _Terminated()


def sweep_command(path: str, out: str | None, *, list_only: bool, executor: str, jobs: int,
                  quiet: bool) -> int:
    """``lease-manager sweep``: list or run a sweep; 0 if every run is done, 1 otherwise."""
    sweep = load_sweep(path)
    out_dir = Path(out) if out else Path("results") / Path(path).stem
    if list_only:
        width = max(len(r.run_id) for r in sweep.runs)
        every = [dict(r.settings) for r in sweep.runs]
        keys = list(dict.fromkeys(k for s in every for k in s))
        shared = [k for k in keys if all(k in s and s[k] == every[0].get(k) for s in every)]
        counts: dict[str, int] = {}
        lines = []
        for spec, settings in zip(sweep.runs, every):
            status = run_status(out_dir / spec.run_id)
            counts[status] = counts.get(status, 0) + 1
            own = "  ".join(f"{k}={v}" for k, v in settings.items() if k not in shared)
            lines.append(f"{spec.run_id:<{width}}  {status:<7}  {own}".rstrip())
        print(f"{sweep.describe()} in {out_dir}/: "
              + ", ".join(f"{counts.get(s, 0)} {s}" for s in (DONE, FAILED, PARTIAL, PENDING)))
        if shared:
            print("every run: " + "  ".join(f"{k}={every[0][k]}" for k in shared))
        print("\n".join(lines))
        return 0
    if executor != "local":
        dask_address(executor)   # a malformed address fails before anything starts
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        outcome = run_sweep(sweep, out_dir, executor=executor, jobs=jobs,
                            progress=not quiet and sys.stderr.isatty(),
                            echo=lambda line: print(line, file=sys.stderr))
    finally:
        signal.signal(signal.SIGTERM, previous)
    if outcome.interrupted:
        print(f"lease-manager: interrupted: {outcome.already_done + outcome.done} of "
              f"{outcome.total} runs done; run the same command again to resume",
              file=sys.stderr)
        return 130
    if not quiet:
        print(f"{sweep.describe()}: {outcome.done} run now, {outcome.already_done} already "
              f"done, {len(outcome.failed)} failed; results in {out_dir / 'results.csv'}")
    if outcome.failed:
        ids = ", ".join(run_id for run_id, _ in outcome.failed)
        print(f"lease-manager: {len(outcome.failed)} run(s) failed: {ids} (each folder's "
              "error.txt says why and how to reproduce it)", file=sys.stderr)
        return 1
    return 0


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # not on Linux
        return max(1, os.cpu_count() or 1)


__all__ = ("Sweep", "RunSpec", "load_sweep", "run_sweep", "execute_run",
                          "run_status", "parse_seeds", "sweep_command")
