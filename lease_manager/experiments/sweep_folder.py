"""A sweep's output folder: one sweep per folder, never two mixed silently.

A folder holds the sweep whose file its ``sweep.json`` names; running that sweep again resumes
it. A folder that holds something else (another sweep's runs, runs without a ``sweep.json``, or a
``simulate`` run) is refused, unless the user says what to do with it:

- ``--force`` replaces it: the other sweep's run folders, ``sweep.json``, ``results.csv``,
  ``results.sqlite`` and ``plots/`` are removed first (anything else in the folder stays);
- ``--add`` keeps both: this sweep goes into the subfolder named after its file
  (``OUT/SWEEP-NAME/``), and ``OUT/results.csv`` then lists both, this sweep's profiles as
  ``SWEEP-NAME/PROFILE``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.run_folder import holds_run

#: what a sweep writes at the top of its folder besides the run folders
SWEEP_FILES = ("sweep.json", "results.csv", "results.sqlite")
SWEEP_FOLDERS = ("plots",)


def _recorded_sweep(out: Path) -> str | None:
    """The sweep file that ``out/sweep.json`` names ("" if it names none or is unreadable)."""
    try:
        plan = json.loads((out / "sweep.json").read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return ""
    return str(plan.get("sweep") or "") if isinstance(plan, dict) else ""


def _run_folders(out: Path) -> list[Path]:
    """The sweep run folders under ``out`` (folders whose ``run.json`` has a run id)."""
    found = []
    for meta_path in out.rglob("run.json"):
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and "run_id" in meta:
            found.append(meta_path.parent)
    return found


def other_contents(sweep_path: Path, out: Path) -> str | None:
    """What in ``out`` is not the sweep of ``sweep_path`` (None when nothing is)."""
    if not out.is_dir():
        return None
    recorded = _recorded_sweep(out)
    if recorded is not None:
        if recorded == str(sweep_path.resolve()):
            return None
        return f"the results of another sweep ({recorded or 'an unreadable sweep.json'})"
    if holds_run(out):
        return "a simulate run"
    if _run_folders(out):
        return "sweep runs without a sweep.json"
    return None


def _remove_other(out: Path) -> None:
    """Remove a sweep's outputs from ``out`` (``--force``), and the folders left empty."""
    for run_dir in _run_folders(out):
        shutil.rmtree(run_dir)
    for name in SWEEP_FILES:
        (out / name).unlink(missing_ok=True)
    for name in SWEEP_FOLDERS:
        if (out / name).is_dir():
            shutil.rmtree(out / name)
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):
            folder.rmdir()


def claim_sweep_folder(sweep_path: Path, out: Path, *, force: bool = False,
                       add: bool = False) -> Path:
    """The folder the sweep of ``sweep_path`` writes into, given ``--out``, ``--force`` and
    ``--add`` (see the module's docstring); refuses in one line when ``out`` holds something
    else and neither was given."""
    if force and add:
        raise LeaseManagerError("--force and --add exclude each other: --force replaces what "
                                f"{out} holds, --add keeps it")
    if out.exists() and not out.is_dir():
        raise LeaseManagerError(f"cannot write results to {out}: it is a file, not a folder")
    other = other_contents(sweep_path, out)
    if other is None:
        return out
    if force:
        if other == "a simulate run":
            raise LeaseManagerError(f"{out} holds a simulate run: --force replaces only a "
                                    "sweep's results; choose another --out")
        _remove_other(out)
        return out
    if add:
        inner = out / sweep_path.stem
        inside = other_contents(sweep_path, inner)
        if inside is not None:
            raise LeaseManagerError(f"{inner} (where --add puts this sweep) holds {inside}; "
                                    "choose another --out")
        return inner
    raise LeaseManagerError(f"{out} holds {other}: --force replaces them, --add keeps both "
                            f"(this sweep then goes to {out / sweep_path.stem}), or choose "
                            "another --out")
