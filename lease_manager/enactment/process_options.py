"""The options of the ``process`` enactment backend (section ``[process]``)."""

from __future__ import annotations

from lease_manager.config.schema import DURATION, FLOAT, STRING, Option


def process_options() -> list[Option]:
    """The ``[process]`` options."""
    return [
        Option("process", "cgroups", STRING, "auto", choices=("auto", "v2", "v1", "none"), doc="""
            Whether the `process` backend puts each VM in cgroups of its own, for its CPU limit
            and for suspension (the freezer). `auto`: cgroup v2 if the cgroup root is v2, else
            v1 if its `cpu` and `freezer` hierarchies are mounted and writable, else none (with
            a warning); `v2`/`v1`: that version, or an error if it cannot be used; `none`: no
            CPU limit, and suspension with SIGSTOP/SIGCONT."""),
        Option("process", "cpu-per-core", FLOAT, 1.0, minimum=1e-9, maximum=1e12, doc="""
            How much of the site's CPU resource one core of this machine is: a VM's CPU limit
            is its CPU amount divided by this, in cores (100 if the site counts CPU in
            percents). A VM of 0 CPU has no limit."""),
        Option("process", "stop-grace", DURATION, 2.0, maximum=86400, doc="""
            Time between the SIGTERM that stops a VM's processes and the SIGKILL that ends
            those still there."""),
        Option("process", "shell", STRING, "/bin/sh", doc="""
            Shell that runs the leases' commands (`shell -c command`)."""),
        Option("process", "run-as", STRING, "", doc="""
            User (a name or a numeric id) the leases' commands run as, with its own group and
            the groups it belongs to; empty: the daemon's user, whose commands can read the
            daemon's API token. Needs a daemon running as root; a user that does not exist,
            the daemon's own user, or one that owns the state folder or the token is refused
            at start. The command's `HOME`, `USER` and `LOGNAME` are that user's, and the
            folders the daemon makes for it under `[daemon] work-root` are given to it (the
            work root is made enterable, not readable, by others). A lease's own `workdir`
            must be usable by that user. Only the command changes user: the wrapper that
            records its exit status in the state folder stays the daemon's."""),
    ]
