"""The core's ini options. Names follow Haizea's where the concept is the same."""

from __future__ import annotations

import math
from collections.abc import Mapping

from lease_manager.config.schema import (
    AMOUNTS,
    BOOLEAN,
    COP,
    DURATION,
    FLOAT,
    INTEGER,
    INTEGERS,
    NAMES,
    NUMBER_OR_FILE,
    PATH,
    POWER_CAP,
    SITE,
    STRING,
    Option,
)
from lease_manager.kernel.timeutil import MAX_SECONDS

#: the fastest a real clock may run (schedule seconds per wall second)
MAX_SPEEDUP = 1e6
#: bounds of numeric options where no larger value makes sense (``config-doc`` prints each
#: option's): a time of at most 1e10 s (about 317 years, the traces' bound; ``unlimited`` only
#: where it means something: a run's length, a trace window), a data rate of at most 1e12 MB/s,
#: a count of at most 1e12, a seed below 2**63
MAX_RATE = 1e12
MAX_COUNT = 10**12
MAX_SEED = 2**63 - 1
BACKFILLING = ("off", "aggressive", "conservative", "intermediate")
STOP_WHEN = ("all-leases-done", "besteffort-done", "time")


def core_options(policy_names: Mapping[str, tuple[str, ...]]) -> list[Option]:
    """The core's options; policy options accept the names of the installed policies."""

    def names(kind: str) -> tuple[str, ...]:
        return tuple(policy_names.get(kind, ()))

    return [
        # ------------------------------------------------------------------- [simulation]
        Option("simulation", "resources", SITE, doc="""
            The site's nodes: a node count and each node's capacity, e.g.
            `144 CPU:8 Memory:16384`. The resource types are those named here. Groups of
            different nodes are separated by `;`. A CPU amount above 1 is a pool of cores that
            VMs of different leases share."""),
        Option("simulation", "clock", STRING, "simulated", choices=("simulated", "real"), doc="""
            `simulated` jumps from one event to the next (trace replay, as fast as possible);
            `real` follows the wall clock (see `speedup`)."""),
        Option("simulation", "speedup", FLOAT, 1.0, minimum=1e-9, maximum=MAX_SPEEDUP, doc="""
            With the real clock, how many seconds of schedule pass per wall-clock second
            (at most a million: a day of schedule in about 0.09 s). The daemon refuses a
            speed-up, or a stored clock, that would pass 9999-12-31 within a day of wall
            time."""),
        Option("simulation", "policy-site-selection", STRING, "earliest-start",
               choices=names("site-selection"), doc=f"""
            With several sites (`[site:NAME]` sections, each setting `resources` and any of
            `backfilling`, `backfilling-reservations` and the `[power]` options for that site):
            the policy that sends each arriving lease to a site (installed:
            {', '.join(names('site-selection'))}). `earliest-start` picks the site where the
            lease could start first."""),
        Option("simulation", "sites-file", PATH, "", doc="""
            The run's sites as a CSV file instead of (or besides) `[site:NAME]` sections: a
            header `name,OPTION,...` whose columns are options a site may set (`resources`,
            `backfilling`, `cop`, `cubic-law`, `carbon-rate`...), then one row per site
            (an empty cell sets nothing). A `[site:NAME]` section or `--set` of the same
            option wins over the file."""),
        Option("simulation", "site-selection-cycle", DURATION, 0, minimum=0, maximum=1e9,
               doc="""
            With several sites: `0` sends each lease to a site as it arrives; a length
            (Garg et al. use 50 s) gathers the leases that arrive in each cycle of that length
            (from the start of the run) and lets the site-selection policy decide them
            together at the cycle's end."""),
        Option("simulation", "starttime", STRING, "", doc="""
            The date and time the run's time 0 stands for (Haizea's `starttime`, e.g.
            `2006-11-25 13:00:00`). Outputs stay in seconds from it; `run.json` records it."""),
        Option("simulation", "seed", INTEGER, 0, minimum=0, maximum=MAX_SEED, doc="""
            Seed of the run's random numbers: policies and annotators draw from independent
            streams derived from it, so the same seed gives the same results."""),
        Option("simulation", "stop-when", STRING, "all-leases-done", choices=STOP_WHEN, doc="""
            When a simulation ends: `all-leases-done` (every lease finished), `besteffort-done`
            (every best-effort lease finished) or `time` (at `runtime`)."""),
        Option("simulation", "runtime", DURATION, math.inf, unlimited=True, doc="""
            With `stop-when = time`: how long the run lasts."""),
        # --------------------------------------------------------------------- [tracefile]
        Option("tracefile", "tracefile", PATH, "", doc="""
            The workload to replay: an SWF file (`.swf` or gzipped `.swf.gz`) or a Haizea LWF
            file (XML). Required to replay a trace."""),
        Option("tracefile", "injectionfile", PATH, "", doc="""
            An LWF file of extra requests (advance reservations, say) merged with the trace by
            arrival time; its times are on the replay's clock (after `rebase`)."""),
        Option("tracefile", "procs-per-vm", INTEGER, 1, minimum=1, maximum=10_000_000, doc="""
            SWF: processors per VM; a job gets ceil(processors / procs-per-vm) VMs, where
            processors is field 8 (requested) if positive, else field 5 (allocated)."""),
        Option("tracefile", "vm-resources", AMOUNTS, "CPU:1", doc="""
            SWF: the capacity of each VM, in the site's resource types."""),
        Option("tracefile", "paradigm", STRING, "hpc", choices=("hpc", "cloud"), doc="""
            `hpc`: reserve the requested time and end the lease at its actual run time;
            `cloud`: the requested time is the actual run time."""),
        Option("tracefile", "queues", INTEGERS, (), doc="""
            SWF: replay only jobs of these queues (field 15). Empty: all."""),
        Option("tracefile", "window-start", DURATION, 0, maximum=MAX_SECONDS, doc="""
            SWF: replay only jobs submitted at or after this offset into the log
            (D:HH:MM:SS, e.g. `5:02:14:30`)."""),
        Option("tracefile", "window-length", DURATION, math.inf, unlimited=True, doc="""
            SWF: replay only jobs submitted within this long after `window-start`."""),
        Option("tracefile", "max-jobs", INTEGER, 0, minimum=0, maximum=MAX_COUNT, doc="""
            Replay only the first N jobs that pass the other filters (0: all)."""),
        Option("tracefile", "rebase", BOOLEAN, False, doc="""
            Shift submit times so that the first replayed job arrives at time 0."""),
        Option("tracefile", "annotators", NAMES, (), doc=f"""
            Annotators applied, in this order, to every lease read from the trace
            (installed: {', '.join(names('annotator')) or 'none'})."""),
        Option("tracefile", "skip-bad-lines", BOOLEAN, False, doc="""
            Report malformed trace lines and go on instead of stopping at the first one."""),
        Option("tracefile", "oversized", STRING, "reject", choices=("reject", "error"), doc="""
            A job larger than the site: `reject` it (it is counted and listed in leases.csv) or
            stop with an `error` naming its line."""),
        Option("tracefile", "imagefile", PATH, "", doc="""
            Haizea 1.0's image file: `IMAGE SIZE-MB` lines, a line starting with `#`, then one
            image name per line, given in that order to the leases read (their disk images,
            as an LWF `<disk-image>` gives them; see `[preparation]`)."""),
        Option("tracefile", "runtime-slowdown-overhead", FLOAT, 0.0, minimum=0, maximum=1e6,
               doc="""
            Haizea's runtime overhead: the leases `add-overhead` names run this many percent
            longer (requested and actual durations, rounded up to a second)."""),
        Option("tracefile", "runtime-slowdown-as", STRING, "lease-manager",
               choices=("lease-manager", "haizea"), doc="""
            How `runtime-slowdown-overhead` applies. `lease-manager`: a lease runs that much
            slower, so its requested and actual durations both grow (rounded up to a second).
            `haizea` (what a Haizea file gets): only the requested duration grows, as Haizea
            stretches it (`ceil(requested x (1 + percent/100))` in floating point: 3,600 s at
            10 % is 3,961 s), and the lease still ends after its real run time."""),
        Option("tracefile", "add-overhead", STRING, "none",
               choices=("none", "besteffort", "all"), doc="""
            Which leases of the trace get `runtime-slowdown-overhead` and
            `bootshutdown-overhead` added: `none`, `besteffort` leases or `all`."""),
        Option("tracefile", "bootshutdown-overhead", DURATION, 0, minimum=0, maximum=1e9,
               doc="""
            Haizea's boot and shutdown overhead: seconds added to the requested and actual
            durations of the leases `add-overhead` names."""),
        Option("tracefile", "override-memory", FLOAT, -1.0, minimum=-1, maximum=1e12, doc="""
            Haizea's `override-memory`: every VM of the trace needs this much `Memory` (MB)
            instead of what the trace says (-1: as the trace says)."""),
        # -------------------------------------------------------------------- [scheduling]
        Option("scheduling", "backfilling", STRING, "aggressive", choices=BACKFILLING, doc="""
            `off`: the head of the queue blocks; `aggressive` (EASY): at most one queued lease
            holds a future reservation; `conservative`: every queued lease gets one;
            `intermediate`: at most `backfilling-reservations` do."""),
        Option("scheduling", "backfilling-reservations", INTEGER, 1, minimum=1,
               maximum=MAX_COUNT, doc="""
            With `backfilling = intermediate`: how many leases may hold future reservations."""),
        Option("scheduling", "placement", STRING, "auto",
               choices=("auto", "at-start", "when-planned"), doc="""
            When a reservation gets its nodes. `when-planned` (Haizea's): the mapper places every
            reservation, future ones included, when it is planned, and later leases fit around it
            node by node. `at-start` (Slurm's and Batsim's counting): a future reservation holds a
            number of VMs and gets nodes when it starts, so a lease may backfill onto any node as
            long as enough are left in number; it is much faster on large sites. `auto`: `at-start`
            wherever it is exact for the run, `when-planned` where a feature needs nodes chosen
            ahead: a Haizea configuration file, the daemon, leases given in code, an LWF trace with
            deadline leases (which may preempt: suspension with memory images on particular nodes)
            or several VM shapes (one of best-effort and immediate leases and advance reservations
            of one shape is counted), an LWF trace's or injection file's advance reservations
            that may preempt or suspend leases (unless `policy-preemption = no-preemption` and
            `suspension = none`: a counted advance reservation takes any free nodes at its
            start), an injection file with deadline leases, VMs of another shape than the
            trace's, or several sites (one whose requests are all of the trace's one VM shape
            is counted), a `power-cap` (each site's, with several) unless it is a constant
            number of watts on one site of identical nodes that never switch, every lease at
            one operating point (`highest` or `lowest`) and none with its own `watts` (then the
            cap is a bound on the VMs running at once, and is counted; `[power]` nodes that
            switch are counted without a cap: their states follow from the counts plans need),
            a site that hosts no VM of the trace's shape, `migration`, image
            transfers and caches, malleable leases, the offline planner, and a host selection policy
            that does not declare at-start support (`lease-manager plugins` says which do), and an
            annotator that does not declare it (it may make deadline leases). `summary.json` and
            `run.json` record the placement that ran and why (`at-start (auto)`, `when-planned
            (auto: power cap)`). A run that names `at-start` and has one of these features is
            refused in one line naming it (leases given in code, such a site, `migration` and
            annotators excepted: a lease of another VM shape is then rejected with the reason)."""),
        Option("scheduling", "policy-admission", STRING, "accept-all", choices=names("admission"),
               doc="Admission control policy."),
        Option("scheduling", "policy-pricing", STRING, "free", choices=names("pricing"),
               doc="Pricing policy."),
        Option("scheduling", "policy-queue", STRING, "fcfs", choices=names("queue"),
               doc="Queue mechanism: the order of the wait queue, and holding leases back."),
        Option("scheduling", "policy-host-selection", STRING, "greedy",
               choices=names("host-selection"), doc="Host selection policy used by the mapper."),
        Option("scheduling", "policy-preemption", STRING, "ar-preempts-everything",
               choices=names("preemption"), doc="""
            Which leases an advance reservation may preempt, and in which order."""),
        Option("scheduling", "suspension", STRING, "all", choices=("none", "serial-only", "all"),
               doc="""
            Whether a preempted running lease is suspended (`all`; `serial-only`: only leases
            of one VM) or cancelled and requeued, losing its work (`none`)."""),
        Option("scheduling", "suspend-rate", FLOAT, 32.0, minimum=1e-9, maximum=MAX_RATE, doc="""
            MB of a VM's memory (its `Memory` amount) written per second when suspending."""),
        Option("scheduling", "resume-rate", FLOAT, 32.0, minimum=1e-9, maximum=MAX_RATE, doc="""
            MB of a VM's memory read per second when resuming."""),
        Option("scheduling", "suspendresume-exclusion", STRING, "local",
               choices=("local", "global"), doc="""
            Suspensions and resumptions of VMs are serialised per node (`local`) or across the
            whole site (`global`)."""),
        Option("scheduling", "scheduling-threshold-factor", FLOAT, 1.0, minimum=0,
               maximum=1e6, doc="""
            A queued lease that cannot run to completion before an advance reservation may use
            the slot in front of it, suspending itself before the reservation starts, if the
            slot lasts at least (1 + F) x (its suspend + resume time) and it may be suspended
            (see `suspension`)."""),
        Option("scheduling", "force-scheduling-threshold", DURATION, None, minimum=0,
               maximum=MAX_SECONDS, doc="""
            Haizea's `force-scheduling-threshold`: the shortest slot a queued lease may run
            in before suspending for an advance reservation, in seconds, instead of the one
            `scheduling-threshold-factor` gives (not set: the factor's)."""),
        Option("scheduling", "enactment-overhead", DURATION, 0, maximum=MAX_SECONDS, doc="""
            Extra time for each VM's suspension or resumption command."""),
        Option("scheduling", "overhead-in-shutdown", BOOLEAN, False, doc="""
            Haizea's shutdown time: `enactment-overhead` is also spent once per VM when a
            lease shuts down, so its shutdown takes `shutdown-time` + VMs x
            `enactment-overhead` (Haizea files set this)."""),
        Option("scheduling", "shutdown-after-early-end", BOOLEAN, True, doc="""
            Whether a lease whose work ends before its reservation does still spends its
            shutdown time (`no`: it ends when its work does, as in Haizea, whose premature
            ends remove the planned shutdown; Haizea files set this)."""),
        Option("scheduling", "override-suspend-time", DURATION, None, minimum=0,
               maximum=MAX_SECONDS, doc="""
            Haizea's `override-suspend-time`: each VM suspends in this many seconds (plus
            `enactment-overhead`) whatever its memory (not set: memory / `suspend-rate`)."""),
        Option("scheduling", "override-resume-time", DURATION, None, minimum=0,
               maximum=MAX_SECONDS, doc="""
            Haizea's `override-resume-time`: each VM resumes in this many seconds (plus
            `enactment-overhead`) whatever its memory (not set: memory / `resume-rate`)."""),
        Option("scheduling", "suspendresume-model", STRING, "lease-manager",
               choices=("lease-manager", "haizea"), doc="""
            How suspensions and resumptions are timed and planned. `lease-manager`: each VM
            takes memory / rate + `enactment-overhead`, one after another per node (`local`)
            or across the site (`global`); a suspended lease resumes on the nodes holding
            its images, or elsewhere after moving them if that is earlier. `haizea` (Haizea
            1.0's model): each VM's time is rounded up to a second and `local` exclusion
            spends the overhead once per VM in each round of simultaneous operations; a
            suspended lease is planned again like a new one, on any nodes with migration (no
            earlier than now + the time to move its images) or on its own nodes without,
            reserving Haizea's estimate of its resumption; best-effort leases are planned by
            Haizea's greedy mapper, which lets a lease that may be suspended run in front of
            any reservation and suspend before it, if it runs Haizea's scheduling threshold;
            and a preempted lease that has not run that threshold is cancelled and requeued
            (Haizea files set this)."""),
        Option("scheduling", "preemption-order", STRING, "most-preemptable-first",
               choices=("most-preemptable-first", "least-preemptable-first"), doc="""
            The order in which an advance reservation takes its victims, one more at a time
            until it fits: the preemption policy's highest scores first (younger leases
            first with the age scores), or Haizea's order, which takes the lowest scores
            first (its mapper pops the end of the list sorted most preemptable first: the
            oldest lease younger than a week first)."""),
        Option("scheduling", "shutdown-time", DURATION, 0, maximum=MAX_SECONDS, doc="""
            Time to shut a lease's VMs down: added to the reservation of best-effort, immediate
            and deadline leases, carved out of the end of an advance reservation's interval."""),
        Option("scheduling", "reevaluation", STRING, "auto",
               choices=("auto", "move-earlier", "compress", "replan"), doc="""
            What happens to future reservations when a lease ends before its reservation
            does (or is cancelled): `auto` is `compress` with conservative backfilling and
            `placement = at-start`, `move-earlier` otherwise (the README's "Re-evaluation
            after early ends" gives the evidence); `move-earlier` moves each one earlier
            where it can, keeping its nodes otherwise, pass after pass, never later than the
            start it was promised;
            `compress` (conservative backfilling's compression, Mu'alem and Feitelson 2001)
            considers each one once, in order of arrival, and moves it to its earliest start
            if that is earlier; `replan` (Haizea's `reevaluate_schedule`) gives up every
            backfilling reservation that has not started and plans each lease again from
            scratch, with a fresh host ordering, at each early end (Haizea's exact
            schedules)."""),
        Option("scheduling", "migration", STRING, "no", choices=("no", "yes", "yes-notransfer"),
               doc="""
            `yes`: a suspended lease may resume on other nodes after its memory images are
            moved there (see `migration-bandwidth`), when that lets it resume earlier;
            `yes-notransfer` (Haizea's): it may, and moving the images takes no time."""),
        Option("scheduling", "migration-bandwidth", FLOAT, 100.0, minimum=1e-9,
               maximum=MAX_RATE, doc="""
            MB per second at which a suspended lease's memory images move to other nodes."""),
        # ------------------------------------------------------------------- [preparation]
        Option("preparation", "lease-preparation", STRING, "unmanaged",
               choices=("unmanaged", "imagetransfer"), doc="""
            `unmanaged`: leases start without any preparation (their images are assumed to be
            on the nodes). `imagetransfer` (Haizea's): a lease with a disk image (LWF
            `<disk-image>`) waits until its image is sent from the image repository to its
            nodes; transfers are reservations of kind `transfer`, one at a time on the
            repository's link: the next free slot for best-effort and immediate leases, the
            last free slot before an advance reservation's start."""),
        Option("preparation", "imagetransfer-bandwidth", FLOAT, 100.0, minimum=1e-9,
               maximum=1e12, doc="""
            Mb/s of the image repository's outbound link (Haizea's unit: a 1,024 MB image takes
            81.92 s at 100 Mb/s, rounded up to 82 s as Haizea rounds)."""),
        Option("preparation", "transfer-mechanism", STRING, "multicast",
               choices=("unicast", "multicast"), doc="""
            `multicast`: one transfer feeds all of a lease's nodes; `unicast`: one transfer
            per node, one after another."""),
        Option("preparation", "avoid-redundant-transfers", BOOLEAN, True, doc="""
            With multicast, a lease whose image is already being sent starts when that
            transfer ends, on any node, without one of its own."""),
        Option("preparation", "diskimage-reuse", STRING, "none",
               choices=("none", "image-caches"), doc="""
            `image-caches`: each node keeps the images it received (up to
            `diskimage-cache-size`, the oldest evicted first), and a lease whose image a node
            holds may start there at once."""),
        Option("preparation", "diskimage-cache-size", FLOAT, 20480.0, minimum=0,
               maximum=1e12, doc="MB of each node's image cache (with `image-caches`)."),
        Option("preparation", "force-imagetransfer-time", DURATION, None, minimum=0,
               maximum=MAX_SECONDS, doc="""
            Every image transfer takes this long, whatever the image's size (not set: size /
            bandwidth)."""),
        # -------------------------------------------------------------------- [accounting]
        Option("accounting", "probes", NAMES, (), doc=f"""
            Probes that record extra metrics and time series
            (installed: {', '.join(names('probe')) or 'none'})."""),
        Option("accounting", "datafile", PATH, "", doc="""
            Haizea's data file: `simulate` without `--out` writes the run folder here, its
            name without the suffix (`results.dat` -> `results/`)."""),
        Option("accounting", "decision-log", BOOLEAN, False, doc="""
            Write `decisions.jsonl` beside `leases.csv`: one JSON line per scheduling decision
            (submitted, rejected and why, queued, reserved where and when, moved earlier,
            started and whom it backfilled past, preempted, suspended, resumed, resized,
            ended; with a `[power]` model also each node's `switch-off` and `boot`, and the
            DVFS level a lease started at), which `lease-manager explain DIR LEASE` tells as a
            story. `simulate
            --log-level debug` sets it, and so does a Haizea file's `loglevel: DEBUG`. Off, it
            costs nothing."""),
        Option("accounting", "check-invariants", BOOLEAN, True, doc="""
            Check at the end of the run that no node was ever over-committed and that every
            lease is accounted for exactly once (a failed check is an error)."""),
        # ------------------------------------------------------------------------- [power]
        Option("power", "pstates", STRING, "", doc="""
            The nodes' power model, as DVFS levels lowest first: `GHz:IDLE-WATTS:FULL-WATTS`
            separated by spaces (one node group's levels; several groups, as in
            `[simulation] resources`, separated by `;`). An on node draws the idle power of its
            highest level plus, for the share of its CPU each lease holds, full minus idle power
            at the lease's level. Empty (and no `cubic-law`): no power model, no energy
            accounting."""),
        Option("power", "cubic-law", STRING, "", doc="""
            The levels from Garg et al.'s law P(f) = beta + alpha f^3 watts per CPU instead of
            `pstates`: `BETA:ALPHA:FMIN:FMAX:LEVELS` (levels evenly spaced, GHz), per group
            separated by `;`. See `cubic-idle`."""),
        Option("power", "cubic-idle", STRING, "counted", choices=("counted", "not-counted"),
               doc="""
            With `cubic-law`: whether an idle CPU draws beta (`counted`) or nothing
            (`not-counted`, the paper's energy counts running CPUs only)."""),
        Option("power", "off-watts", STRING, "0", doc="""
            Watts a node draws while off (per group separated by `;`, or one value for all)."""),
        Option("power", "switch-on", STRING, "0:0", doc="""
            `SECONDS:WATTS`: how long a node takes to boot and what it draws meanwhile (per
            group separated by `;`, or one value for all)."""),
        Option("power", "switch-off", STRING, "0:0", doc="""
            `SECONDS:WATTS`: how long a node takes to shut down and what it draws meanwhile."""),
        Option("power", "initial-state", STRING, "on", choices=("on", "off"), doc="""
            Whether every node is on or off when the run starts (`off` needs a node-power
            policy that boots nodes: every policy boots a node in time for a lease planned on
            it)."""),
        Option("power", "policy-node-power", STRING, "always-on",
               choices=names("node-power"), doc=f"""
            When nodes are switched off (installed: {', '.join(names('node-power'))}).
            `always-on` never switches a node off; `switch-off-idle` switches a node off once
            it has been idle `idle-timeout` seconds, unless a lease is planned on it sooner than
            it could shut down and boot again. Whatever the policy, a node that is off is booted
            in time for a lease planned on it, and a lease planned on an off node starts no
            earlier than the boot allows."""),
        Option("power", "policy-operating-point", STRING, "highest",
               choices=names("operating-point"), doc=f"""
            The DVFS level each lease runs at, chosen when it arrives (installed:
            {', '.join(names('operating-point'))}). A lease at frequency f reserves and runs
            T(f) = T(fmax) x (gamma x (fmax/f - 1) + 1)."""),
        Option("power", "gamma", FLOAT, 1.0, minimum=0, maximum=1, doc="""
            The share of a lease's run time that scales with the CPU frequency (Garg et al.'s
            gamma), unless the lease has its own `gamma` attribute (an LWF `<extra>` or an
            annotation)."""),
        Option("power", "idle-timeout", DURATION, 0, maximum=MAX_SECONDS, doc="""
            Seconds a node must stay idle before `switch-off-idle` switches it off."""),
        Option("power", "look-ahead", BOOLEAN, False, doc="""
            `switch-off-idle`: keep an idle node on when a lease planned on it would have its
            boot begin just as the node's shutdown ended (a lease within `switch-off` +
            `switch-on` seconds, that bound included; without it the node goes off and boots
            again). Kassab et al.'s look-ahead. Under a `power-cap` it changes nothing: there
            an idle node with a lease planned on it always stays on, however long the gap (the
            cap holds its power until its last planned lease), which is look-ahead's choice
            for every gap."""),
        Option("power", "look-back", BOOLEAN, False, doc="""
            `switch-off-idle`: keep an idle node on when a lease planned on it would have its
            boot begin within `switch-on` seconds of the node's shutdown (a lease within twice
            `switch-on` seconds): the shutdown is cancelled. Kassab et al.'s look-back. Under a
            `power-cap` it changes nothing: there a node is switched off only when no lease is
            planned on it, so there is no shutdown for a planned boot to cancel."""),
        Option("power", "cop", COP, math.inf, doc="""
            Cooling coefficient of performance: total power = IT power x (COP + 1) / COP
            (`inf`: no cooling overhead), or `uniform:LOW:HIGH`: drawn for each site from the
            run's seed (Garg et al. draw COPs in [0.6, 3.5])."""),
        Option("power", "electricity-price", NUMBER_OR_FILE, 0.0, doc="""
            Price per kWh of the energy drawn from the grid (`energy_cost` in `summary.json`):
            a number, or a CSV file of `time,price` rows (each price holds until the next row;
            the first also before it)."""),
        Option("power", "carbon-rate", NUMBER_OR_FILE, 0.0, doc="""
            Carbon emitted per kWh drawn from the grid, in kg (`carbon_kg`): a number, or a
            CSV file of `time,rate` rows."""),
        Option("power", "green-production", PATH, "", doc="""
            The site's green (solar, wind) production: a CSV file of `time,watts` rows. Green
            power is used first; only the rest is drawn from the grid, priced and counted as
            carbon (`green_used_joules`, `brown_joules`)."""),
        Option("power", "green-forecast", PATH, "", doc="""
            Forecasts of the green production, revised as time passes: a CSV file of
            `issued,time,watts` rows (the forecast issued at `issued` says `watts` from `time`
            on; at any instant the latest issued counts). Policies read it
            (`ctx.power.forecast`); the accounting uses the actual `green-production`."""),
        Option("power", "green-scale", FLOAT, 1.0, minimum=0, maximum=1e6, doc="""
            Factor applied to `green-production` and `green-forecast` (a larger or smaller
            solar plant with the same weather)."""),
        Option("power", "power-cap", POWER_CAP, "none", doc="""
            The power envelope: no plan may make the site's IT power (the static power of the
            nodes that are on or switching plus the running leases' dynamic power) exceed it at
            any instant. `none`, a number of watts, `green` (the `green-production` series), or
            a CSV file of `time,watts` rows. Leases wait (or are rejected, if they cannot wait)
            until the envelope has room; nodes stay off unless it has room for them."""),
        # ---------------------------------------------------------------------- [malleable]
        Option("malleable", "policy-allocation", STRING, "none",
               choices=("none",) + names("allocation"), doc=f"""
            The policy that makes leases malleable and changes the allocation (nodes, VMs per
            node) of running ones (installed: {', '.join(names('allocation')) or 'none'}).
            `none`: every lease keeps the VMs it asked for. With a policy, it is asked at
            arrivals, ends, every `epoch` and when it asks; `leases.csv` gets the columns
            `resizes`, `allocations` (`TIME:NODESxVMS` of each allocation) and
            `work_single_server`, and `summary.json` the number of resizes."""),
        Option("malleable", "epoch", DURATION, 900.0, maximum=MAX_SECONDS, doc="""
            Seconds between two regular decisions of the allocation policy (epochs start at
            the run's start; GreenPar uses 15 minutes)."""),
        Option("malleable", "migration-time", DURATION, 0.0, maximum=MAX_SECONDS, doc="""
            Seconds a resized lease makes no progress when any of its VMs moves, is added or
            removed (its VMs migrate); its new reservation is that much longer."""),
        Option("malleable", "migration-energy", FLOAT, 0.0, minimum=0, maximum=1e12, doc="""
            Joules a migration draws per node gained or lost (GreenPar's ME(n), linear), drawn
            evenly over the migration time on the lease's new nodes (needs a migration time
            above 0, and a `[power]` model to be counted)."""),
        Option("power", "power-cap-window", DURATION, 0, maximum=MAX_SECONDS, doc="""
            Use a window of this many seconds of the `power-cap` series as the envelope,
            moved to time 0, with no power after it (Kassab et al. cut 1,000-hour windows of a
            year of weather). The window starts at one of the series' rows drawn from the run's
            seed: every run of a seed gets the same envelope. 0: the whole series."""),
        Option("power", "power-cap-window-draw", DURATION, 0, maximum=MAX_SECONDS, doc="""
            Draw the start of `power-cap-window` as for a window of this many seconds. Set to
            the length of a window, it holds that window's start fixed while a longer
            `power-cap-window` extends it (a window that then runs past the series' end is an
            error). 0: the window's own length."""),
        Option("power", "power-cap-scale", FLOAT, 1.0, minimum=0, maximum=1e9, doc="""
            Multiply the `power-cap` envelope by this factor (Kassab et al.'s x1, x2, x5 and
            x10 envelopes: more panels and turbines)."""),
        # ---------------------------------------------------------------------- [planning]
        Option("planning", "policy-planner", STRING, "none",
               choices=("none",) + names("planner"), doc=f"""
            Offline planning: every lease of the workload is known at time 0 and a planner
            places them all on a grid of `interval` seconds under the power envelope
            (`[power] power-cap`), minimising the makespan; the run then replays the plan, each
            lease as an advance reservation at its planned start on its planned node, and checks
            it (the power never above the envelope, every lease once, energy = integral of
            power). `none`: an ordinary replay. Installed: {', '.join(names('planner'))}.
            Needs a `[power]` model with `policy-node-power = switch-off-idle`, `idle-timeout =
            0` and `initial-state = off`, switching times that are whole intervals, and one
            node group; submit times are ignored and durations rounded up to whole
            intervals."""),
        Option("planning", "interval", DURATION, 360, maximum=MAX_SECONDS, doc="""
            The planning grid's step, in seconds (Kassab et al.: 6 minutes). The envelope
            in an interval is the least the cap holds in it."""),
        Option("planning", "horizon", DURATION, 0, maximum=MAX_SECONDS, doc="""
            How far a plan may reach, in seconds from time 0; a lease that cannot be placed
            before it is rejected. 0: the envelope's last change (if it leaves no power after
            it), else that plus every lease's duration and a boot and a shutdown."""),
            # ------------------------------------------------------------------------ [daemon]
        Option("daemon", "enactment", STRING, "process", choices=names("enactment"), doc=f"""
            How `lease-manager serve` carries out leases: the enactment backend
            (installed: {', '.join(names('enactment')) or 'none'}). `simulated` runs nothing,
            `process` runs each VM's command as a local process, `slurm` turns leases into
            Slurm advance reservations with a batch job in each."""),
        Option("daemon", "state-dir", PATH, "lease-manager-state", doc="""
            Folder of the daemon's durable state: the SQLite database, the API token and the
            backends' own files. A restarted daemon carries on from it."""),
        Option("daemon", "work-root", PATH, "", doc="""
            Folder under which a lease that names no `workdir` (a JSON request without one,
            an LWF body without `?workdir=`) runs its command: in `WORK-ROOT/lease-<id>/`
            (`vm-<index>/` below it with the `process` backend), created with mode 0700.
            Empty: `STATE-DIR-work` beside the state folder. It may neither lie inside the
            state folder nor hold it (refused at start), so a command never starts where
            relative paths reach the daemon's token or database; the logs stay in the state
            folder. With `slurm` it must be visible on the compute nodes."""),
        Option("daemon", "host", STRING, "127.0.0.1", doc="""
            Address the JSON API listens on (loopback by default)."""),
        Option("daemon", "port", INTEGER, 8642, minimum=0, maximum=65535, doc="""
            TCP port of the JSON API (0: any free port, written to `state-dir/daemon.json`)."""),
        Option("daemon", "token-file", PATH, "", doc="""
            File holding the API's bearer token. Empty: `state-dir/token`, created with mode
            0600 on first start."""),
        Option("daemon", "max-body", INTEGER, 1048576, minimum=1, maximum=1 << 30, doc="""
            Largest request body the API accepts, in bytes (larger ones get 413)."""),
        Option("daemon", "max-connections", INTEGER, 256, minimum=1, maximum=65536, doc="""
            Most API connections open at once (and never more than half the file
            descriptors the process may open). When all are taken, the one that has waited
            longest for its request is closed to make room; if every one is being answered,
            the newcomer is closed."""),
        Option("daemon", "request-timeout", FLOAT, 30.0, minimum=0.1, maximum=3600, doc="""
            Seconds a client has to send each whole request (headers and body), from the
            moment the daemon waits for it: an idle or slow connection is closed after it."""),
        Option("daemon", "max-vms-per-node", INTEGER, 64, minimum=1, maximum=1_000_000, doc="""
            Bounds what one request may make the daemon run, tied to the site's size: a lease
            may have at most nodes x this many VMs, a submission (a list or an LWF document)
            at most that many VMs in all, and each VM must need at least 1/this of a node's
            amount of some resource (so no node ever holds more than about this many VMs per
            resource type; with the `process` backend each VM is a process)."""),
        Option("daemon", "reconcile-interval", FLOAT, 1.0, minimum=0.01, maximum=3600, doc="""
            Wall-clock seconds between two comparisons of the backend's real state with the
            plan (finished or vanished work is noticed within this time)."""),
        Option("daemon", "haizea-rpc", BOOLEAN, False, doc="""
            Also serve Haizea 1.0's XML-RPC protocol, so that `haizea-request-lease`,
            `haizea-cancel-lease`, `haizea-list-leases`, `haizea-show-queue` and
            `haizea-list-hosts` work unchanged (`create_lease`, `cancel_lease`, `get_leases`,
            `get_lease`, `get_queue`, `get_hosts`, `notify_event`, `test_func`). Haizea's
            clients send no token, so it listens on 127.0.0.1 only and answers only
            connections of the daemon's own user (or root), as the token file, readable by
            that user alone, does for the JSON API. Lease commands run as that user can reach
            it: turn it on only where they may submit and cancel leases."""),
        Option("daemon", "haizea-rpc-port", INTEGER, 42493, minimum=0, maximum=65535, doc="""
            TCP port of the Haizea XML-RPC endpoint (`haizea-rpc`); 42493 is Haizea's own, the
            one its clients call without `-s`. 0: any free port, written to
            `state-dir/daemon.json` as `haizea_rpc_url`."""),
        Option("daemon", "sync", STRING, "full", choices=("full", "normal"), doc="""
            SQLite `synchronous` setting: `full` makes every answered change survive a power
            loss; `normal` only a crash of the daemon (faster)."""),
    ]
