"""Running sweeps: every run of a :class:`~lease_manager.experiments.sweep_file.Sweep` in a
local process pool or on a Dask cluster.

A run is a pure function of its :class:`RunSpec` (plain data) and writes its own folder
``OUT/PROFILE/TRACE/seed-N`` (cleared first if an earlier attempt left it unfinished); it is
finished once ``summary.json`` is there (written last, atomically), so a sweep resumes by
skipping finished runs and can run anywhere that sees ``OUT``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import attrs

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.sweep_file import (
    RunSpec,
    Sweep,
    load_sweep,
    only_profiles,
    parse_seeds,
)

DONE, FAILED, PARTIAL, PENDING = "done", "failed", "partial", "pending"


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
        # the placement that ran (and why, under auto) is known once the run is built
        meta = dict(task["meta"], placement=run.placement.label())
        _write_atomic(run_dir / "run.json", json.dumps(meta, indent=2) + "\n")
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
    if out.exists() and not out.is_dir():
        raise LeaseManagerError(f"cannot write results to {out}: it is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LeaseManagerError(f"cannot write results to {out}: {exc.strerror}") from None
    plan = {"sweep": str(sweep.path.resolve()), "base": str(sweep.base) if sweep.base else None,
            "profiles": list(sweep.profiles), "traces": [n for n, _ in sweep.traces],
            "seeds": list(sweep.seeds), "runs": [r.run_id for r in sweep.runs]}
    _write_atomic(out / "sweep.json", json.dumps(plan, indent=2) + "\n")


# Longer than ~50 lines on purpose: set-up, dispatch and the interrupt/cleanup path belong together
# (try/finally).
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


def list_runs(sweep: Sweep, out_dir: Path) -> None:
    """``sweep --list``: every run with its status in ``out_dir`` and its own settings (those
    every run shares printed once)."""
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


def sweep_command(path: str, out: str | None, *, list_only: bool, executor: str, jobs: int,
                  quiet: bool, only: Sequence[str] = (), force: bool = False,
                  add: bool = False) -> int:
    """``lease-manager sweep``: list or run a sweep (``only`` those profiles) into ``out``
    (``force`` replaces another sweep there, ``add`` keeps it: see sweep_folder.py); 0 if every
    run is done, 1 otherwise."""
    from lease_manager.experiments.results import write_results
    from lease_manager.experiments.sweep_folder import claim_sweep_folder

    sweep = load_sweep(path)
    if only:
        sweep = only_profiles(sweep, only)
    requested = Path(out) if out else Path("results") / Path(path).stem
    if list_only:
        list_runs(sweep, requested / sweep.path.stem if add else requested)
        return 0
    if executor != "local":
        dask_address(executor)   # a malformed address fails before anything starts
    out_dir = claim_sweep_folder(sweep.path, requested, force=force, add=add)
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
    if out_dir != requested:     # --add: the folder's table lists both sweeps
        write_results(requested)
    if not quiet:
        print(f"{sweep.describe()}: {outcome.done} run now, {outcome.already_done} already "
              f"done, {len(outcome.failed)} failed; results in {out_dir / 'results.csv'}"
              + (f" (both sweeps in {requested / 'results.csv'}, this one's profiles as "
                 f"{out_dir.name}/PROFILE)" if out_dir != requested else ""))
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


__all__ = ("Sweep", "RunSpec", "load_sweep", "only_profiles", "run_sweep", "execute_run",
           "run_status", "parse_seeds", "sweep_command")


@attrs.frozen
class FinishedRun:
    """A finished run of a sweep: its spec, its folder and its ``summary.json``."""

    spec: RunSpec
    dir: Path
    summary: dict[str, Any]


def run_sweep_file(path: str | Path, out: str | Path, *, only: Sequence[str] = (),
                   overrides: Sequence[str] = (), seeds: Sequence[int] = (), jobs: int = 1,
                   plugins: Any = None, echo: Callable[[str], None] | None = None,
                   missing_ok: bool = False) -> list[FinishedRun]:
    """Run a sweep file (for scripts such as the thesis runners): only the profiles whose
    name contains one of ``only`` (all if empty; none matching is an error unless
    ``missing_ok``), with ``overrides`` on every run and, if given, ``seeds`` instead of the
    file's. Raises if any run failed; returns every run."""
    from lease_manager.experiments.sweep_file import with_overrides, with_seeds
    from lease_manager.plugins import Plugins

    plugins = plugins if plugins is not None else Plugins()
    sweep = load_sweep(path, plugins)
    if only:
        chosen = [p for p in sweep.profiles if any(o in p for o in only)]
        if not chosen and missing_ok:
            return []
        if not chosen:
            raise LeaseManagerError(f"{path}: no profile name contains "
                                    f"{' or '.join(map(repr, only))}")
        sweep = only_profiles(sweep, chosen)
    if seeds:
        sweep = with_seeds(sweep, seeds)
    sweep = with_overrides(sweep, overrides, plugins.schema)
    outcome = run_sweep(sweep, out, jobs=jobs, echo=echo)
    if outcome.interrupted:
        raise KeyboardInterrupt
    if outcome.failed:
        raise LeaseManagerError("; ".join(f"{run_id}: {error}"
                                          for run_id, error in outcome.failed))
    out = Path(out)
    return [FinishedRun(spec, out / spec.run_id,
                        json.loads((out / spec.run_id / "summary.json").read_text()))
            for spec in sweep.runs]


def etc_file(name: str, package_file: str) -> Path:
    """``./etc/NAME`` if it exists, else the ``etc/NAME`` of the lease_manager checkout that
    ``package_file`` (a module of a plugin package under ``plugins/``) sits in."""
    here = Path.cwd() / "etc" / name
    if here.is_file():
        return here
    checkout = Path(package_file).resolve().parents[3] / "etc" / name
    return checkout if checkout.is_file() else here
