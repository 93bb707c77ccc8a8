"""lm_greenpower: scheduling under a green power envelope with machines switched on and off
(Kassab et al., ISPA 2019).

A lease_manager plugin (entry point ``greenpower`` in the ``lease_manager`` group):

- planners (the core's kind ``planner``, offline): the list heuristics ``lpt``, ``spt``,
  ``lpn``, ``lptpn``, ``twoqs``, ``lpp``, ``random``; binary search ``bs-*``; ``stripe-*``;
  the genetic algorithm ``ga`` (:mod:`.planners`, orders in :mod:`.orders`);
- the same orders as queue policies, online (:mod:`.queues`);
- the annotator ``green-tasks``: hyper-gamma or exponential lengths, uniform powers, from the
  run's seed (:mod:`.workload`);
- ``lm-green-envelope``: envelopes from pvlib's TMY3 weather (:mod:`.envelope`);
- ``lm-kassab-figures``: the paper's figures and tables from a sweep (:mod:`.figures`).

Options live in the ``[greenpower]`` section.
"""

from __future__ import annotations

__version__ = "0.1.0"

from lease_manager import FLOAT, INTEGER, STRING, Option, hookimpl

from .planners import PLANNER_NAMES, PLANNERS
from .queues import QUEUES
from .workload import GreenTasks

__all__ = ["__version__", "PLANNERS", "PLANNER_NAMES", "QUEUES", "GreenTasks"]


@hookimpl
def register_policies():
    return [*PLANNERS, *QUEUES, GreenTasks]


@hookimpl
def register_options():
    return [
        Option("greenpower", "lengths", STRING, "trace",
               choices=("trace", "hyper-gamma", "exponential"), doc="""
            Annotator `green-tasks`: each lease's length, in intervals of `[planning]
            interval`: the workload's own (`trace`), Lublin and Feitelson's hyper-gamma model
            (Kassab et al.'s first experiment) or exponential of mean `max-length` / 2 (their
            second)."""),
        Option("greenpower", "max-length", INTEGER, 500, minimum=1, maximum=10_000_000, doc="""
            Annotator `green-tasks`: lengths stay below this many intervals (hyper-gamma)
            or at most this many (exponential: Kassab et al.'s p_max)."""),
        Option("greenpower", "watts", STRING, "trace", choices=("trace", "uniform"), doc="""
            Annotator `green-tasks`: each lease's own power per VM: the workload's (`trace`)
            or a uniform whole number of watts in [`min-watts`, `max-watts`]."""),
        Option("greenpower", "min-watts", FLOAT, 1.0, minimum=0, maximum=1e9, doc="""
            Annotator `green-tasks`: the least power a task draws (Kassab et al.: 1)."""),
        Option("greenpower", "max-watts", FLOAT, 150.0, minimum=0, maximum=1e9, doc="""
            Annotator `green-tasks`: the most power a task draws (Kassab et al.'s phi_max,
            15 to 150)."""),
        Option("greenpower", "ga-population", INTEGER, 50, minimum=5, maximum=100_000, doc="""
            Planner `ga`: individuals kept from one generation to the next (Kassab et al.:
            50, of which the LPTPN, TwoQs, LPT, LPN and LPP orders at the start)."""),
        Option("greenpower", "ga-patience", INTEGER, 25, minimum=1, maximum=100_000, doc="""
            Planner `ga`: stop after this many generations without a shorter makespan
            (Kassab et al.: 25)."""),
    ]
