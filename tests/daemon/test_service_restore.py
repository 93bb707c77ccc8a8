"""The daemon keeps every accepted lease across restarts and reconciles with its backend.

These use the ``simulated`` backend (it runs nothing and remembers what it was told in its
state folder, as a real backend's work outlives the daemon) and a daemon in a thread.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from lease_manager.errors import LeaseManagerError

from daemon_support import ThreadDaemon, wait_for, write_config


def states(client):
    return {v["id"]: v["state"] for v in client.leases()}


@pytest.fixture
def config(tmp_path):
    return write_config(tmp_path, resources="2 CPU:1 Memory:1024")


def test_restart_finds_running_planned_and_queued_leases(config, tmp_path):
    """Two 1-core nodes; long leases so that nothing ends during the test::

        node-1 | 1 (BE, running)          | 3 (AR at +1000 s)
        node-2 | 2 (BE, running)          | 3
        queue  | 4 (BE, 2 VMs: after the AR), 5 (BE, after 4)
    """
    with ThreadDaemon(config) as d:
        c = d.client
        one = c.submit({"duration": 5000})
        two = c.submit({"duration": 5000})
        ar = c.submit({"start": "+1000", "duration": 600, "nodes": 2})
        four = c.submit({"duration": 100, "nodes": 2})
        five = c.submit({"duration": 100})
        before = {v["id"]: v for v in c.leases()}
        assert [before[i]["state"] for i in range(1, 6)] == [
            "active", "active", "scheduled", "scheduled", "queued"]
    with ThreadDaemon(config) as d:
        c = d.client
        after = {v["id"]: v for v in c.leases()}
        # the running ones run on, on the same nodes, to the same end
        for lease in (one, two):
            a, b = after[lease["id"]], before[lease["id"]]
            # the AR preempts them at +1000 s again: suspension planned as before
            assert a["state"] == "active"
            assert a["plan"][0]["nodes"] == b["plan"][0]["nodes"]
            assert a["plan"][-1]["end"] == b["plan"][-1]["end"]
            assert a["start"] == b["start"]
        assert after[ar["id"]]["state"] == "scheduled"
        assert after[ar["id"]]["plan"][0]["start"] == before[ar["id"]]["plan"][0]["start"]
        assert after[ar["id"]]["plan"][0]["end"] == before[ar["id"]]["plan"][0]["end"]
        # the best-effort leases were queued again and planned in their order
        assert after[four["id"]]["state"] == "scheduled"
        assert after[four["id"]]["plan"][0]["start"] == before[four["id"]]["plan"][0]["start"]
        assert after[five["id"]]["state"] == "queued"
        assert [v["id"] for v in c.queue()] == [five["id"]]
        # the backend was not asked to start anything again
        assert ("start", one["id"]) not in d.daemon.backend.log
        # ids carry on
        assert c.submit({"duration": 10})["id"] == 6
        history = c.lease(one["id"])["history"]
        assert any("found running after a restart" in e["detail"] for e in history)


def test_work_that_vanished_while_down_fails_its_lease(config, tmp_path):
    with ThreadDaemon(config) as d:
        lease = d.client.submit({"duration": 5000})
        assert lease["state"] == "active"
        other = d.client.submit({"duration": 5000})
    backend_state = tmp_path / "state" / "enactment" / "simulated" / "state.json"
    known = json.loads(backend_state.read_text())
    del known[str(lease["id"])]
    backend_state.write_text(json.dumps(known))
    with ThreadDaemon(config) as d:
        v = d.client.lease(lease["id"])
        assert v["state"] == "failed"
        assert "vanished while the daemon was down" in v["reason"]
        assert d.client.lease(other["id"])["state"] == "active"
        # its node is free again: a new one-VM lease starts at once
        assert d.client.submit({"duration": 10})["state"] == "active"


def _forget_in_backend(tmp_path, lease_id: int) -> None:
    backend_state = tmp_path / "state" / "enactment" / "simulated" / "state.json"
    known = json.loads(backend_state.read_text())
    del known[str(lease_id)]
    backend_state.write_text(json.dumps(known))


def _row(tmp_path, lease_id: int) -> sqlite3.Row:
    db = sqlite3.connect(tmp_path / "state" / "leases.db")
    db.row_factory = sqlite3.Row
    try:
        return db.execute("SELECT * FROM leases WHERE id = ?", (lease_id,)).fetchone()
    finally:
        db.close()


def _mark_starting(tmp_path, lease_id: int) -> None:
    """The row as a daemon killed after recording a start, before the backend took it."""
    db = sqlite3.connect(tmp_path / "state" / "leases.db")
    with db:
        db.execute("UPDATE leases SET starting = 1 WHERE id = ?", (lease_id,))
    db.close()


def test_a_start_is_marked_until_the_backend_takes_its_work(config, tmp_path):
    with ThreadDaemon(config) as d:
        lease = d.client.submit({"duration": 5000})
        assert lease["state"] == "active"
        # the mark is committed at the end of the step that answered (after its answers):
        # a call in a later step comes after it
        d.daemon.call(lambda now: lambda: None)
        row = _row(tmp_path, lease["id"])
        assert (row["starts"], row["starting"]) == (1, 0)
        assert ("start", lease["id"]) in d.daemon.backend.log


def test_a_start_that_never_reached_the_backend_is_made_again(config, tmp_path):
    """A daemon killed between recording a start (state ``active``, ``starting`` = 1) and
    handing the work to its backend: nothing ran, so after the restart the lease starts
    afresh, once, instead of failing as work that vanished. One 1-core node each::

        before the kill | node-1: 1 (recorded active, never handed over); node-2: 2 (running)
        after restart   | node-1: 1 (started again now);                  node-2: 2 (taken back)
    """
    with ThreadDaemon(config) as d:
        one = d.client.submit({"duration": 5000})
        two = d.client.submit({"duration": 5000})
    _mark_starting(tmp_path, one["id"])
    _forget_in_backend(tmp_path, one["id"])
    with ThreadDaemon(config) as d:
        v = d.client.lease(one["id"])
        assert v["state"] == "active", v
        assert ("start", one["id"]) in d.daemon.backend.log      # handed over this time
        assert ("start", two["id"]) not in d.daemon.backend.log  # taken back as it ran
        row = _row(tmp_path, one["id"])
        assert (row["starts"], row["starting"]) == (1, 0)
        assert v["start"] != one["start"]        # its first real start is this one
        assert any("had not reached the backend" in e["detail"] for e in v["history"])
        assert d.client.lease(two["id"])["state"] == "active"


def test_a_marked_start_that_the_backend_took_is_taken_back(config, tmp_path):
    """Killed after the backend took the work but before the daemon recorded it: the work
    runs on and is not started twice."""
    with ThreadDaemon(config) as d:
        lease = d.client.submit({"duration": 5000})
    _mark_starting(tmp_path, lease["id"])
    with ThreadDaemon(config) as d:
        assert d.client.lease(lease["id"])["state"] == "active"
        assert ("start", lease["id"]) not in d.daemon.backend.log
        row = _row(tmp_path, lease["id"])
        assert (row["starts"], row["starting"]) == (1, 0)


def test_a_marked_advance_reservation_that_never_started_is_planned_again(config, tmp_path):
    """An AR over both nodes whose recorded start never reached the backend keeps what is
    left of its interval, as an AR planned before a restart does."""
    with ThreadDaemon(config) as d:
        ar = d.client.submit({"start": "+1", "duration": 3600, "nodes": 2})
        wait_for(lambda: d.client.lease(ar["id"])["state"] == "active", 10,
                 what="the AR to start")
    _mark_starting(tmp_path, ar["id"])
    _forget_in_backend(tmp_path, ar["id"])
    with ThreadDaemon(config) as d:
        v = wait_for(lambda: (lambda v: v if v["state"] == "active" else None)(
            d.client.lease(ar["id"])), 10, what="the AR to run again")
        assert v["plan"][0]["end"] == ar["plan"][0]["end"]
        assert ("start", ar["id"]) in d.daemon.backend.log


def test_a_lease_the_scheduler_never_saw_is_submitted_on_restart(config, tmp_path):
    """A crash between writing a request and scheduling it leaves a row in state NEW."""
    with ThreadDaemon(config) as d:
        d.client.submit({"duration": 5000})
    db = sqlite3.connect(tmp_path / "state" / "leases.db")
    request = json.loads(db.execute("SELECT request FROM leases WHERE id = 1").fetchone()[0])
    with db:
        db.execute("INSERT INTO leases (id, request, type, state, submit, updated) "
                   "VALUES (2, ?, 'best-effort', 'new', 0, 0)", (json.dumps(request),))
    db.close()
    with ThreadDaemon(config) as d:
        assert states(d.client) == {1: "active", 2: "active"}


def test_an_ar_whose_start_passed_while_down_keeps_the_rest_of_its_interval(config, tmp_path):
    with ThreadDaemon(config) as d:
        ar = d.client.submit({"start": "+1", "duration": 3600, "nodes": 2})
        assert ar["state"] == "scheduled"
        # stop before it starts
    import time
    time.sleep(1.5)
    with ThreadDaemon(config) as d:
        v = wait_for(lambda: (lambda v: v if v["state"] == "active" else None)(
            d.client.lease(ar["id"])), 10, what="the AR to run")
        assert v["plan"][0]["end"] == ar["plan"][0]["end"]


def test_state_changes_are_in_the_database_before_the_answer(config, tmp_path):
    with ThreadDaemon(config) as d:
        lease = d.client.submit({"duration": 5000})
        db = sqlite3.connect(tmp_path / "state" / "leases.db")
        row = db.execute("SELECT state, start FROM leases WHERE id = ?",
                         (lease["id"],)).fetchone()
        assert row[0] == "active" and row[1] is not None
        events = [r[0] for r in db.execute("SELECT new FROM events WHERE lease_id = ? "
                                           "ORDER BY seq", (lease["id"],))]
        assert events == ["new", "queued", "scheduled", "active"]
        cancelled = d.client.cancel(lease["id"])
        assert cancelled["state"] == "cancelled"
        assert db.execute("SELECT state FROM leases WHERE id = ?",
                          (lease["id"],)).fetchone()[0] == "cancelled"
        db.close()
        assert ("stop", lease["id"]) in d.daemon.backend.log


def test_leftover_work_of_a_finished_lease_is_stopped_on_restart(config, tmp_path):
    """A crash between recording a lease's end and stopping its work leaves the work behind."""
    with ThreadDaemon(config) as d:
        lease = d.client.submit({"duration": 5000})
        d.client.cancel(lease["id"])
    backend_state = tmp_path / "state" / "enactment" / "simulated" / "state.json"
    backend_state.write_text(json.dumps({str(lease["id"]): "running"}))
    with ThreadDaemon(config) as d:
        assert d.daemon.backend.log == [("stop", lease["id"])]
        assert d.client.lease(lease["id"])["state"] == "cancelled"


def test_work_of_a_lease_queued_again_before_it_was_stopped_is_stopped_on_restart(config,
                                                                                 tmp_path):
    """A running lease preempted by cancellation is recorded as queued again before its work
    is stopped; a daemon killed in between leaves the row queued and the work running. On
    restart that work is stopped before the lease starts afresh (it lost its work), and the
    start counts: two in all. One 1-core node each::

        before the kill | node-1: 1 (recorded queued again, its work still running)
        after restart   | node-1: 1's old work stopped, then 1 started afresh
    """
    with ThreadDaemon(config) as d:
        lease = d.client.submit({"duration": 5000})
        assert lease["state"] == "active"
    db = sqlite3.connect(tmp_path / "state" / "leases.db")
    with db:
        db.execute("UPDATE leases SET state = 'queued', plan = '[]', work_done = 0 "
                   "WHERE id = ?", (lease["id"],))
    db.close()
    with ThreadDaemon(config) as d:
        log = d.daemon.backend.log
        assert log.index(("stop", lease["id"])) < log.index(("start", lease["id"]))
        v = d.client.lease(lease["id"])
        assert v["state"] == "active"
        assert any("left over" in e["detail"] for e in v["history"])
        assert _row(tmp_path, lease["id"])["starts"] == 2


def test_a_second_daemon_on_the_same_state_is_refused(config):
    from lease_manager.daemon.service import Daemon
    from lease_manager.errors import LeaseManagerError

    with ThreadDaemon(config):
        with pytest.raises(LeaseManagerError, match="another daemon .* is using the state"):
            Daemon(config)
    Daemon(config).store.close()   # free again once the first one stopped


def test_a_planned_lease_that_loses_its_plan_releases_its_booking(tmp_path):
    """One node::

        node-1 | 1 (BE, 0-50) | 2 (BE, planned 50-5050: preempted before it starts)
               |              |   3 (AR, 100-200)
    """
    config = write_config(tmp_path, resources="1 CPU:1 Memory:1024")
    with ThreadDaemon(config) as d:
        c = d.client
        c.submit({"duration": 50})
        two = c.submit({"duration": 5000})
        assert two["state"] == "scheduled"
        assert ("prepare", two["id"]) in d.daemon.backend.log
        ar = c.submit({"start": "+100", "duration": 100})
        assert ar["state"] == "scheduled"
        assert c.lease(two["id"])["preemptions"] == 1
        log = d.daemon.backend.log
        assert log.index(("stop", two["id"])) < log.index(("prepare", ar["id"]))


def test_an_unbounded_speedup_is_refused():
    """``--speedup inf`` (or 1e308) once made the state folder unusable; it is refused."""
    from lease_manager.config.schema import load_config
    from lease_manager.errors import ConfigError
    from lease_manager.plugins import Plugins

    schema = Plugins(entry_points=False).schema
    for value in ("inf", "1e308", "1e12"):
        with pytest.raises(ConfigError, match="above the maximum 1e|must be finite .at most 1e"):
            load_config(None, schema, [f"simulation.speedup={value}"])


def test_a_clock_anchor_that_would_soon_pass_year_9999_is_refused(tmp_path, caplog):
    """A stored anchor 1,000 s before 9999-12-31T23:59:59Z restored at --speedup 1000000: the
    clock passed the limit at once and /v1/health and POST /v1/leases answered 500 ('year
    10000 is out of range'). An anchor that gets there within a day is refused now."""
    import time

    from lease_manager.daemon.store import Store

    LAST_INSTANT = 253402300799.0     # 9999-12-31T23:59:59Z
    config = write_config(tmp_path, speedup=1e6)
    with ThreadDaemon(config):
        pass
    store = Store(tmp_path / "state" / "leases.db")
    store.set_meta("clock", json.dumps({"clock": LAST_INSTANT - 1000, "wall": time.time(),
                                        "speedup": 1.0}))
    store.close()
    with ThreadDaemon(config) as d:
        assert d.daemon.run.clock.now() < LAST_INSTANT - 1e10
        assert d.client.call("GET", "/v1/health")["status"] == "ok"
        assert d.client.submit({"duration": 60})["id"] == 1
    assert "would pass 9999-12-31 within 86400 wall seconds" in caplog.text


def test_a_speedup_that_would_pass_year_9999_within_the_horizon_is_refused(tmp_path,
                                                                          monkeypatch):
    from lease_manager.daemon import service
    from lease_manager.errors import ConfigError

    monkeypatch.setattr(service, "CLOCK_HORIZON", 1e7)   # 1e7 s at 1e6: past year 9999
    config = write_config(tmp_path, speedup=1e6)
    with pytest.raises(ConfigError, match=r"\[simulation\] speedup: 1e\+06: the clock would "
                                          r"pass 9999-12-31 within 1e\+07 wall seconds"):
        ThreadDaemon(config)
    monkeypatch.setattr(service, "CLOCK_HORIZON", 86400.0)
    with ThreadDaemon(config) as d:                 # the state folder was not left locked
        assert d.client.call("GET", "/v1/health")["status"] == "ok"


def test_an_instant_past_year_9999_is_shown_not_raised():
    from lease_manager.kernel.timeutil import LAST_INSTANT, format_instant

    assert format_instant(LAST_INSTANT) == "9999-12-31T23:59:59Z"
    assert format_instant(LAST_INSTANT + 1000) == "9999-12-31T23:59:59Z"
    assert format_instant(1e300) == "9999-12-31T23:59:59Z"
    assert format_instant(-1e300) == "0001-01-01T00:00:00Z"
    assert format_instant(float("nan")) is None and format_instant(float("inf")) is None
    assert format_instant(0.5) == "1970-01-01T00:00:00.500Z"


@pytest.mark.parametrize("anchor", [
    '{"clock": Infinity, "wall": 1.0, "speedup": 1.0}',
    '{"clock": 1e300, "wall": 1.0, "speedup": 1.0}',
    '{"clock": 0.0, "wall": 0.0, "speedup": 1e308}',
    'not json',
    '{"clock": "x"}',
])
def test_a_bad_stored_clock_anchor_does_not_lock_the_state_folder(tmp_path, anchor, caplog):
    """Whatever an earlier run stored, the daemon starts, says so, and its clock reads the
    wall time."""
    import time

    from lease_manager.daemon.store import Store

    config = write_config(tmp_path)
    with ThreadDaemon(config):
        pass
    store = Store(tmp_path / "state" / "leases.db")
    store.set_meta("clock", anchor)
    store.close()
    with ThreadDaemon(config) as d:
        assert abs(d.daemon.run.clock.now() - time.time()) < 60
        assert d.client.call("GET", "/v1/health")["status"] == "ok"
    assert "the stored clock anchor is" in caplog.text


@pytest.mark.parametrize("edit, field", [
    (lambda r: {**r, "duration": 1e300}, "duration: 1e+300 s is longer than a century"),
    (lambda r: {**r, "nodes": 10**9}, "nodes: 1e+09 is out of range"),
    (lambda r: {**r, "resources": {"CPU": -1.0}}, "resources.CPU: -1 is out of range"),
    (lambda r: {**r, "resources": {"GPU": 1.0}}, "resources.GPU: the site has no such"),
    (lambda r: {**r, "type": "forever"}, "type: 'forever' is not one of"),
    (lambda r: {k: v for k, v in r.items() if k != "command"}, "command: must be a string"),
    (lambda r: [r], "is not a JSON object"),
    (lambda r: {**r, "extra": {"disk-image": "a", "disk-image-size": "x"}},
     "extra.disk-image-size: 'x' is not a number"),
    (lambda r: {**r, "extra": {"preemptible": "perhaps"}},
     "extra.preemptible: 'perhaps' is not true or false"),
])
def test_a_stored_request_out_of_bounds_fails_its_lease_alone(tmp_path, caplog, edit, field):
    """Stored rows were not checked on restore: one edited to a duration of 1e300 was
    restored as it was. Each is checked with the API's bounds; a bad one fails with one line
    naming it, and the others are restored."""
    config = write_config(tmp_path, speedup=60)
    with ThreadDaemon(config) as d:
        first = d.client.submit({"duration": 3600, "nodes": 1})
        second = d.client.submit({"duration": 3600, "nodes": 1})
    db = sqlite3.connect(tmp_path / "state" / "leases.db")
    (text,), = db.execute("SELECT request FROM leases WHERE id = ?", (first["id"],))
    db.execute("UPDATE leases SET request = ? WHERE id = ?",
               (json.dumps(edit(json.loads(text))), first["id"]))
    db.commit()
    db.close()
    with ThreadDaemon(config) as d:
        bad = d.client.lease(first["id"])
        assert bad["state"] == "failed"
        assert bad["reason"].startswith("its stored request is invalid (")
        assert field in bad["reason"]
        assert d.client.lease(second["id"])["state"] in ("active", "scheduled", "queued")
        assert d.client.call("GET", "/v1/health")["status"] == "ok"
    lines = [r.getMessage() for r in caplog.records if "stored request is invalid" in
             r.getMessage()]
    assert len(lines) == 1 and f"lease {first['id']}: " in lines[0] and "\n" not in lines[0]


def test_a_schema_1_database_is_migrated_in_place(tmp_path):
    """A state folder written before the ``starting`` column existed opens, keeps its rows
    (none of them marked), and is at the current version afterwards."""
    from lease_manager.daemon import store as store_module

    path = tmp_path / "leases.db"
    old_schema = "\n".join(line for line in store_module.SCHEMA.splitlines()
                           if not line.lstrip().startswith("starting "))
    db = sqlite3.connect(path)
    db.executescript(old_schema)
    with db:
        db.execute("INSERT INTO meta VALUES ('schema', '1')")
        db.execute("INSERT INTO leases (id, request, type, state, submit, starts, updated) "
                   "VALUES (1, '{}', 'best-effort', 'active', 0, 1, 0)")
    db.close()
    store = store_module.Store(path)
    try:
        assert store.meta("schema") == str(store_module.SCHEMA_VERSION) == "2"
        row = store.lease(1)
        assert (row["state"], row["starts"], row["starting"]) == ("active", 1, 0)
    finally:
        store.close()
    store_module.Store(path).close()           # and opens again as it is


def test_a_database_of_a_newer_schema_is_refused(tmp_path):
    from lease_manager.daemon import store as store_module

    path = tmp_path / "leases.db"
    store_module.Store(path).close()
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    db.close()
    with pytest.raises(sqlite3.DatabaseError, match="schema version 3"):
        store_module.Store(path)


def test_a_cancelled_running_lease_is_recorded_queued_before_its_work_stops(tmp_path):
    """``suspension = none``: an AR that needs the one node cancels the running lease now and
    queues it again. Its new state is in the database before its backend is told to stop
    the work (as a lease's end is), so a daemon killed in between restarts with a queued
    lease and left-over work, not with running work that vanished::

        node-1 | 1 (BE, running: cancelled now, queued again after 3) | 3 (AR, +100 s)
    """
    config = write_config(tmp_path, resources="1 CPU:1 Memory:1024")
    with ThreadDaemon(config, "scheduling.suspension=none") as d:
        one = d.client.submit({"duration": 5000})
        assert one["state"] == "active"
        backend = d.daemon.backend
        stop = backend.stop
        seen = []

        def recording_stop(lease_id):
            seen.append((lease_id, d.daemon.store.lease(lease_id)["state"]))
            stop(lease_id)

        backend.stop = recording_stop
        ar = d.client.submit({"start": "+100", "duration": 100})
        assert ar["state"] == "scheduled"
        assert seen and seen[0] == (one["id"], "queued"), seen
        assert d.client.lease(one["id"])["preemptions"] == 1


def test_a_restart_on_fewer_nodes_fails_only_the_leases_that_no_longer_fit(tmp_path, caplog):
    """Four 1-core nodes, four 10-hour leases of one VM running (one a node), a fifth queued
    behind them and a sixth of 3 VMs queued too; restarted on two nodes::

        node 1  |=== lease 1 ===|          kept (node 1 is still there)
        node 2  |=== lease 2 ===|          kept
        node 3  |=== lease 3 ===|          fails: node 3 is gone
        node 4  |=== lease 4 ===|          fails: node 4 is gone
        waiting (queued or planned ahead): lease 5 (1 VM) kept; lease 6 (3 VMs) fails: larger
    than a 2-node site

    The restart once stopped with an IndexError on every start, until the old resources were
    put back; now each lease that no longer fits fails with one line naming it."""
    config = write_config(tmp_path, resources="4 CPU:1 Memory:1024")
    with ThreadDaemon(config) as d:
        ids = [d.client.submit({"duration": "10:00:00", "nodes": 1})["id"] for _ in range(5)]
        ids.append(d.client.submit({"duration": "10:00:00", "nodes": 3})["id"])
        before = states(d.client)
        assert [before[i] for i in ids[:4]] == ["active"] * 4
        assert {before[ids[4]], before[ids[5]]} <= {"queued", "scheduled"}
        on = {v["id"]: v["plan"][0]["nodes"] for v in d.client.leases() if v["id"] in ids[:4]}
    assert sorted(on.values()) == [["node-1"], ["node-2"], ["node-3"], ["node-4"]]
    with ThreadDaemon(config, "simulation.resources=2 CPU:1 Memory:1024") as d:
        after = {v["id"]: v for v in d.client.leases()}
        gone = {i for i, nodes in on.items() if nodes[0] in ("node-3", "node-4")}
        for i in gone:
            assert after[i]["state"] == "failed"
            assert "that the site no longer has (it has 2 nodes now)" in after[i]["reason"]
        assert {i: after[i]["state"] for i in set(on) - gone} == \
            {i: "active" for i in set(on) - gone}
        assert after[ids[4]]["state"] in ("queued", "scheduled")
        assert after[ids[5]]["state"] == "failed"
        assert "larger than the site" in after[ids[5]]["reason"]
        assert d.client.call("GET", "/v1/health")["status"] == "ok"
    lines = [r.getMessage() for r in caplog.records if "the lease fails" in r.getMessage()]
    assert len(lines) == 3 and all("\n" not in line for line in lines)


@pytest.mark.parametrize("what, mode, fix", [
    ("state", 0o755, "chmod 700"),
    ("state/token", 0o644, "chmod 600"),
])
def test_a_state_folder_or_token_open_to_others_is_refused_at_start(tmp_path, what, mode, fix):
    """Made beforehand with loose modes, they were used without a warning: any local user
    could read the token (and the users' commands in the database)."""
    from lease_manager.daemon.service import Daemon

    config = write_config(tmp_path)
    (tmp_path / "state").mkdir(mode=0o700)
    (tmp_path / "state" / "token").write_text("secret\n")
    (tmp_path / "state" / "token").chmod(0o600)
    (tmp_path / what).chmod(mode)
    with pytest.raises(LeaseManagerError) as caught:
        Daemon(config)
    path = (tmp_path / what).resolve()
    assert str(caught.value) == (f"{path} is open to other users (mode {mode:04o}): run "
                                 f"`{fix} {path}` (the daemon keeps the API token and the "
                                 "users' commands there)")
    (tmp_path / what).chmod(0o700 if what == "state" else 0o600)
    with ThreadDaemon(config) as d:
        assert d.client.call("GET", "/v1/health")["status"] == "ok"
