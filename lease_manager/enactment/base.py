"""The interface every enactment backend implements.

A backend is a policy of kind ``enactment``: a class with a ``name``, instantiated as
``cls(ctx)`` with the run's :class:`~lease_manager.context.RunContext` (it reads ``ctx.config``
and ``ctx.site``). All its methods are called from the daemon's engine thread. A backend must
be able to find the work of a lease again after the daemon restarts (from names it derives
from the lease id, or from files under :meth:`EnactmentBackend.state_dir`), because the daemon
may be killed at any moment.

Times are seconds since the Unix epoch, UTC, on the daemon's clock.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, overload

from lease_manager.errors import LeaseManagerError

if TYPE_CHECKING:
    import logging

    from lease_manager.context import RunContext
    from lease_manager.enactment.run_as import RunAs
    from lease_manager.enactment.work import WORK_STATES as WORK_STATES
    from lease_manager.enactment.work import VMWork as VMWork
    from lease_manager.enactment.work import Work as Work
    from lease_manager.enactment.work import WorkStatus as WorkStatus

#: the values a backend is told and tells (attrs classes, made when first asked for: their
#: methods are generated at import, ~3 M instructions each, which a replay does not need)
_WORK_NAMES = ("VMWork", "Work", "WorkStatus", "WORK_STATES")


def __getattr__(name: str) -> object:
    if name in _WORK_NAMES:
        from lease_manager.enactment import work

        return getattr(work, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _log() -> logging.Logger:
    """The daemon's logger (logging is loaded when a message is written: start-up)."""
    import logging

    return logging.getLogger("lease_manager.daemon")


class EnactmentError(LeaseManagerError):
    """A backend could not carry out an action; the lease concerned is marked failed with
    this message as its reason."""


class EnactmentBackend:
    """Base class of the backends (subclassing it is optional; the methods are the protocol)."""

    kind: ClassVar[str] = "enactment"
    name: ClassVar[str] = ""
    #: whether a lease's work can stay suspended while another lease uses its resources (the
    #: scheduler suspends leases to make room for advance reservations); a backend that
    #: cannot makes the daemon refuse ``[scheduling] suspension`` other than ``none``
    can_suspend: ClassVar[bool] = True

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def state_dir(self) -> Path:
        """A folder of the backend's own under the daemon's state directory (created)."""
        path = Path(self.ctx.config.get("daemon", "state-dir")) / "enactment" / self.name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def work_root(self) -> Path:
        """The folder under which a lease that names no ``workdir`` gets a folder of its own
        (``[daemon] work-root``; by default ``STATE-DIR-work`` beside the state folder). It
        never lies inside the state folder, nor holds it: a command must not reach the
        daemon's token or database through relative paths from where it runs."""
        state = Path(self.ctx.config.get("daemon", "state-dir")).resolve()
        configured = self.ctx.config.get("daemon", "work-root")
        root = (Path(configured) if configured else state.with_name(state.name + "-work")).resolve()
        if root == state or state in root.parents or root in state.parents:
            raise EnactmentError(f"[daemon] work-root {root} is inside the state folder {state} "
                                 "or holds it; commands must run outside the state folder")
        return root

    def lease_work_dir(self, work: Work, vm: VMWork | None = None,
                       owner: RunAs | None = None) -> Path:
        """Where ``work``'s command runs: its ``workdir``, else ``WORK-ROOT/lease-<id>``
        (``/vm-<index>`` per VM when ``vm`` is given), created with mode 0700 and, when the
        command runs as ``owner``, given to that user (the work root then lets others
        enter it, not list it). Refuses a folder inside the daemon's state folder."""
        state = Path(self.ctx.config.get("daemon", "state-dir")).resolve()
        if work.workdir:
            folder = Path(work.workdir).resolve()
        else:
            root = self.work_root()
            folder = root / f"lease-{work.lease_id}"
            try:
                root.mkdir(mode=0o700, parents=True, exist_ok=True)
                made = [folder]
                folder.mkdir(mode=0o700, exist_ok=True)
                if vm is not None:
                    folder = folder / f"vm-{vm.index}"
                    folder.mkdir(mode=0o700, exist_ok=True)
                    made.append(folder)
                if owner is not None:
                    mode = root.stat().st_mode & 0o7777
                    if mode & 0o011 != 0o011:
                        root.chmod(mode | 0o011)
                    for path in made:
                        os.chown(path, owner.uid, owner.gid)
            except OSError as exc:
                raise EnactmentError(f"cannot create the working folder {folder} of lease "
                                     f"{work.lease_id}: {exc.strerror}") from None
        if folder == state or state in folder.parents:
            raise EnactmentError(f"lease {work.lease_id}: its working folder {folder} is inside "
                                 "the daemon's state folder, which holds its token and database")
        return folder

    def prepare(self, work: Work) -> None:
        """The lease got a plan, or its plan changed, before it starts (``work.start`` is in
        the future). A backend that books resources ahead (a Slurm reservation) does it here;
        it may be called several times for one lease, each call replacing the last."""

    def start(self, work: Work) -> None:
        """Start the lease's work now, on ``work.vms``; raise :class:`EnactmentError` if it
        cannot be started."""
        raise NotImplementedError

    def suspend(self, lease_id: int) -> None:
        """Pause the lease's running work (it keeps its memory)."""
        raise NotImplementedError

    def resume(self, lease_id: int) -> None:
        """Continue the lease's suspended work."""
        raise NotImplementedError

    def resize(self, work: Work) -> None:
        """A running malleable lease's work goes on, from now, on ``work.vms`` (VMs added,
        removed or moved to other nodes; ``work.end`` is its new latest end). Backends that
        cannot change running work refuse with :class:`EnactmentError`, which fails the
        lease."""
        raise EnactmentError(f"the {self.name} backend cannot resize a running lease")

    def stop(self, lease_id: int) -> None:
        """End the lease's work and release whatever the backend holds for it (processes,
        reservations). Idempotent: stopping an absent lease does nothing. Also called when a
        lease that never started gives up its plan, to release what :meth:`prepare` booked."""
        raise NotImplementedError

    def power_off(self, node_name: str) -> None:
        """Switch node ``node_name`` off (with a ``[power]`` model whose node-power policy
        switches nodes off). The default only logs it."""
        _log().info("node %s: switched off (the %s backend cannot switch nodes off)", node_name,
                 self.name)

    def power_on(self, node_name: str) -> None:
        """Switch node ``node_name`` on: a lease is planned on it once its boot time is
        over. The default only logs it."""
        _log().info("node %s: switched on (the %s backend cannot switch nodes on)", node_name,
                 self.name)

    def refresh(self) -> None:
        """Called before each round of :meth:`status` calls of the reconciliation loop (a
        backend may query its system once here and answer ``status`` from that)."""

    def status(self, lease_id: int) -> WorkStatus:
        """What the backend really sees of the lease's work now."""
        raise NotImplementedError

    def known_leases(self) -> list[int]:
        """Ids of the leases the backend holds work or bookings for (a restarted daemon
        stops those of leases that are over)."""
        return []

    def log_files(self, lease_id: int, vms: int) -> list[dict[str, str]]:
        """Where the output and the errors of the lease's ``vms`` VMs go, for ``show-lease``:
        ``[{"vm": "0", "out": PATH, "err": PATH}, ...]`` (``"vm": "all"`` when they share
        files); empty when the backend keeps none."""
        return []

    def close(self) -> None:
        """The daemon stops: release the backend's own resources, but leave the leases' work
        as it is (a restarted daemon finds it again)."""


class NumberedNodes(Sequence[str]):
    """``node-1`` ... ``node-N``, made when asked for: a tuple of a million such names was
    73 MB of the daemon's memory on a million-node site."""

    def __init__(self, count: int) -> None:
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [f"node-{i + 1}" for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("node index out of range")
        return f"node-{index + 1}"


def node_names(ctx: RunContext, configured: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The backend's name of every site node: ``configured`` if given (one per node), else
    ``node-1`` ... ``node-N``."""
    count = len(ctx.site.capacity)
    if configured:
        if len(configured) != count:
            raise EnactmentError(f"{len(configured)} node names are configured for a site of "
                                 f"{count} nodes")
        return tuple(configured)
    return tuple(f"node-{i + 1}" for i in range(count))


#: what a lease's command keeps of the daemon's environment: where programs are, the user's
#: account and the locale; nothing else (the daemon's token, above all, stays with the daemon)
KEPT_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "TZ")


def clean_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` a lease's command may see (:data:`KEPT_ENV`)."""
    return {name: environ[name] for name in KEPT_ENV if name in environ}


def work_env(work: Work, vm: VMWork) -> dict[str, str]:
    """The environment variables a VM's command gets (besides ``work.env``)."""
    return {**work.env, "LM_LEASE_ID": str(work.lease_id), "LM_VM_INDEX": str(vm.index),
            "LM_NODE": vm.node_name, "LM_LEASE_END": f"{work.end:.3f}"}
