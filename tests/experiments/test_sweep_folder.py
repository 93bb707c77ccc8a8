"""One sweep per output folder: a second sweep into a folder that holds another is refused in
one line, unless ``--force`` (replace) or ``--add`` (keep both, the new one in OUT/NAME/)."""

from __future__ import annotations

import json

import pytest
from test_sweep import read_csv, write_later_trace

from lease_manager import cli
from lease_manager.experiments.sweep_folder import claim_sweep_folder

from support import TRACES

TRACE = TRACES / "sdsc-blue-600requests.swf"


def small_sweep(directory, name: str, profiles: tuple[str, ...]):
    """A sweep file ``NAME.ini``: these backfilling profiles x the first 20 jobs x seed 1."""
    directory.mkdir(parents=True, exist_ok=True)
    write_later_trace(directory)
    text = (f"[sweep]\nprofiles = {', '.join(profiles)}\ntraces = {TRACE}\nseeds = 1\n\n"
            "[common:simulation]\nresources = 144 CPU:1 Memory:1024\n\n"
            "[common:tracefile]\nvm-resources = CPU:1 Memory:1024\nmax-jobs = 20\n")
    for profile in profiles:
        text += f"\n[{profile}:scheduling]\nbackfilling = {profile}\n"
    path = directory / f"{name}.ini"
    path.write_text(text)
    return path


def sweep(path, out, *flags: str) -> int:
    return cli.main(["sweep", str(path), "--out", str(out), "-j", "1", "-q", *flags])


@pytest.fixture
def first(tmp_path):
    """OUT holding the sweep ``first`` (profile ``off``), done."""
    path = small_sweep(tmp_path, "first", ("off",))
    out = tmp_path / "out"
    assert sweep(path, out) == 0
    return path, out


def test_the_same_sweep_again_resumes(first, capsys):
    path, out = first
    assert sweep(path, out) == 0
    assert [r["profile"] for r in read_csv(out / "results.csv")] == ["off"]


def test_another_sweep_is_refused_in_one_line(first, tmp_path, capsys):
    path, out = first
    second = small_sweep(tmp_path, "second", ("off", "aggressive"))
    capsys.readouterr()
    assert sweep(second, out) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"lease-manager: error: {out} holds the results of another sweep "
                   f"({path.resolve()}): --force replaces them, --add keeps both (this sweep "
                   f"then goes to {out / 'second'}), or choose another --out")
    # nothing was touched
    assert json.loads((out / "sweep.json").read_text())["sweep"] == str(path.resolve())
    assert [r["profile"] for r in read_csv(out / "results.csv")] == ["off"]


def test_force_replaces_the_other_sweep(first, tmp_path):
    path, out = first
    (out / "notes.txt").write_text("mine\n")
    second = small_sweep(tmp_path, "second", ("aggressive",))
    assert sweep(second, out, "--force") == 0
    assert json.loads((out / "sweep.json").read_text())["sweep"] == str(second.resolve())
    assert [r["profile"] for r in read_csv(out / "results.csv")] == ["aggressive"]
    assert not (out / "off").exists()                   # the other sweep's runs are gone
    assert (out / "notes.txt").read_text() == "mine\n"  # what no sweep wrote stays


def test_add_keeps_both_and_tells_them_apart(first, tmp_path):
    """The second sweep's profile ``off`` has the name of the first's: in OUT/results.csv the
    first's rows say ``off``, the second's ``second/off``."""
    path, out = first
    second = small_sweep(tmp_path, "second", ("off", "aggressive"))
    assert sweep(second, out, "--add") == 0
    assert json.loads((out / "sweep.json").read_text())["sweep"] == str(path.resolve())
    assert json.loads((out / "second" / "sweep.json").read_text())["sweep"] == \
        str(second.resolve())
    rows = read_csv(out / "results.csv")
    assert [(r["profile"], r["status"]) for r in rows] == \
        [("off", "done"), ("second/off", "done"), ("second/aggressive", "done")]
    assert [r["profile"] for r in read_csv(out / "second" / "results.csv")] == \
        ["off", "aggressive"]
    assert sweep(second, out, "--add") == 0            # and --add again resumes it


def test_force_and_add_together_and_a_simulate_folder(tmp_path):
    path = small_sweep(tmp_path, "first", ("off",))
    with pytest.raises(Exception, match="--force and --add exclude each other"):
        claim_sweep_folder(path, tmp_path / "out", force=True, add=True)
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    with pytest.raises(Exception, match=f"^{run} holds a simulate run: --force replaces"):
        claim_sweep_folder(path, run)
    with pytest.raises(Exception, match="--force replaces only a sweep's results"):
        claim_sweep_folder(path, run, force=True)
    assert claim_sweep_folder(path, tmp_path / "new") == tmp_path / "new"
