"""lm_greenpar: green-energy-driven malleable leases (GreenPar: Haque, Goiri, Bianchini and
Nguyen, ICS 2015).

A lease_manager plugin (entry point ``greenpar``):

- allocation policies (``[malleable] policy-allocation``): ``baseline``, ``reactive``,
  ``nebulous`` (:mod:`.heuristics`), ``aggressive`` and ``offline`` (:mod:`.optimizing`, the
  MILP of Fig. 3 in :mod:`.milp`);
- the annotator ``greenpar-apps`` (:mod:`.apps`): trace jobs to NPB applications and server
  counts;
- the probe ``greenpar-accounting`` (:mod:`.accounting`): run times, SLA, VMs, resizes, and
  each policy's solver time;
- speedup profiles (:mod:`.speedups`, ``data/speedups.csv``), solar series from pvlib's TMY3
  data (:mod:`.solar`, ``lm-greenpar-solar``) and ``lm-greenpar-figures`` (:mod:`.figures`).

Options live in the ``[greenpar]`` section.
"""

from __future__ import annotations

__version__ = "0.1.0"

import math

from lease_manager import (
    BOOLEAN,
    DURATION,
    FLOAT,
    INTEGER,
    MAX_SECONDS,
    PATH,
    STRING,
    Option,
    OptionType,
    hookimpl,
)

from .accounting import GreenParAccounting
from .apps import GreenParApps
from .heuristics import Baseline, Nebulous, Reactive
from .optimizing import Aggressive, Offline
from .speedups import SpeedupProfiles

#: the largest node limit (HiGHS' ``mip_max_nodes`` is a 32-bit integer: at most 2**31 - 1)
MAX_NODE_LIMIT = 10**9
#: Aggressive's default node limit (see the option's doc and the README)
SOLVE_NODE_LIMIT = 5_000
#: Offline's default node limit (see the option's doc and the README)
OFFLINE_NODE_LIMIT = 1_000

__all__ = ["__version__", "Baseline", "Reactive", "Nebulous", "Aggressive", "Offline",
           "GreenParApps", "GreenParAccounting", "SpeedupProfiles", "APPS", "CORE_MAP",
           "SOLVE_NODE_LIMIT", "OFFLINE_NODE_LIMIT"]


def _parse_apps(text: str) -> tuple[tuple[str, float], ...]:
    out: list[tuple[str, float]] = []
    for item in text.replace(",", " ").split():
        app, sep, weight = item.partition(":")
        try:
            w = float(weight) if sep else 1.0
        except ValueError:
            raise ValueError(f"{item!r}: {weight!r} is not a number") from None
        if not app or not (math.isfinite(w) and 0 < w <= 1e6):
            raise ValueError(f"{item!r} is not APP:WEIGHT with a weight in (0, 1e6]")
        out.append((app, w))
    if not out:
        raise ValueError("no applications given")
    return tuple(out)


def _parse_core_map(text: str) -> tuple[tuple[int, int, int], ...]:
    out: list[tuple[int, int, int]] = []
    for item in text.replace(",", " ").split():
        sizes, sep, cores = item.partition(":")
        low, dash, high = sizes.partition("-")
        try:
            c = int(cores)
            a = 1 if low == "*" else int(low)
            b = (10 ** 9 if low == "*" else int(high)) if dash or low == "*" else a
        except ValueError:
            raise ValueError(f"{item!r} is not SIZES:CORES (SIZES: N, LOW-HIGH or *)") from None
        if not sep or c < 2 or c % 2 or not (1 <= a <= b):
            raise ValueError(f"{item!r}: cores must be an even number >= 2 and sizes >= 1")
        out.append((a, b, c))
    if not out:
        raise ValueError("no ranges given")
    return tuple(out)


#: an option type: applications and their weights, "FT:12 LU:6 ..."
APPS = OptionType("applications with weights (e.g. 'FT:12 LU:6 EP:1')", _parse_apps,
                  lambda v: " ".join(f"{a}:{w:g}" for a, w in v))
#: an option type: job sizes to cores, "2:2 3-8:4 ... *:32" (first match)
CORE_MAP = OptionType("job sizes to cores (e.g. '2:2 3-8:4 *:32')", _parse_core_map,
                      lambda v: " ".join(f"{a}-{b}:{c}" for a, b, c in v))


@hookimpl
def register_policies():
    return [Baseline, Reactive, Nebulous, Aggressive, Offline, GreenParApps,
            GreenParAccounting]


@hookimpl
def register_options():
    return [*_objective_options(), *_workload_options(), *_resizing_options(),
            *_solver_options()]


def _objective_options() -> list[Option]:
    """The SLA and the weights of the MILP's objective."""
    return [
        Option("greenpar", "slowdown", FLOAT, 1.1, minimum=1.0, maximum=10.0, doc="""
            F: a job may take at most F times its run time on the servers it asked for
            (GreenPar's SLA; 1.1 in the paper, 1.0-1.5 studied). Nebulous keeps instead
            each job's average allocation at least 1/F of the servers it asked for."""),
        Option("greenpar", "beta", FLOAT, 8.0, minimum=0, maximum=1e6, doc="""
            beta: the weight of the average run time against the brown energy cost in the
            MILP's objective (Aggressive, Offline), a ratio: an hour of average run time
            costs beta times the brown electricity of one server for an hour (`beta-server-
            watts`). GreenPar's beta = 8 is $0.24 an hour of an EC2 large instance over
            0.3 kWh x $0.1055, the electricity of a server like it."""),
        Option("greenpar", "beta-server-watts", FLOAT, 0.0, minimum=0, maximum=1e6, doc="""
            The watts of the server whose electricity is beta's unit: an hour of average run
            time costs beta x these watts x 1 h x the brown price. 0: a busy server of the
            site (`[power] pstates`; GreenPar's Parasol: 30 W). 300 gives our earlier reading
            (0.3 kWh, the EC2-like server of beta's derivation), ten times the run-time term."""),
    ]


def _workload_options() -> list[Option]:
    """The jobs' applications, sizes and speedups."""
    return [
        Option("greenpar", "speedups", PATH, "", doc="""
            A CSV file of speedup profiles `app,vms,servers,speedup` (SP(n, v) relative to
            one server); empty: the shipped NPB-like table (`lm_greenpar/data/speedups.csv`,
            a model, not measurements; see the README)."""),
        Option("greenpar", "apps", APPS, (("FT", 12.0), ("LU", 6.0), ("MG", 3.0),
                                          ("CG", 2.0), ("SP", 1.0), ("EP", 1.0),
                                          ("IS", 1.0)), doc="""
            Annotator `greenpar-apps`: the applications trace jobs are drawn from, with
            weights (default: GreenPar's Grid5k mix)."""),
        Option("greenpar", "core-map", CORE_MAP, ((1, 2, 2), (3, 8, 4), (9, 16, 8),
                                                  (17, 64, 16), (65, 10 ** 9, 32)), doc="""
            Annotator `greenpar-apps`: a job's requested size (nodes, or VMs) to cores, the
            first range that holds it, Table-2 style; the job asks for cores / 2 dual-core
            servers and runs 2 VMs per server. The default suits SDSC Blue Horizon's 8-way
            nodes (GreenPar's Intrepid map is `256-512:4 1024-2048:8 4096:16 *:32`)."""),
    ]


def _resizing_options() -> list[Option]:
    """How often and how far running jobs are resized."""
    return [
        Option("greenpar", "resize-interval", DURATION, 0.0, maximum=MAX_SECONDS, doc="""
            A running job's servers change at most once in this many seconds (0: at every
            decision). GreenPar's experiments migrated VMs at most once an (accelerated)
            hour: 3600. A job whose SLA would break before the next epoch changes anyway
            (counted in `greenpar_forced_resizes`); Aggressive's MILP keeps a job changed
            too recently at its servers until it may change."""),
        *_optimizing_options(),
        Option("greenpar", "reactive-slack", STRING, "sla", choices=("sla", "above-request"),
               doc="""
            Reactive: the slack a running job may be shrunk into. `sla`: any the SLA leaves
            (the fewest servers keeping the average speedup at SP(N)/F, Fig. 2 line 18), so
            a job at its N servers builds slack from F alone and spends it. `above-request`:
            only the work it did above its requested pace (section 3.1: slack accumulated
            "via larger resource allocations than requested"): below N servers only while it
            keeps SP(N) on average; a new job starts on N at least."""),
        Option("greenpar", "reactive-growth", STRING, "fit", choices=("fit", "while-short"),
               doc="""
            Reactive: how far green growth goes. `fit`: a job doubles its servers only if
            the servers in use then stay within G, those the predicted green can run.
            `while-short`: Fig. 2, lines 7-12 as printed, while the servers in use are
            fewer than G the job with the best marginal speedup doubles, even past G (the
            last doubling partly on brown energy)."""),
        Option("greenpar", "reactive-resize-scope", STRING, "job", choices=("job", "site"),
               doc="""
            Reactive: what `resize-interval` limits. `job`: each running job's servers change
            at most once per interval. `site`: the site changes running jobs' allocations in
            at most one round per interval (section 5: "the system" migrated VMs at most
            once an hour); a change the SLA needs is made anyway."""),
        Option("greenpar", "nebulous-hint", STRING, "servers", choices=("servers", "resources"),
               doc="""
            Nebulous: what a job's speedup hint (excellent >= 1.7, good >= 1.4, fair >=
            1.15, else poor) measures. `servers`: doubling the servers of its 2N VMs at N,
            SP(2N, 2N) / SP(N, 2N), the growth Nebulous gives a running job. `resources`:
            doubling servers and VMs, SP(2N, 4N) / SP(N, 2N), how the application scales
            (README, cause 7)."""),
        Option("greenpar", "nebulous-slack", STRING, "allocation",
               choices=("allocation", "within-f"), doc="""
            Nebulous: what its floor (average allocation >= N/F) counts. `allocation`: every
            server-second, so servers held above N in the sun may be spent below N later.
            `within-f`: servers above N count as N, so a job goes below N only on F's own
            slack: a diagnostic of the README's cause 7, not a reading of the text."""),
    ]


def _optimizing_options() -> list[Option]:
    """Aggressive's and Offline's plans: the MILP's resize limit and section 3.1's revert."""
    return [
        Option("greenpar", "plan-resize-interval", BOOLEAN, False, doc="""
            Aggressive and Offline: the MILP keeps `resize-interval` too (not in the paper's
            Fig. 3): a job's servers change at most once in any `resize-interval`, its start
            not counted, as the run allows. Without it the plan may change a job in
            consecutive epochs, which the run then cannot follow: the job keeps servers the
            plan gave to the next arrival, which then waits (README, cause 4). The solve
            costs more (a binary per possible change)."""),
        Option("greenpar", "optimizing-revert", STRING, "at-arrival",
               choices=("off", "at-arrival", "within-interval"), doc="""
            Aggressive and Offline: section 3.1's rule, GreenPar "reverts back to the
            user-requested resource allocations when utilization becomes so high that jobs
            cannot be started immediately upon arrival". While a job waits (its plan does
            not fit at its arrival, or it is queued), every running job goes back to its
            requested servers (more if its SLA needs them), the plan is not followed and new
            jobs start as they asked; once no job waits, Aggressive solves again and Offline
            follows its plan again. `at-arrival`: at the arrival of a job that cannot start,
            the running jobs revert at once, even those changed within `resize-interval`
            (counted in `greenpar_forced_resizes`), so that it starts then; later, within
            the interval. `within-interval`: always within the interval (a job that waits
            has a reservation that only an early end moves earlier: a later revert does not
            start it; README). `off`: no revert (a job that waits queues while the running
            jobs follow the plan; the default before issue 39's re-runs)."""),
    ]


def _solver_options() -> list[Option]:
    """The MILP solves' limits."""
    return [
        Option("greenpar", "solve-node-limit", INTEGER, SOLVE_NODE_LIMIT, minimum=0,
               maximum=MAX_NODE_LIMIT, doc="""
            Aggressive: the most branch-and-bound nodes one MILP solve may explore (HiGHS'
            mip_max_nodes; 0: no limit). A solve that hits it uses
            the best plan found and is counted (`greenpar_solves_node_limited`); if HiGHS has
            found none, the solve counts as failed too and the policy keeps its last plan (a
            new job starts as it asked). This limit is deterministic: the same problem gives
            the same plan on any machine. The default is about twice the most nodes a solve of
            `etc/greenpar.ini` needs (2,369 of its 118 solves), so that it does not bind there;
            it does on harder days (0524: 2 of its first 29 solves need more, 7,435 and 8,016
            nodes; README)."""),
        Option("greenpar", "solve-time-limit", DURATION, 600.0, maximum=MAX_SECONDS, doc="""
            Aggressive: the longest one MILP solve may take (wall-clock seconds), a safety
            net behind `solve-node-limit`, set far above the time `etc/greenpar.ini`'s
            solves take even on a loaded machine (at most 158 s at a load of 10 on 2 cores);
            a solve that hits it uses the best plan found and is counted
            (`greenpar_solves_time_limited`). Where it stops a solve depends on the machine's
            speed and load: a run in which it binds says so (`greenpar_depends_on_machine` in
            the summary, and a warning at the end)."""),
        Option("greenpar", "mip-gap", FLOAT, 0.01, minimum=0, maximum=1, doc="""
            Aggressive and Offline: a MILP solve stops once its plan is within this
            relative gap of the best possible (HiGHS' mip_rel_gap; 0.01: within 1%)."""),
        Option("greenpar", "offline-node-limit", INTEGER, OFFLINE_NODE_LIMIT, minimum=0,
               maximum=MAX_NODE_LIMIT, doc="""
            Offline: the most branch-and-bound nodes its one MILP solve may explore (0: no
            limit), as `solve-node-limit`: deterministic, so that an Offline run does not
            depend on the machine. The solve starts from Baseline's plan, so a solve stopped
            here never returns a plan the MILP prices above it; on the days of the README
            it stops here on 0501 and 0524 (59 and 377 CPU-s, 60 of them completing
            Baseline's plan on 0524) and reaches the 1% gap first on 0519 (101 CPU-s)."""),
        Option("greenpar", "offline-time-limit", DURATION, 1800.0, maximum=MAX_SECONDS, doc="""
            Offline: the longest its one MILP solve over the whole workload may take
            (wall-clock seconds), a safety net behind `offline-node-limit` (the paper let
            its Offline run for 30 minutes); machine-dependent, as `solve-time-limit`."""),
    ]
