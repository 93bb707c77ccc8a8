"""Acceptance: a real ``lease-manager serve`` with the ``process`` backend, driven through the
client commands, runs real processes at the planned times; an advance reservation suspends a
running best-effort process, which resumes after it; a daemon SIGKILLed in the middle of a
burst from eight clients loses nothing and duplicates nothing."""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from lease_manager.daemon.client import DaemonUnavailable
from lease_manager.errors import LeaseManagerError

from daemon_support import ProcessDaemon, kill_leftover_processes, wait_for, write_config

#: how late (wall seconds) a process may start or stop on a loaded 2-core machine
TOLERANCE = 1.0


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def lease_json(daemon: ProcessDaemon, lease_id: int) -> dict:
    return json.loads(daemon.cli("show-lease", str(lease_id), "--json").stdout)


def written(path: Path) -> bool:
    return path.exists() and path.read_text().endswith("\n")


def stamped(path: Path) -> str:
    """A command that writes the wall time it starts at into ``path``."""
    return f"date +%s.%N > {path}"


@pytest.mark.long
def test_best_effort_ar_and_immediate_processes(tmp_path):
    """One node of one core, real clock (no speed-up); times in seconds from the first
    request::

        node-1 | BE 1: counts 0-3.5 |s| AR 2: 4-10 |r| BE 1 runs on 10.5-21 (10.5 s left)
        immediate 3 at ~0.5: rejected (no room); immediate 4 after BE 1 ends: runs

    ``s`` and ``r``: writing and reading back its 512 MB memory image at 1000 MB/s takes
    0.512 s each (the model's time; the process itself is frozen at once).

    The best-effort process appends to a file every 50 ms: it makes no progress while the AR
    holds the node, and goes on after.
    """
    config = write_config(tmp_path, resources="1 CPU:1 Memory:1024", enactment="process",
                          extra="[process]\ncgroups = auto\nstop-grace = 1")
    count = tmp_path / "count"
    daemon = ProcessDaemon(config)
    try:
        be = json.loads(daemon.cli(
            "request", "-t", "best_effort", "-d", "14", "--json", "--command",
            f"{stamped(tmp_path / 'be.start')}; i=0; while true; do i=$((i+1)); "
            f"echo $i >> {count}; sleep 0.05; done").stdout)
        assert be["state"] == "active"
        ar = json.loads(daemon.cli("request", "-t", "+00:00:04", "-d", "00:00:06", "--json",
                                   "--command", f"{stamped(tmp_path / 'ar.start')}; "
                                   f"sleep 60").stdout)
        assert ar["state"] == "scheduled"
        ar_start, ar_end = epoch(ar["plan"][0]["start"]), epoch(ar["plan"][0]["end"])
        busy = daemon.cli("request", "-t", "now", "-d", "5", "--json", check=False)
        assert busy.returncode == 1 and json.loads(busy.stdout)["state"] == "rejected"

        # the best-effort process started at once
        wait_for(lambda: written(tmp_path / "be.start"), 5, what="the best-effort process")
        assert abs(float((tmp_path / "be.start").read_text()) - epoch(be["plan"][0]["start"])) < 1
        # the AR's process starts at its time; the best-effort one is suspended before it
        wait_for(lambda: written(tmp_path / "ar.start"), 10, what="the AR's process")
        assert abs(float((tmp_path / "ar.start").read_text()) - ar_start) < TOLERANCE
        v = lease_json(daemon, be["id"])
        assert v["state"] in ("suspended", "queued", "scheduled")
        assert v["suspensions"] == 1
        frozen = len(count.read_text().split())
        time.sleep(1.0)
        assert len(count.read_text().split()) == frozen, "a suspended process made progress"
        hosts = json.loads(daemon.cli("list-hosts", "--json").stdout)
        assert [x["lease"] for x in hosts[0]["leases"]] == [ar["id"]], \
            lease_json(daemon, ar["id"])

        # the AR ends at its end (its process is stopped), the best-effort one resumes
        wait_for(lambda: lease_json(daemon, ar["id"])["state"] == "done", 10,
                 what="the AR to end")
        assert lease_json(daemon, ar["id"])["end"] is not None
        assert abs(epoch(lease_json(daemon, ar["id"])["end"]) - ar_end) < TOLERANCE
        wait_for(lambda: len(count.read_text().split()) > frozen + 5, 5,
                 what="the best-effort process to go on")
        v = lease_json(daemon, be["id"])
        assert v["state"] == "active" and v["suspensions"] == 1
        resumed = epoch(v["plan"][0]["start"])
        assert abs(resumed - (ar_end + 0.512)) < 0.01
        suspended_at = ar_start - 0.512
        assert abs(v["work_done"] - (suspended_at - epoch(be["start"]))) < 0.01
        # it gets the work it had left, then is stopped
        end = resumed + 14 - v["work_done"]
        wait_for(lambda: lease_json(daemon, be["id"])["state"] == "done", 15,
                 what="the best-effort lease to end")
        assert abs(epoch(lease_json(daemon, be["id"])["end"]) - end) < TOLERANCE
        stopped = len(count.read_text().split())
        time.sleep(0.4)
        assert len(count.read_text().split()) == stopped, "the process outlived its lease"

        now = json.loads(daemon.cli("request", "-t", "now", "-d", "2", "--json",
                                    "--command", "true").stdout)
        assert now["state"] in ("active", "done")   # `true` may be over by the answer
        wait_for(lambda: lease_json(daemon, now["id"])["state"] == "done", 5,
                 what="the immediate lease's command to finish")
    finally:
        assert daemon.terminate_and_clean() == 0


@pytest.mark.long
def test_sigkill_during_a_burst_at_concurrency_8_then_restore_under_load(tmp_path):
    """Four single-core nodes, 10x speed-up: leases of 5 s (0.5 s of wall time) whose
    commands take 0.2 s and write their lease id. Eight clients submit 30 leases each, every
    submission with an idempotency key that it sends again until it has an answer. The daemon
    is SIGKILLed in the middle of the burst and restarted at once: the clients go on through
    the restore (503 and Retry-After while it runs). Then every acknowledged lease is there
    exactly once, no lease exists that no client was answered for, and every lease ran
    exactly once."""
    config = write_config(tmp_path, resources="4 CPU:1 Memory:1024", enactment="process",
                          speedup=10, extra="[process]\ncgroups = none\nstop-grace = 1")
    ran = tmp_path / "ran.log"
    command = f"echo $LM_LEASE_ID >> {ran}; sleep 0.2"
    daemon = ProcessDaemon(config)
    current = {"client": daemon.client}
    answers: dict[str, dict] = {}          # name -> the answer its client got
    unavailable = []                       # how often a client found the daemon down
    failures: list[str] = []

    def client_thread(t: int) -> None:
        for i in range(30):
            name, key = f"c{t}-{i}", uuid.uuid4().hex
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                try:
                    answers[name] = current["client"].submit(
                        {"duration": 5, "command": command, "name": name}, key=key)
                    time.sleep(0.02)       # a burst that lasts: the kill falls inside it
                    break
                except DaemonUnavailable:  # down or restarting: the same key again
                    unavailable.append(name)
                    time.sleep(0.05)
                except LeaseManagerError as exc:
                    failures.append(f"{name}: {exc}")
                    return
            else:
                failures.append(f"{name}: no answer in 90 s")
                return

    threads = [threading.Thread(target=client_thread, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(answers) >= 60, 60, what="the first answers")
    daemon.proc.send_signal(signal.SIGKILL)           # in the middle of the burst
    daemon.proc.wait(10)
    daemon.log.close()
    killed_at = len(answers)
    assert killed_at < 240, "the burst was over before the kill"
    (tmp_path / "state" / "daemon.json").unlink(missing_ok=True)
    daemon = ProcessDaemon(config)
    current["client"] = daemon.client
    try:
        for thread in threads:
            thread.join(120)
        assert not failures, failures
        assert len(answers) == 240 and unavailable
        terminal = ("done", "failed", "cancelled", "rejected")
        wait_for(lambda: all(v["state"] in terminal for v in daemon.client.leases()),
                 120, every=0.2, what="every lease to finish")
        seen = daemon.client.leases()
        names = [v["name"] for v in seen]
        # every acknowledged lease once, under the id its client was told; nothing else
        assert sorted(names) == sorted(answers), (
            sorted(set(answers) - set(names)), sorted(set(names) - set(answers)),
            [n for n in names if names.count(n) > 1],
            {n: answers[n]["id"] for n in set(answers) - set(names)},
            (tmp_path / "daemon.log").read_text()[-3000:])
        assert {v["name"]: v["id"] for v in seen} == {n: a["id"] for n, a in answers.items()}
        assert {v["state"] for v in seen} == {"done"}, \
            {v["id"]: (v["state"], v["reason"]) for v in seen if v["state"] != "done"}
        runs = [int(x) for x in ran.read_text().split()]
        assert sorted(runs) == sorted(v["id"] for v in seen), "a lease ran twice or not at all"
        db = sqlite3.connect(tmp_path / "state" / "leases.db")
        assert db.execute("SELECT MAX(starts) FROM leases").fetchone()[0] == 1
        db.close()
    finally:
        assert daemon.terminate_and_clean() == 0


def test_work_that_ended_while_the_daemon_was_down(tmp_path):
    """Processes outlive the daemon; their exit codes, written while it was down, decide how
    their leases ended when it comes back."""
    from daemon_support import ThreadDaemon

    config = write_config(tmp_path, resources="2 CPU:1 Memory:1024", enactment="process",
                          extra="[process]\ncgroups = none")
    with ThreadDaemon(config) as d:
        ok = d.client.submit({"duration": 600, "command": "sleep 0.5"})
        bad = d.client.submit({"duration": 600, "command": "sleep 0.5; exit 3"})
        assert ok["state"] == bad["state"] == "active"
    time.sleep(1.5)
    with ThreadDaemon(config) as d:
        ok, bad = d.client.lease(ok["id"]), d.client.lease(bad["id"])
        assert ok["state"] == "done" and "finished while the daemon was down" in ok["reason"]
        assert bad["state"] == "failed" and "exited with status 3" in bad["reason"]
        assert d.daemon.backend.known_leases() == []   # cleaned up
        # and their nodes are free
        assert d.client.submit({"duration": 60, "nodes": 2})["state"] == "active"
    kill_leftover_processes(config)


@pytest.mark.long
def test_sigkill_while_a_lease_is_suspended_for_an_ar(tmp_path):
    """One node, real clock, seconds from the start::

        node-1 | BE 1 counts |s| AR 2: 3-9 (daemon SIGKILLed at ~4, restarted) |r| BE 1 on

    The suspended process stays frozen while the daemon is dead and after it restarts; the
    AR's process is found running; after the AR the best-effort process goes on counting.
    """
    config = write_config(tmp_path, resources="1 CPU:1 Memory:1024", enactment="process",
                          extra="[process]\nstop-grace = 1")
    count = tmp_path / "count"
    daemon = ProcessDaemon(config)
    try:
        be = daemon.client.submit({"duration": 30, "command": f"while true; do echo x >> "
                                                              f"{count}; sleep 0.05; done"})
        ar = daemon.client.submit({"start": "+3", "duration": 6,
                                   "command": f"echo started > {tmp_path / 'ar'}; sleep 100"})
        wait_for(lambda: written(tmp_path / "ar"), 10, what="the AR's process to start")
        assert daemon.client.lease(be["id"])["suspensions"] == 1
        daemon.kill()
        frozen = count.read_text().count("x")
        daemon = ProcessDaemon(config)
        v = daemon.client.lease(ar["id"])
        assert v["state"] == "active"
        assert any("found running" in e["detail"] for e in v["history"])
        assert daemon.client.lease(be["id"])["state"] in ("queued", "scheduled")
        time.sleep(0.5)
        assert count.read_text().count("x") == frozen, "the suspended process ran"
        wait_for(lambda: daemon.client.lease(ar["id"])["state"] == "done", 15,
                 what="the AR to end")
        wait_for(lambda: count.read_text().count("x") > frozen + 5, 10,
                 what="the best-effort process to go on")
        v = daemon.client.lease(be["id"])
        assert v["state"] == "active" and v["suspensions"] == 1
        db = sqlite3.connect(tmp_path / "state" / "leases.db")
        assert db.execute("SELECT MAX(starts) FROM leases").fetchone()[0] == 1
        db.close()
    finally:
        assert daemon.terminate_and_clean() == 0
