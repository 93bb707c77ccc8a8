"""The example policy of each kind that ``lease-manager new-plugin`` writes
(:mod:`lease_manager.plugin_template`): its base class, one typed option, its methods, and a
test that replays a trace the project ships with it. A table of templates, as source text.
"""

from __future__ import annotations

import attrs

SWF_TRACE = "sdsc-blue-600requests.swf"
TASK_TRACE = "kassab-50-tasks.csv"
PROVENANCE = {
    SWF_TRACE: "the first 600 requests of SDSC Blue Horizon's log (version 4.1, queues 1-4, "
               "field 8 in nodes: replay on 144 nodes), from the Parallel Workloads Archive "
               "(Feitelson, Tsafrir, Krakov, JPDC 2014)",
    TASK_TRACE: "50 synthetic tasks (length and power) drawn by lease_manager for Kassab et "
                "al.'s planning experiments",
}


@attrs.frozen
class Template:
    """One kind's policy: its base class, option, methods and test."""

    base: str
    summary: str
    #: the option: name, type, default (Python source), limits (source), doc
    option: tuple[str, str, str, str, str]
    methods: str
    tests: str
    trace: str = SWF_TRACE
    #: what the module imports besides lease_manager's names: standard library, others
    imports: tuple[str, str] = ("", "")
    #: lease_manager's names it uses besides its base class, Option and the option's type
    names: tuple[str, ...] = ()
    #: lines of the policy's ``__init__`` after it reads its option
    setup: str = ""


TEMPLATES: dict[str, Template] = {
    "admission": Template(
        "AdmissionPolicy", "rejects the leases that ask for more than `max-vms` VMs",
        ("max-vms", "INTEGER", "16", "minimum=1", "The most VMs a lease may ask for."),
        '''
    def admit(self, lease, now):
        if lease.vms.count > self.max_vms:
            return f"asks for {lease.vms.count} VMs; at most {self.max_vms} are admitted"
        return None
''', '''
def test_only_leases_above_the_limit_are_rejected(tmp_path):
    rows, summary = replay(tmp_path, "scheduling.policy-admission=NAME",
                           "SECTION.max-vms=8")
    rejected = [row for row in rows if row["state"] == "rejected"]
    assert rejected and all(int(row["vms"]) > 8 for row in rejected)
    assert all(int(row["vms"]) <= 8 for row in rows if row["state"] == "done")
'''),
    "pricing": Template(
        "PricingPolicy", "charges `rate` per VM-hour requested",
        ("rate", "FLOAT", "1.0", "minimum=0", "The price of one VM for one requested hour."),
        '''
    def price(self, lease, now):
        return self.rate * lease.vms.count * lease.requested_duration / 3600
''', '''
def test_every_lease_pays_its_requested_vm_hours(tmp_path):
    rows, summary = replay(tmp_path, "scheduling.policy-pricing=NAME", "SECTION.rate=0.5")
    done = [row for row in rows if row["state"] == "done"]
    assert done
    for row in done:
        expected = 0.5 * int(row["vms"]) * float(row["requested"]) / 3600
        # (leases.csv writes 6 significant digits)
        assert float(row["price"]) == pytest.approx(expected, rel=1e-5), row
'''),
    "queue": Template(
        "QueuePolicy", "orders the wait queue by requested duration, shortest first, or by "
        "size (`by`)",
        ("by", "STRING", '"duration"', 'choices=("duration", "size")',
         "What orders the queue, smallest first: duration or size (VMs)."),
        '''
    def sort_key(self, lease):
        first = lease.requested_duration if self.by == "duration" else lease.vms.count
        return (first, lease.submit, lease.id)
''', '''
def test_the_queue_order_changes_the_schedule(tmp_path):
    """Without backfilling, the policy's order is the order leases start in: a schedule of
    its own, where first-come-first-served gives another."""
    fcfs, _ = replay(tmp_path, "scheduling.backfilling=off")
    mine, _ = replay(tmp_path, "scheduling.backfilling=off", "scheduling.policy-queue=NAME",
                     "SECTION.by=duration")
    assert [row["state"] for row in mine] == [row["state"] for row in fcfs]
    assert [row["start"] for row in mine] != [row["start"] for row in fcfs]
'''),
    "host-selection": Template(
        "HostSelectionPolicy", "visits the nodes from the highest index down, leaving out the "
        "`skip` highest",
        ("skip", "INTEGER", "0", "minimum=0", "How many of the highest nodes never to use."),
        '''
    def order_hosts(self, lease, start, end, table):
        nodes = table.capacity.shape[0]
        return np.arange(nodes - 1 - self.skip, -1, -1)
''', '''
def test_the_highest_nodes_first_and_the_skipped_ones_never(tmp_path):
    rows, _ = replay(tmp_path, "scheduling.policy-host-selection=NAME",
                     "SECTION.skip=2")
    used = [[int(node) for node in row["nodes"].split()] for row in rows if row["nodes"]]
    assert used and max(used[0]) == 141   # 144 nodes, the two highest skipped
    assert all(max(nodes) <= 141 for nodes in used)
''', imports=("", "import numpy as np")),
    "preemption": Template(
        "PreemptionPolicy", "lets a lease preempt best-effort leases of at most `max-vms` VMs, "
        "the largest first",
        ("max-vms", "INTEGER", "144", "minimum=0", "The largest lease (in VMs) that may be "
         "preempted."),
        '''
    def score(self, preemptor, preemptee, now):
        if preemptee.type is not LeaseType.BEST_EFFORT or preemptee.vms.count > self.max_vms:
            return None
        return float(preemptee.vms.count)
''', '''
AR = """<lease-workload name="one-ar"><lease-requests>
<lease-request arrival="01:00:00.00"><realduration time="01:00:00.00"/>
<lease id="100000"><nodes><node-set numnodes="144"><res type="CPU" amount="1"/>
<res type="Memory" amount="1024"/></node-set></nodes>
<start><exact time="02:00:00.00"/></start><duration time="01:00:00.00"/>
<software><none/></software></lease></lease-request></lease-requests></lease-workload>
"""


def test_an_advance_reservation_of_the_whole_site_preempts_what_the_policy_allows(tmp_path):
    """An advance reservation of all 144 nodes from 2:00 to 3:00, injected into the trace: it
    gets them when every lease running then may be preempted, and is rejected when none
    may."""
    injection = tmp_path / "ar.lwf"
    injection.write_text(AR)
    settings = ("scheduling.policy-preemption=NAME", f"tracefile.injectionfile={injection}")
    rows, _ = replay(tmp_path, *settings, "SECTION.max-vms=144")
    ar = next(row for row in rows if row["type"] == "advance-reservation")
    assert ar["state"] == "done" and float(ar["start"]) == 7200
    rows, _ = replay(tmp_path, *settings, "SECTION.max-vms=0")
    ar = next(row for row in rows if row["type"] == "advance-reservation")
    assert ar["state"] == "rejected"
''', names=("LeaseType",)),
    "probe": Template(
        "Policy", "records the VMs waiting in the queue at the end of scheduling cycles, at "
        "most once every `interval`",
        ("interval", "DURATION", "3600", "minimum=0", "The least time between two records."),
        '''
    @lease_manager.hookimpl
    def scheduling_cycle_end(self, ctx, now):
        if now - self.last >= self.interval:
            self.last = now
            waiting = sum(lease.vms.count for lease in ctx.scheduler.waiting())
            ctx.metrics.record("SERIES", now, waiting)
''', '''
def test_the_series_is_recorded_at_most_once_an_interval(tmp_path):
    _, _ = replay(tmp_path, "accounting.probes=NAME", "SECTION.interval=7200")
    with (tmp_path / "out1" / "series" / "SERIES.csv").open() as fh:
        times = [float(row["time"]) for row in csv.DictReader(fh)]
    assert len(times) > 2
    assert all(later - earlier >= 7200 for earlier, later in zip(times, times[1:], strict=False))
''', imports=("import math", ""),
        setup='''
        #: when the series was last recorded
        self.last = -math.inf
        ctx.metrics.describe("SERIES", "VMs", "VMs waiting in the queue")'''),
    "annotator": Template(
        "Annotator", "marks each lease `wide` (more than `threshold` VMs) or `narrow`, in "
        "`lease.extra[\"width\"]`",
        ("threshold", "INTEGER", "8", "minimum=0", "The most VMs of a narrow lease."),
        '''
    def annotate(self, lease):
        lease.extra["width"] = "wide" if lease.vms.count > self.threshold else "narrow"
''', '''
def test_every_lease_is_marked_by_its_width(tmp_path):
    """In this process, with a plugin of the test's own that sees each lease submitted."""
    from lease_manager import Plugins, hookimpl, load_run

    seen = {}

    class Watcher:
        @hookimpl
        def lease_submitted(self, lease):
            seen[lease.id] = (lease.vms.count, lease.extra.get("width"))

    replay(tmp_path)   # (writes run.ini)
    run = load_run(tmp_path / "run.ini",
                   ["tracefile.annotators=NAME", "SECTION.threshold=4"],
                   plugins=Plugins(extra=[Watcher()]))
    run.run()
    assert len(seen) == 200
    assert all(width == ("wide" if vms > 4 else "narrow") for vms, width in seen.values())
    assert {width for _, width in seen.values()} == {"wide", "narrow"}
'''),
    "node-power": Template(
        "NodePowerPolicy", "switches a node off once it has been idle for `idle`",
        ("idle", "DURATION", "600", "minimum=0", "How long a node stays idle before it is "
         "switched off."),
        '''
    def switch_off(self, idle, idle_since, now):
        return [int(node) for node, since in zip(idle, idle_since, strict=True)
                if now - since >= self.idle]

    def next_check(self, idle_since):
        return idle_since + self.idle
''', '''
POWER = ("power.pstates=2.0:100:200", "power.switch-off=10:100", "power.switch-on=60:150",
         "power.off-watts=5")


def test_switching_idle_nodes_off_saves_energy(tmp_path):
    _, always_on = replay(tmp_path, *POWER)
    _, mine = replay(tmp_path, *POWER, "power.policy-node-power=NAME",
                     "SECTION.idle=900")
    assert mine["node_switch_ons"] > 0
    assert mine["energy_joules"] < always_on["energy_joules"]
'''),
    "operating-point": Template(
        "OperatingPointPolicy", "runs leases of at most `max-vms` VMs at the lowest frequency, "
        "the others at the highest",
        ("max-vms", "INTEGER", "4", "minimum=0", "The largest lease (in VMs) run at the "
         "lowest frequency."),
        '''
    def level(self, lease, now):
        return 0 if lease.vms.count <= self.max_vms else self.ctx.power.top_level
''', '''
def test_small_leases_run_at_the_lowest_level(tmp_path):
    rows, _ = replay(tmp_path, "power.pstates=1.0:80:120 2.0:100:200",
                     "power.policy-operating-point=NAME",
                     "SECTION.max-vms=4")
    done = [row for row in rows if row["state"] == "done"]
    assert done
    assert all(int(row["level"]) == (0 if int(row["vms"]) <= 4 else 1) for row in done)
'''),
    "site-selection": Template(
        "SiteSelectionPolicy", "sends leases of at most `max-vms` VMs to the first site, the "
        "others to the last",
        ("max-vms", "INTEGER", "8", "minimum=0", "The largest lease (in VMs) sent to the "
         "first site."),
        '''
    def select(self, lease, sites, length, now):
        return 0 if lease.vms.count <= self.max_vms else len(sites) - 1
''', '''
def test_leases_go_to_the_site_of_their_size(tmp_path):
    rows, _ = replay(tmp_path,
                     "site:small.resources=16 CPU:1 Memory:1024",
                     "site:large.resources=144 CPU:1 Memory:1024",
                     "simulation.policy-site-selection=NAME",
                     "SECTION.max-vms=8")
    assert rows
    assert all(row["site"] == ("small" if int(row["vms"]) <= 8 else "large") for row in rows)
'''),
    "allocation": Template(
        "AllocationPolicy", "makes leases of at most `max-vms` VMs malleable, starting as they "
        "asked, and grows each running one to twice its VMs at every epoch",
        ("max-vms", "INTEGER", "4", "minimum=0", "The largest lease (in VMs) made malleable."),
        '''
    def initial(self, lease, now):
        if lease.vms.count > self.max_vms:
            return None
        return Allocation(lease.vms, float(lease.vms.count))

    def reallocate(self, now, reasons):
        for lease in self.ctx.scheduler.running():
            m = lease.malleable
            if m is not None and "epoch" in reasons and lease.vms.count <= self.max_vms:
                vms = VMRequest.uniform(2 * lease.vms.count, lease.vms.vectors[0])
                yield lease, Allocation(vms, 2.0 * m.rate)
''', '''
def test_small_leases_are_malleable_and_grow(tmp_path):
    """Every lease of at most 4 VMs is malleable; those running at an epoch double their VMs
    (leases.csv gives the VMs a lease ended with)."""
    rigid, _ = replay(tmp_path)
    small = {row["lease_id"] for row in rigid if int(row["vms"]) <= 4}
    rows, summary = replay(tmp_path, "malleable.policy-allocation=NAME",
                           "malleable.epoch=3600", "SECTION.max-vms=4")
    assert summary["malleable_leases"] == len(small) > 0
    assert summary["resizes"] > 0
    grown = {row["lease_id"] for row in rows if int(row["vms"]) > 4} - {
        row["lease_id"] for row in rigid if int(row["vms"]) > 4}
    assert grown and grown <= small
''', names=("Allocation", "VMRequest")),
    "planner": Template(
        "Planner", "plans the tasks longest first (or in the workload's order), each at its "
        "earliest spot under the envelope",
        ("longest-first", "BOOLEAN", "True", "", "Plan the longest tasks first (no: in the "
         "workload's order)."),
        '''
    def plan(self, tasks, board):
        order = (sorted(tasks, key=lambda task: -task.length) if self.longest_first
                 else list(tasks))
        for task in order:
            board.place_earliest(task)
        return board
''', '''
def test_the_longest_task_is_planned_first(tmp_path):
    """Under a 400 W envelope only a few machines run at once: the task planned first starts
    first."""
    cap = tmp_path / "cap.csv"
    cap.write_text("time,watts\\n0,400\\n")
    settings = ("simulation.resources=50 CPU:4 Memory:4096",
                "tracefile.vm-resources=CPU:1 Memory:1",
                "power.pstates=1:95:95", "power.switch-on=360:125", "power.switch-off=360:100",
                "power.initial-state=off", "power.policy-node-power=switch-off-idle",
                f"power.power-cap={cap}", "planning.policy-planner=NAME",
                "planning.interval=360")
    rows, _ = replay(tmp_path, *settings, "SECTION.longest-first=yes")
    done = [row for row in rows if row["state"] == "done"]
    assert len(done) == len(rows) == 50
    longest = max(done, key=lambda row: float(row["actual"]))
    assert float(longest["start"]) == min(float(row["start"]) for row in done)
''', trace=TASK_TRACE),
}
