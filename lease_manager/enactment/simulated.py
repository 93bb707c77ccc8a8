"""The ``simulated`` backend: runs nothing, remembers what it was told (for tests and demos).

Each lease's work "runs" until it is stopped. The work it was told to run (or suspend) is kept
in its state folder, so that a restarted daemon finds running work running, as with a real
backend; planned work is only remembered in memory. The folder holds ``state.json`` (lease id:
state) and ``state.log``, one JSON line ``[lease id, state or null]`` a change since: a change
is one append, where rewriting and renaming the whole file took 4 ms (12 ms at p99) on a busy
disk, on the engine thread, for every start. The log is folded into ``state.json`` when it
gets long and when the daemon stops.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from lease_manager.enactment.base import EnactmentBackend, EnactmentError
from lease_manager.hookspecs import hookimpl

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.enactment.work import Work, WorkStatus


#: the states of work kept in the state file
DURABLE = ("running", "suspended")
#: ``state.log`` is folded into ``state.json`` past this many lines
FOLD_AFTER = 10_000


class SimulatedBackend(EnactmentBackend):
    """Runs nothing: each lease's work holds its resources until the lease ends."""

    name = "simulated"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self._file = self.state_dir() / "state.json"
        self._changes = self._file.with_name("state.log")
        self._fd: int | None = None       # state.log, open to append
        self._logged = 0
        self.states: dict[int, str] = {}
        if self._file.exists():
            self.states = {int(k): v for k, v in json.loads(self._file.read_text()).items()}
        if self._changes.exists():     # the daemon stopped without folding them in
            for line in self._changes.read_text().splitlines():
                try:
                    lease_id, state = json.loads(line)
                except ValueError:     # a line cut short (a crash of the machine)
                    continue
                if state is None:
                    self.states.pop(int(lease_id), None)
                else:
                    self.states[int(lease_id)] = state
        self._fold()
        #: every action, in order: ``(action, lease_id)`` (what tests look at)
        self.log: list[tuple[str, int]] = []

    def _set(self, action: str, lease_id: int, state: str | None) -> None:
        self.log.append((action, lease_id))
        before = self.states.get(lease_id)
        if state is None:
            self.states.pop(lease_id, None)
        else:
            self.states[lease_id] = state
        # only work that "runs" must survive a restart (a restarted daemon prepares planned
        # leases again); writing the file for every planned lease made a restore with
        # thousands of them quadratic
        if before not in DURABLE and state not in DURABLE:
            return
        assert self._fd is not None, "the backend is closed"
        os.write(self._fd, (json.dumps([lease_id, state if state in DURABLE else None])
                            + "\n").encode())
        self._logged += 1
        if self._logged > FOLD_AFTER:
            self._fold()

    def _fold(self) -> None:
        """Write the durable states to ``state.json`` (atomically), then empty the log. A
        crash in between replays the log over the new file, which gives the same states."""
        durable = {k: v for k, v in self.states.items() if v in DURABLE}
        tmp = self._file.with_suffix(".tmp")
        tmp.write_text(json.dumps(durable))
        os.replace(tmp, self._file)
        if self._fd is None:
            self._fd = os.open(self._changes, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.ftruncate(self._fd, 0)
        self._logged = 0

    def close(self) -> None:
        """Fold the log into ``state.json``: a stopped daemon's state is that one file."""
        if self._fd is not None:
            self._fold()
            os.close(self._fd)
            self._fd = None
            self._changes.unlink(missing_ok=True)

    def prepare(self, work: Work) -> None:
        if self.states.get(work.lease_id) in (None, "planned"):
            self._set("prepare", work.lease_id, "planned")

    def start(self, work: Work) -> None:
        self._set("start", work.lease_id, "running")

    def suspend(self, lease_id: int) -> None:
        if self.states.get(lease_id) != "running":
            raise EnactmentError(f"lease {lease_id} has no running work to suspend")
        self._set("suspend", lease_id, "suspended")

    def resume(self, lease_id: int) -> None:
        if self.states.get(lease_id) != "suspended":
            raise EnactmentError(f"lease {lease_id} has no suspended work to resume")
        self._set("resume", lease_id, "running")

    def resize(self, work: Work) -> None:
        if self.states.get(work.lease_id) != "running":
            raise EnactmentError(f"lease {work.lease_id} has no running work to resize")
        self._set("resize", work.lease_id, "running")

    def stop(self, lease_id: int) -> None:
        if lease_id in self.states:
            self._set("stop", lease_id, None)

    def known_leases(self) -> list[int]:
        return list(self.states)

    def status(self, lease_id: int) -> WorkStatus:
        from lease_manager.enactment.work import WorkStatus

        return WorkStatus(self.states.get(lease_id, "absent"))


@hookimpl
def register_policies():
    return [SimulatedBackend]
