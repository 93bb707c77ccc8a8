"""Group commit: an engine step's changes are one SQLite transaction, made durable before
anything that depends on them leaves the daemon (an answer, a call to the backend)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from lease_manager.daemon.store import Store

from daemon_support import ThreadDaemon, wait_for, write_config


def committed_meta(path) -> dict[str, str]:
    """The ``meta`` table as another connection sees it (committed rows only)."""
    db = sqlite3.connect(path)
    try:
        return dict(db.execute("SELECT key, value FROM meta").fetchall())
    finally:
        db.close()


def test_a_group_is_one_transaction_and_a_failed_change_leaves_alone(tmp_path):
    """Three changes in a group: another connection sees none of them before the commit;
    the one that raised is rolled back alone; one COMMIT makes the other two durable."""
    store = Store(tmp_path / "leases.db")
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    store.group()
    store.set_meta("a", "1")
    with pytest.raises(ValueError), store.transaction():
        store.db.execute("INSERT INTO meta VALUES ('broken', 'x')")
        raise ValueError("the change fails half-way")
    store.set_meta("b", "2")
    assert "a" not in committed_meta(store.path)       # not durable yet
    store.commit()
    seen = committed_meta(store.path)
    assert (seen.get("a"), seen.get("b"), "broken" in seen) == ("1", "2", False)
    assert statements.count("COMMIT") == 1
    store.ungroup()                                      # one transaction a change again
    store.set_meta("c", "3")
    assert committed_meta(store.path)["c"] == "3"
    assert statements.count("COMMIT") == 2
    store.close()


def test_a_change_of_one_statement_takes_no_savepoint_and_fails_alone(tmp_path):
    """In a group, a change of one statement (a meta value, a log line) is no savepoint: SQLite
    undoes a failed statement whole. One that fails (a log line of a lease that does not
    exist: a foreign key) leaves nothing, and the group's other changes are kept; a change of
    two statements (a lease put in a final state: its row and its log line) still takes its
    savepoint."""
    store = Store(tmp_path / "leases.db")
    store.db.execute("INSERT INTO leases (id, request, type, state, submit, updated) "
                     "VALUES (1, '{}', 'best-effort', 'queued', 0, 0)")
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    store.group()
    store.set_meta("a", "1")
    with pytest.raises(sqlite3.IntegrityError):
        store.log(99, 0.0, "queued", "of no lease")
    store.log(1, 0.0, "queued", "noted")
    assert statements[0] == "BEGIN IMMEDIATE" and len(statements) == 4   # and 3 changes
    assert not [s for s in statements if s.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK"))]
    store.end(1, "queued", "done", "finished", 0.0)
    assert [s for s in statements if s.startswith(("SAVEPOINT", "RELEASE"))] == \
        ["SAVEPOINT change", "RELEASE change"]
    store.commit()
    assert committed_meta(store.path).get("a") == "1"
    db = sqlite3.connect(store.path)
    assert db.execute("SELECT lease_id, detail FROM events ORDER BY seq").fetchall() == \
        [(1, "noted"), (1, "finished")]
    assert db.execute("SELECT state FROM leases").fetchall() == [("done",)]
    db.close()
    store.ungroup()
    store.close()


def test_the_next_lease_id_is_read_once_then_kept(tmp_path, monkeypatch):
    """``next_id`` reads the table once; each insert moves it on (no query); an insert that
    fails leaves it; a group whose commit fails (rolled back) makes it read the table again."""
    from types import SimpleNamespace

    from lease_manager.kernel.lease import LeaseState, LeaseType

    def lease(i: int) -> SimpleNamespace:
        return SimpleNamespace(id=i, type=LeaseType.BEST_EFFORT, state=LeaseState.QUEUED,
                               submit=0.0)

    store = Store(tmp_path / "leases.db")
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    assert store.next_id() == 1 and len(statements) == 1
    store.group()
    store.insert([(lease(1), {}), (lease(2), {})], 0.0)
    with pytest.raises(sqlite3.IntegrityError):
        store.insert([(lease(3), {}), (lease(2), {})], 0.0)    # id 2 is taken: all undone
    assert store.next_id() == 3
    store.commit()
    store.insert([(lease(3), {})], 0.0)
    assert store.next_id() == 4
    assert [s for s in statements if s.startswith("SELECT")] == [statements[0]]

    def failing_commit() -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "commit", failing_commit)
    with pytest.raises(sqlite3.OperationalError):
        store.ungroup()                  # lease 3 is rolled back with its group
    monkeypatch.undo()
    assert store.next_id() == 3 and statements[-1].startswith("SELECT")
    store.close()


def rows_at_each_start(td: ThreadDaemon) -> list[tuple]:
    """Make the daemon's backend note, at each start it is asked for, the lease's row as a
    connection of its own reads it (what is committed): ``(id, state, starting)``."""
    daemon = td.daemon
    plain_start = daemon.backend.start
    seen: list[tuple] = []

    def start(work):
        db = sqlite3.connect(daemon.store.path)
        try:
            seen.append(db.execute("SELECT id, state, starting FROM leases WHERE id = ?",
                                   (work.lease_id,)).fetchone())
        finally:
            db.close()
        plain_start(work)

    daemon.backend.start = start
    return seen


def test_the_backend_gets_a_start_only_once_it_is_stored(tmp_path):
    """When the backend is told to start a lease's work, the lease's row, read through a
    connection of its own, already says it is active with a start recorded (``starting``):
    a daemon killed right after the start finds it on restart. Grouped and not committed,
    the row would not be there at all."""
    with ThreadDaemon(write_config(tmp_path)) as td:
        seen = rows_at_each_start(td)
        view = td.client.submit({"duration": 600, "nodes": 1})
        assert view["state"] == "active"
        assert seen == [(view["id"], "active", 1)]


def hold_the_engine(td: ThreadDaemon) -> threading.Event:
    """Keep the engine thread busy until the returned event is set."""
    inside, gate = threading.Event(), threading.Event()
    td.daemon.run.engine.post(lambda now: (inside.set(), gate.wait(20)))
    assert inside.wait(20)
    return gate


def wait_for_calls(td: ThreadDaemon, count: int) -> None:
    """Until ``count`` API calls wait for the engine."""
    def posted() -> bool:
        waiting = list(td.daemon.run.engine._posted)    # (a copy: the deque grows meanwhile)
        return sum("Daemon.call" in f.__qualname__ for f in waiting) == count

    wait_for(posted, what=f"{count} API calls to wait for the engine")


def four_submissions_in_one_step(td: ThreadDaemon) -> tuple[list[dict], list[str]]:
    """Submit four one-node leases while the engine is held, then free it so that one step
    takes all four; return their answers and the SQL statements run meanwhile."""
    d = td.daemon
    gate = hold_the_engine(td)
    views: list[dict] = []
    clients = [threading.Thread(target=lambda: views.append(
        td.client.submit({"duration": 60, "nodes": 1}))) for _ in range(4)]
    for client in clients:
        client.start()
    wait_for_calls(td, 4)
    statements: list[str] = []
    d.store.db.set_trace_callback(statements.append)
    gate.set()
    for client in clients:
        client.join(20)
    d.call(lambda now: lambda: None)    # a step after theirs: theirs is over (no change)
    d.store.db.set_trace_callback(None)
    return views, statements


def test_the_submissions_of_one_step_share_one_commit(tmp_path):
    """Four submissions wait while the engine is busy (a call that holds it); once it is
    free, one step takes the four: one COMMIT, before the four answers (the old daemon
    committed each change: at least two a submission). The site is full and backfilling
    off, so the four only queue (a start would commit before its backend call)."""
    config = write_config(tmp_path)
    with ThreadDaemon(config, "scheduling.backfilling=off") as td:
        assert td.client.submit({"duration": 3600, "nodes": 2})["state"] == "active"
        views, statements = four_submissions_in_one_step(td)
        assert sorted(v["state"] for v in views) == ["queued"] * 4
        assert statements.count("COMMIT") == 1, statements
        assert statements.count("BEGIN IMMEDIATE") == 1



def test_the_starts_of_one_step_share_the_commit_before_them(tmp_path):
    """Four submissions wait while the engine is busy; once free, one step takes them and
    starts all four (the site has room). The backend gets each start with the lease's row,
    read through a connection of its own, already active with a start recorded; the four
    share one COMMIT before the first start, and one more comes at the step's end, for the
    backend's hand-over marks: 2 in all, where a commit before each start gave 5. The
    answers, which show no mark, leave between the two: after one commit, not two (so
    after one fsync with ``sync = full``)."""
    with ThreadDaemon(write_config(tmp_path, resources="4 CPU:1 Memory:1024")) as td:
        d = td.daemon
        seen = rows_at_each_start(td)
        answered = threading.Event()
        plain_answer = d._answer_pending

        def answer_pending() -> None:
            plain_answer()
            if d.store.db.in_transaction:      # (the step with the four: marks uncommitted)
                d.store.db.execute("SELECT 'answered'")
                answered.set()

        d._answer_pending = answer_pending
        views, statements = four_submissions_in_one_step(td)
        assert answered.is_set()
        assert sorted(v["state"] for v in views) == ["active"] * 4
        assert sorted(seen) == sorted((v["id"], "active", 1) for v in views)
        assert statements.count("COMMIT") == 2, statements
        marks = [i for i, s in enumerate(statements) if s.startswith("UPDATE leases SET "
                                                                     "starting = 0")]
        answers, commits = statements.index("SELECT 'answered'"), \
            [i for i, s in enumerate(statements) if s == "COMMIT"]
        assert len(marks) == 4 and commits[0] < marks[0] and marks[-1] < answers < commits[1]
        assert all(d.store.lease(v["id"])["starting"] == 0 for v in views)   # handed over
