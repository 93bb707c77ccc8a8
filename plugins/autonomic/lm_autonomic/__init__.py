"""lm_autonomic: autonomic energy-efficient scheduling for lease_manager.

Chapter 7 of Sheikhalishahi's thesis as a lease_manager plugin (entry point ``autonomic`` in
the ``lease_manager`` group), on top of ``lm_consolidation`` (chapters 5-6):

- queue policy ``autonomic`` (:mod:`.policy`): the Prepending state, inequalities 7.1-7.3 and
  the monitoring structures of section 7.2 (:mod:`.monitoring`), selected with
  ``[scheduling] policy-queue = autonomic``; the readings of the text it leaves open are
  ``[autonomic]`` options;
- admission policy ``autonomic-unsatisfiable``: rejects a lease that 7.1-7.3 can never admit;
- ``lm-thesis-ch7`` (:mod:`.ch7`): the chapter-7 experiment (Tables 7.2-7.5) in one command.

Options live in the ``[autonomic]`` section.
"""

from __future__ import annotations

__version__ = "0.1.0"

from lease_manager import BOOLEAN, NAMES, STRING, Option, hookimpl

from .monitoring import (
    UTIL_READINGS,
    JobRecord,
    Monitor,
    MonitoredJobs,
    MonitoringData,
    ScheduledMonitoringData,
)
from .policy import AutonomicQueue, NeverSatisfiable

__all__ = ["__version__", "AutonomicQueue", "Monitor", "MonitoringData",
           "ScheduledMonitoringData", "MonitoredJobs", "JobRecord"]


@hookimpl
def register_policies():
    return [AutonomicQueue, NeverSatisfiable]


@hookimpl
def register_options():
    return [
        Option("autonomic", "inequality-7-2", STRING, "as-written",
               choices=("as-written", "exclude-arrival"), doc="""
            Queue policy `autonomic`: how inequality 7.2 (MonitoringData + JobResReqs <=
            Total) is evaluated. `as-written`: after step 2 of section 7.3.1, so
            MonitoringData already holds the arriving lease and its requirements count twice
            (the thesis' order of steps); `exclude-arrival`: the arriving lease is taken out
            of MonitoringData first. The thesis has no other thresholds: 7.1 compares with 1
            and 7.2/7.3 with the site's total capacity of each stress-on resource."""),
        Option("autonomic", "full-resources", NAMES, ("CPU", "Memory"), doc="""
            Queue policy `autonomic`: a host is full at the end of a scheduling cycle when it
            has no free capacity of one of these resource types (section 7.3.2: CPU or
            Memory); its leases' parts then stop counting in the monitoring data until it is
            not full. Types the site does not have are ignored."""),
        Option("autonomic", "full-host-discount", BOOLEAN, True, doc="""
            Queue policy `autonomic`: whether the end of a cycle discounts full hosts (section
            7.3.2: the parts of the leases mapped on a host with no free CPU or Memory stop
            counting in MonitoringData and ScheduledMonitoringData). `no`: every lease counts
            its whole requirements while it is in the system."""),
        Option("autonomic", "util", STRING, "running", choices=UTIL_READINGS, doc="""
            Queue policy `autonomic`: what Util[r] of inequality 7.1 measures, over Total[r].
            `running`: the requirements of r of the running leases that stress r (the
            "current system utilization based on stress-on resource types consumption");
            `site`: what all running leases hold of r, whether they stress it or not (the
            site's utilisation of r; for CPU and Memory what the slot table holds);
            `monitoring`: MonitoringData[r] (section 7.2 calls it "the current consumption";
            with it 7.1 is 7.2 as written)."""),
        Option("autonomic", "requirements", STRING, "lease", choices=("lease", "vm"), doc="""
            Queue policy `autonomic`: JobResourceRequirements (7.3.1 step 1) of a lease. `lease`:
            over all its VMs (its VMs' CPU and Memory, its per-VM IO/Net amounts x its VMs);
            `vm`: one VM's worth (Haizea describes a lease's resources per VM); a host's part
            is then that times the share of the lease's VMs on it."""),
        Option("autonomic", "unmapped-demand", STRING, "full", choices=("full", "none"),
               doc="""
            Queue policy `autonomic`: whether a lease that is not mapped yet (held, or waiting
            without a reservation) counts in MonitoringData and ScheduledMonitoringData.
            `full`: at its whole requirements from its arrival (steps 2 and 5 of 7.3.1 as
            written); `none`: only from its mapping (7.3.3) on, so that both count what is
            scheduled on the hosts (the arriving or held lease is still added by 7.1-7.3)."""),
    ]
