"""What a backend is told to run (:class:`Work`, one :class:`VMWork` per VM) and what it
says it sees (:class:`WorkStatus`). Loaded with the first backend action, not at start-up
(``lease_manager.enactment.base`` hands these names out too)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs


@attrs.frozen
class VMWork:
    """One VM of a lease, placed on a node of the site."""

    index: int          #: the VM's index within the lease (groups in order)
    node: int           #: the site node it runs on (0-based)
    node_name: str      #: that node's name for the backend (a Slurm node name, say)
    cpu: float          #: the VM's CPU amount, in the site's units (0 if the site has no CPU)
    memory: float       #: the VM's memory in MB (0 if the site has no Memory)


@attrs.frozen
class Work:
    """What a backend must run for one lease over one stretch of its plan."""

    lease_id: int
    #: shell command each VM runs (``/bin/sh -c``); empty: the VMs just hold their resources
    command: str
    vms: tuple[VMWork, ...]
    start: float        #: when this stretch starts
    end: float          #: when its reservation ends: the work is stopped then at the latest
    #: extra environment for the command (the daemon adds ``LM_LEASE_ID`` and friends)
    env: Mapping[str, str] = attrs.field(factory=dict)
    #: the folder the command runs in (checked by the daemon when the lease was requested);
    #: None: the backend's own folder for the VM
    workdir: str | None = None


#: what a backend can say about a lease's work
WORK_STATES = ("absent", "planned", "running", "suspended", "exited", "vanished")


@attrs.frozen
class WorkStatus:
    """What a backend really sees of a lease's work.

    ``absent``: it knows nothing of the lease (never started, or stopped and cleaned up);
    ``planned``: prepared, not started; ``running``; ``suspended``; ``exited``: every VM's
    command ended (``exit_code`` is the first non-zero code, else 0); ``vanished``: the work
    was there and is gone without an exit code (killed behind the daemon's back).
    """

    state: str
    exit_code: int | None = None
    detail: str = ""

    def __attrs_post_init__(self) -> None:
        if self.state not in WORK_STATES:
            raise ValueError(f"unknown work state {self.state!r}")
