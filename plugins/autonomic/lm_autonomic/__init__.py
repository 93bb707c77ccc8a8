"""lm_autonomic: autonomic energy-efficient scheduling for lease_manager.

Chapter 7 of Sheikhalishahi's thesis as a lease_manager plugin (entry point ``autonomic`` in
the ``lease_manager`` group), on top of ``lm_consolidation`` (chapters 5-6):

- queue policy ``autonomic`` (:mod:`.policy`): the Prepending state, inequalities 7.1-7.3 and
  the monitoring structures of section 7.2 (:mod:`.monitoring`), selected with
  ``[scheduling] policy-queue = autonomic``;
- ``lm-thesis-ch7`` (:mod:`.ch7`): the chapter-7 experiment (Tables 7.2-7.5) in one command.

Options live in the ``[autonomic]`` section.
"""

from __future__ import annotations

__version__ = "0.1.0"

from lease_manager import NAMES, STRING, Option, hookimpl

from .monitoring import JobRecord, Monitor, MonitoredJobs, MonitoringData, ScheduledMonitoringData
from .policy import AutonomicQueue

__all__ = ["__version__", "AutonomicQueue", "Monitor", "MonitoringData",
           "ScheduledMonitoringData", "MonitoredJobs", "JobRecord"]


@hookimpl
def register_policies():
    return [AutonomicQueue]


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
    ]
