"""The options of the ``slurm`` enactment backend (section ``[slurm]``)."""

from __future__ import annotations

from lease_manager.config.schema import BOOLEAN, FLOAT, NAMES, PATH, STRING, Option


def slurm_options() -> list[Option]:
    """The ``[slurm]`` options."""
    return [
        Option("slurm", "nodes", NAMES, (), doc="""
            The Slurm node name of each site node, in order (as many as `[simulation]
            resources` has nodes). Empty: the first nodes `sinfo` lists (of `partition`, if
            set), in Slurm's order."""),
        Option("slurm", "partition", STRING, "", doc="""
            Partition of the reservations and jobs. Empty: Slurm's default partition."""),
        Option("slurm", "user", STRING, "", doc="""
            The user allowed into the reservations (`Users=`): the user the jobs are submitted
            as. Empty: the daemon's user."""),
        Option("slurm", "account", STRING, "", doc="""
            Account of the reservations (`Accounts=`) and jobs (`--account`). Empty: none."""),
        Option("slurm", "cpu-unit", FLOAT, 1.0, minimum=1e-9, maximum=1e12, doc="""
            The site's `CPU` amount that is one Slurm core (100 for Haizea-style `CPU:100`
            sites). Each VM gets its CPU amount in cores, rounded up, at least one."""),
        Option("slurm", "request-memory", BOOLEAN, False, doc="""
            Ask for each VM's `Memory` (MB) with `--mem` (for sites with
            `SelectTypeParameters=CR_*_Memory`; reservations hold cores only)."""),
        Option("slurm", "job-dir", PATH, "", doc="""
            Folder of the batch jobs' scripts, output (`lm-<lease>.<job>.out`) and exit-code
            files. It must be at the same path on the daemon's machine and the Slurm nodes
            (a shared file system), or exit codes are lost once Slurm forgets a job. Empty:
            the backend's folder under `[daemon] state-dir`."""),
        Option("slurm", "name-prefix", STRING, "lm-", doc="""
            Prefix of the reservation and job names (`lm-<lease id>`): give each daemon
            sharing one Slurm cluster its own."""),
        Option("slurm", "commands-timeout", FLOAT, 30.0, minimum=0.1, maximum=86400, doc="""
            Seconds a Slurm command (scontrol, sbatch, squeue, scancel, sinfo) may take
            before the action fails."""),
        Option("slurm", "bin-dir", PATH, "", doc="""
            Folder of the Slurm commands. Empty: found on `PATH`."""),
    ]
