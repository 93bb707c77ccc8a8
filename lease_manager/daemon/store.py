"""Durable state: every lease the daemon accepted and every change of state, in SQLite.

One row per lease (its request as submitted, and where it stands) plus an append-only log of
state changes. The engine thread is the only writer. Outside a group, each change is a
transaction of its own. In the daemon's engine steps the changes are grouped
(:meth:`Store.group`): the whole step's changes go in one transaction (one fsync with
``sync = full``), committed by :meth:`Store.commit` before anything leaves the process, an
answer or a call to the backend. API threads read through connections of their own (WAL mode
lets them read while the engine writes); they see committed changes only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease

#: with checkpoints in the background (:meth:`Store.checkpoint_in_background`), the engine's
#: own connection still checkpoints if the WAL grows past this many pages (4 KB each)
ENGINE_AUTOCHECKPOINT = 10_000
SCHEMA_VERSION = 2
log = logging.getLogger("lease_manager.daemon")
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
    id INTEGER PRIMARY KEY,
    request TEXT NOT NULL,          -- the request as submitted (normalised JSON)
    type TEXT NOT NULL,
    state TEXT NOT NULL,
    submit REAL NOT NULL,
    start REAL,                     -- first start
    end REAL,
    reason TEXT NOT NULL DEFAULT '',
    price REAL,
    work_done REAL NOT NULL DEFAULT 0,
    suspended_at REAL,
    time_suspended REAL NOT NULL DEFAULT 0,
    preemptions INTEGER NOT NULL DEFAULT 0,
    suspensions INTEGER NOT NULL DEFAULT 0,
    starts INTEGER NOT NULL DEFAULT 0,   -- how many times its work was started afresh
    starting INTEGER NOT NULL DEFAULT 0, -- 1: a start is recorded, the backend has not taken it
    image_nodes TEXT NOT NULL DEFAULT '[]',
    plan TEXT NOT NULL DEFAULT '[]',      -- [{kind, start, end, vm_nodes}]
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS leases_state ON leases (state);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    lease_id INTEGER NOT NULL REFERENCES leases (id),
    time REAL NOT NULL,
    old TEXT,
    new TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS events_lease ON events (lease_id);
-- a client's idempotency key and the leases its first request created (written in the same
-- transaction as them: a crash leaves both or neither)
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY,
    body_hash TEXT NOT NULL,
    lease_ids TEXT NOT NULL,         -- JSON list
    single INTEGER NOT NULL,         -- answered with one view, not a list
    created REAL NOT NULL
);
"""

LEASE_COLUMNS = ("id", "request", "type", "state", "submit", "start", "end", "reason", "price",
                 "work_done", "suspended_at", "time_suspended", "preemptions", "suspensions",
                 "starts", "starting", "image_nodes", "plan", "updated")
#: what each older schema version needs to become the next one
MIGRATIONS = {
    1: ("ALTER TABLE leases ADD COLUMN starting INTEGER NOT NULL DEFAULT 0",),
}


def _num(x: float | None) -> float | None:
    """SQLite stores no infinities in JSON; None stands for 'never' / 'unlimited'."""
    return None if x is None or math.isinf(x) else x


def plan_of(lease: Lease) -> list[dict[str, Any]]:
    return [{"kind": r.kind, "start": _num(r.start), "end": _num(r.end),
             "vm_nodes": [int(n) for n in r.vm_nodes]} for r in lease.reservations]


class Store:
    """The daemon's SQLite database (``state-dir/leases.db``)."""

    def __init__(self, path: str | Path, *, sync: str = "full") -> None:
        self.path = Path(path)
        self.sync = sync
        #: changes wait for :meth:`commit` (see :meth:`group`)
        self._grouped = False
        #: a change in the group since the last commit other than a hand-over mark
        self._shown = False
        #: the id the next lease inserted gets (None: to be read from the table)
        self._next_id: int | None = None
        self._checkpoints: tuple[threading.Thread, threading.Event] | None = None
        self._local = threading.local()
        self.db = self._connect()
        self.db.executescript(SCHEMA)
        with self.transaction():
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)",
                            (str(SCHEMA_VERSION),))
        version = int(self.meta("schema") or 0)
        while version in MIGRATIONS:
            with self.transaction():
                for statement in MIGRATIONS[version]:
                    self.db.execute(statement)
                version += 1
                self.db.execute("UPDATE meta SET value = ? WHERE key = 'schema'",
                                (str(version),))
        if version != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"{self.path}: schema version {version}, this "
                                        f"lease-manager knows {SCHEMA_VERSION}")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction on the engine's connection. The connections are in
        autocommit mode (``isolation_level=None``), where ``with connection:`` groups nothing:
        without this, a crash between two statements of one change kept the first alone (a
        lease without its idempotency key, which a retry then created twice).

        In a group (:meth:`group`), the change is a savepoint of the group's transaction: it
        is still all or nothing, and durable at the next :meth:`commit`."""
        if self._grouped:
            if not self.db.in_transaction:
                self.db.execute("BEGIN IMMEDIATE")
            self._shown = True
            self.db.execute("SAVEPOINT change")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK TO change")
                self.db.execute("RELEASE change")
                raise
            self.db.execute("RELEASE change")
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _execute_change(self, sql: str, args: tuple[Any, ...], *, shown: bool = True) -> None:
        """A change of one statement: as ``with transaction(): execute(sql, args)``, but in a
        group without the savepoint around it. SQLite undoes a statement that fails as a
        whole (its statement journal), so the savepoint added nothing to it but two calls
        into SQLite, each letting go of the interpreter lock on the engine thread (a
        submission that starts at once makes three such changes). ``shown=False``: a change
        no answer shows (see :meth:`commit_shown`)."""
        if not self._grouped:
            with self.transaction():
                self.db.execute(sql, args)
            return
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
        self._shown = self._shown or shown
        self.db.execute(sql, args)

    def group(self) -> None:
        """From now on, changes accumulate in one transaction until :meth:`commit` (a group
        commit: a daemon's engine step commits once, not once a change). Whoever groups must
        call :meth:`commit` before anything that depends on a change leaves the process."""
        self._grouped = True

    def commit(self) -> None:
        """Make the grouped changes so far durable (nothing to do if there are none)."""
        if self.db.in_transaction:
            try:
                self.db.execute("COMMIT")
            except BaseException:
                self._next_id = None    # (what a failed commit kept is the table's to say)
                raise
        self._shown = False

    def commit_shown(self) -> None:
        """:meth:`commit`, unless the group's only changes since the last commit are
        hand-over marks (:meth:`handed_over`), which no answer shows: those wait for the next
        commit (a crash before it leaves the lease's row ``starting``, which a restart checks
        with the backend, as after a crash between a start and its mark). A step that starts
        leases answers after one commit then, not two (two fsyncs with ``sync = full``)."""
        if self._shown:
            self.commit()

    def ungroup(self) -> None:
        """:meth:`commit`, and each change is a transaction of its own again (if the commit
        fails, the group's changes are rolled back, and the error raised)."""
        self._grouped = False
        try:
            self.commit()
        except BaseException:
            self._shown = False
            self._next_id = None        # (the group's leases may be gone with it)
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                             timeout=30)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if self.sync == 'full' else 'NORMAL'}")
        db.execute("PRAGMA foreign_keys=ON")
        return db

    def checkpoint_in_background(self, interval: float = 1.0) -> None:
        """Copy the WAL back into the database every ``interval`` seconds from a thread of
        its own, instead of in the commit that fills it (SQLite's default, every 1,000 pages):
        that checkpoint, with its two fsyncs, stalled the engine 10 to 30 ms some 15 times in
        800 submissions. A commit is durable once in the WAL either way."""
        if self._checkpoints is not None:
            return
        self.db.execute(f"PRAGMA wal_autocheckpoint={ENGINE_AUTOCHECKPOINT}")
        stop = threading.Event()
        db = self._connect()

        def loop() -> None:
            try:
                while not stop.wait(interval):
                    try:
                        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    except sqlite3.Error as exc:   # the engine's own checkpoints remain
                        log.warning("%s: a checkpoint failed: %s", self.path, exc)
            finally:
                db.close()

        thread = threading.Thread(target=loop, name="lm-checkpoint", daemon=True)
        self._checkpoints = (thread, stop)
        thread.start()

    def reader(self) -> sqlite3.Connection:
        """A connection for the calling thread (API threads read through their own)."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    def close(self) -> None:
        if self._checkpoints is not None:
            thread, stop = self._checkpoints
            stop.set()
            thread.join()
            self._checkpoints = None
        self.db.close()

    # ------------------------------------------------------------------------------ meta
    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        self._execute_change("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # ------------------------------------------------------------------- idempotency keys
    def recall_key(self, key: str, db: sqlite3.Connection | None = None
                   ) -> tuple[str, list[int], bool] | None:
        """``(body hash, lease ids, single)`` of a key whose request was carried out (None if
        the key is unknown; the key and its leases are written in one transaction, and the
        leases' presence is checked all the same)."""
        db = db or self.db
        row = db.execute("SELECT body_hash, lease_ids, single FROM idempotency WHERE key = ?",
                         (key,)).fetchone()
        if row is None:
            return None
        ids = json.loads(row[1])
        found = db.execute(f"SELECT COUNT(*) FROM leases WHERE id IN "
                           f"({','.join('?' * len(ids))})", ids).fetchone()[0]
        if found != len(ids):
            return None
        return row[0], ids, bool(row[2])

    # ---------------------------------------------------------------------------- writes
    def next_id(self) -> int:
        """The id the next lease inserted gets: read from the table once, then kept by
        :meth:`insert` (the engine's connection is the only writer), which saves a query, a
        release of the interpreter lock on the engine thread, a submission."""
        if self._next_id is None:
            row = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM leases").fetchone()
            self._next_id = int(row[0]) + 1
        return self._next_id

    def insert(self, leases: list[tuple[Lease, dict[str, Any]]], now: float, *,
               key: tuple[str, str, bool] | None = None) -> None:
        """Record new leases with their requests, before the scheduler sees them, and the
        idempotency ``key`` (key, body hash, single) that creates them: one transaction."""
        with self.transaction():
            for lease, request in leases:
                self.db.execute(
                    "INSERT INTO leases (id, request, type, state, submit, updated) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (lease.id, json.dumps(request, sort_keys=True), lease.type.value,
                     lease.state.value, lease.submit, now))
                self.db.execute("INSERT INTO events (lease_id, time, old, new, detail) "
                                "VALUES (?, ?, NULL, ?, 'submitted')",
                                (lease.id, now, lease.state.value))
            if key is not None:
                name, body_hash, single = key
                self.db.execute("INSERT OR REPLACE INTO idempotency VALUES (?, ?, ?, ?, ?)",
                                (name, body_hash, json.dumps([lease.id for lease, _ in leases]),
                                 int(single), now))
        if leases and self._next_id is not None:
            self._next_id = max(self._next_id, max(lease.id for lease, _ in leases) + 1)

    def update(self, lease: Lease, now: float, *, old: str | None = None,
               detail: str = "", started: bool = False) -> None:
        """Write where ``lease`` stands now; with ``old``, also log the state change. With
        ``started``, its work starts afresh: the row counts the start and is marked
        ``starting`` until :meth:`handed_over` says the backend took the work."""
        row = ("UPDATE leases SET state = ?, start = ?, end = ?, reason = ?, price = ?, "
               "work_done = ?, suspended_at = ?, time_suspended = ?, preemptions = ?, "
               "suspensions = ?, starts = starts + ?, starting = MAX(starting, ?), "
               "image_nodes = ?, plan = ?, updated = ? WHERE id = ?",
               (lease.state.value, lease.start, lease.end, lease.reason, lease.price,
                lease.work_done, lease.suspended_at, lease.time_suspended, lease.preemptions,
                lease.suspensions, int(started), int(started),
                json.dumps(list(lease.image_nodes)), json.dumps(plan_of(lease)), now,
                lease.id))
        if old is None:
            self._execute_change(*row)
            return
        with self.transaction():
            self.db.execute(*row)
            self.db.execute("INSERT INTO events (lease_id, time, old, new, detail) "
                            "VALUES (?, ?, ?, ?, ?)",
                            (lease.id, now, old, lease.state.value, detail or lease.reason))

    def handed_over(self, lease_id: int) -> None:
        """The backend took the work of the lease's recorded start (a mark no answer shows:
        :meth:`commit_shown`)."""
        self._execute_change("UPDATE leases SET starting = 0 WHERE id = ? AND starting = 1",
                             (lease_id,), shown=False)

    def unstart(self, lease_id: int, now: float) -> None:
        """Take back a recorded start whose work the backend never got (the daemon stopped in
        between): it is not counted, and a lease that never ran has no start time."""
        self._execute_change("UPDATE leases SET starts = MAX(starts - 1, 0), starting = 0, "
                             "start = CASE WHEN starts <= 1 THEN NULL ELSE start END, "
                             "updated = ? WHERE id = ?", (now, lease_id))

    def end(self, lease_id: int, old: str, state: str, reason: str, now: float) -> None:
        """Put a lease the scheduler no longer holds in a final state (its work ended while
        the daemon was down)."""
        with self.transaction():
            self.db.execute("UPDATE leases SET state = ?, end = ?, reason = ?, updated = ? "
                            "WHERE id = ?", (state, now, reason, now, lease_id))
            self.db.execute("INSERT INTO events (lease_id, time, old, new, detail) "
                            "VALUES (?, ?, ?, ?, ?)", (lease_id, now, old, state, reason))

    def log(self, lease_id: int, now: float, state: str, detail: str) -> None:
        """Log something that happened to a lease without a change of state."""
        self._execute_change("INSERT INTO events (lease_id, time, old, new, detail) "
                             "VALUES (?, ?, ?, ?, ?)", (lease_id, now, state, state, detail))

    # ----------------------------------------------------------------------------- reads
    def unfinished(self) -> Iterator[sqlite3.Row]:
        """Rows of leases not in a final state, in id (submission) order."""
        return iter(self.db.execute(
            "SELECT * FROM leases WHERE state NOT IN ('done', 'rejected', 'cancelled', 'failed') "
            "ORDER BY id").fetchall())

    def lease(self, lease_id: int, db: sqlite3.Connection | None = None
              ) -> sqlite3.Row | None:
        """The lease's row, through the calling thread's reader (committed changes only)
        unless ``db`` is given."""
        return (db or self.reader()).execute("SELECT * FROM leases WHERE id = ?",
                                     (lease_id,)).fetchone()

    def leases(self, states: tuple[str, ...] = (), limit: int = 1000,
               after: int = 0) -> list[sqlite3.Row]:
        sql = "SELECT * FROM leases WHERE id > ?"
        args: list[Any] = [after]
        if states:
            sql += f" AND state IN ({', '.join('?' * len(states))})"
            args += states
        sql += " ORDER BY id LIMIT ?"
        args.append(limit)
        return self.reader().execute(sql, args).fetchall()

    def events(self, lease_id: int) -> list[sqlite3.Row]:
        return self.reader().execute("SELECT * FROM events WHERE lease_id = ? ORDER BY seq",
                                     (lease_id,)).fetchall()

    def counts(self) -> dict[str, int]:
        return {row[0]: row[1] for row in self.reader().execute(
            "SELECT state, COUNT(*) FROM leases GROUP BY state")}
