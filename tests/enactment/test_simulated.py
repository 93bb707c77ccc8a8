"""The ``simulated`` backend keeps the work it runs across a crash of the daemon: a change is
one line appended to ``state.log``, folded into ``state.json`` when the log is long and when
the daemon stops."""

from __future__ import annotations

import json
import types
from pathlib import Path

from lease_manager.config.schema import load_config
from lease_manager.enactment import simulated
from lease_manager.enactment.base import Work
from lease_manager.enactment.simulated import SimulatedBackend
from lease_manager.kernel.resources import parse_site
from lease_manager.plugins import Plugins

from daemon_support import write_config


def backend(tmp_path: Path) -> SimulatedBackend:
    cfg = load_config(write_config(tmp_path), Plugins().schema)
    ctx = types.SimpleNamespace(config=cfg, site=parse_site(cfg.get("simulation", "resources")))
    return SimulatedBackend(ctx)  # type: ignore[arg-type]


def work(lease_id: int) -> Work:
    return Work(lease_id, "", (), 0.0, 10.0)


def test_a_crash_keeps_every_change_and_a_stop_folds_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)           # the configuration's state-dir is relative
    folder = tmp_path / "state" / "enactment" / "simulated"
    first = backend(tmp_path)
    for lease_id in (1, 2, 3):
        first.start(work(lease_id))
    first.stop(1)
    first.suspend(2)
    first.prepare(work(4))                # planned work is not kept
    # the daemon is killed: no close(); the changes are lines of the log
    assert json.loads((folder / "state.json").read_text()) == {}
    assert len((folder / "state.log").read_text().splitlines()) == 5
    with open(folder / "state.log", "a") as log:
        log.write('[3, "susp')           # a line cut short by a crash of the machine
    again = backend(tmp_path)
    assert again.states == {2: "suspended", 3: "running"}
    assert json.loads((folder / "state.json").read_text()) == {"2": "suspended",
                                                                "3": "running"}
    assert (folder / "state.log").read_text() == ""
    again.stop(3)
    again.close()                         # a clean stop: state.json alone says it all
    assert not (folder / "state.log").exists()
    assert json.loads((folder / "state.json").read_text()) == {"2": "suspended"}


def test_a_long_log_is_folded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(simulated, "FOLD_AFTER", 3)
    folder = tmp_path / "state" / "enactment" / "simulated"
    b = backend(tmp_path)
    for lease_id in (1, 2, 3, 4):
        b.start(work(lease_id))
    assert json.loads((folder / "state.json").read_text()) == {str(i): "running"
                                                                for i in (1, 2, 3, 4)}
    assert (folder / "state.log").read_text() == ""
    b.start(work(5))
    assert json.loads((folder / "state.log").read_text()) == [5, "running"]
    assert backend(tmp_path).states == {i: "running" for i in (1, 2, 3, 4, 5)}
