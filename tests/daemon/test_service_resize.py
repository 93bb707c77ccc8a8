"""A real-time daemon with the ``process`` backend carries out a malleable lease's resizes:
VM processes are started and stopped as the allocation policy grows and shrinks the lease,
and the lease's history says ``resized: V VMs on n nodes (was ...)`` at each resize."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from lease_manager import Allocation, AllocationPolicy, hookimpl
from lease_manager.kernel.lease import VMRequest
from lease_manager.plugins import Plugins

from daemon_support import ThreadDaemon, kill_leftover_processes, wait_for, write_config

#: how late (wall seconds) a process may start or stop on a loaded 2-core machine
TOLERANCE = 1.0
#: single-server seconds per second with 1, 2 and 4 VMs (one VM a node)
RATE = {1: 1.2, 2: 2.0, 4: 3.0}


def shape(vms: int) -> Allocation:
    """``vms`` VMs of one core: one a node on the site's 1-core nodes."""
    return Allocation(VMRequest.uniform(vms, [1.0, 256.0]), RATE[vms], RATE[2])


class GrowThenShrink(AllocationPolicy):
    """Starts a lease on 2 VMs; at its first epoch 1 s or more after its start, 4 VMs; at its
    first epoch 2 s or more after its start, 1 VM."""

    name = "test-grow-then-shrink"

    def initial(self, lease, now):
        return shape(2)

    def reallocate(self, now, reasons):
        for lease in self.ctx.scheduler.running():
            if lease.malleable is None or lease.start is None:
                continue
            elapsed = now - lease.start
            if lease.vms.count == 2 and elapsed >= 1:
                yield lease, shape(4)
            elif lease.vms.count == 4 and elapsed >= 2:
                yield lease, shape(1)


class _Plugin:
    @hookimpl
    def register_policies(self):
        return [GrowThenShrink]


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def vm_log(path: Path) -> dict[tuple[str, int], float]:
    """``{("start" or "stop", VM index): wall time}`` from the VMs' log lines."""
    out = {}
    for line in path.read_text().splitlines():
        what, index, when = line.split()
        assert (what, int(index)) not in out, f"{what} {index} twice"
        out[what, int(index)] = float(when)
    return out


def test_a_resized_lease_starts_and_stops_vm_processes_and_writes_its_history(tmp_path):
    """4 nodes of 1 core, real clock; epochs every second. The lease asks for 2 VMs for 6 s,
    so its work is 6 x 2 = 12 single-server seconds. t = seconds from its start; t1, t2 the
    epochs of the two resizes (t1 >= 1, t2 >= 2: the epochs fall where they fall)::

        node 1 | VM 0 ...........................................................|
        node 2 | VM 1 ............|                  stopped at t2
        node 3 |                  | VM 2 ............|
        node 4 |                  | VM 3 ............|
               0                  t1                 t2                         end
        rate   2                  3                  1.2

    With t1 = 1 and t2 = 2: 2 + 3 = 5 done by t2, the other 7 at 1.2 take 5.83 s: the lease
    ends at 7.83 s. In general end = t2 + (12 - 2 t1 - 3 (t2 - t1)) / 1.2.
    """
    config = write_config(tmp_path, resources="4 CPU:1 Memory:1024", enactment="process",
                          extra="[process]\ncgroups = none\nstop-grace = 1\n"
                                "[malleable]\npolicy-allocation = test-grow-then-shrink\n"
                                "epoch = 1\n")
    out = tmp_path / "vms.log"
    command = (f'echo "start $LM_VM_INDEX $(date +%s.%N)" >> {out}; '
               f'trap \'echo "stop $LM_VM_INDEX $(date +%s.%N)" >> {out}; exit 0\' TERM; '
               f'while true; do sleep 0.1; done')
    plugins = Plugins(extra=[_Plugin()])
    try:
        with ThreadDaemon(config, plugins=plugins) as td:
            lease = td.client.submit({"duration": 6, "nodes": 2, "cpu": 1, "memory": 256,
                                      "command": command})
            assert lease["state"] == "active"
            done = wait_for(lambda: (v := td.client.lease(lease["id"]))["state"] == "done"
                            and v, 20, what="the lease to end")
            # the last VM's TERM trap writes its line after the lease ended
            wait_for(lambda: out.read_text().count("stop") == 4, 5, what="4 VMs stopped")
    finally:
        kill_leftover_processes(config, plugins)

    history = done["history"]
    start = epoch(next(h["time"] for h in history if h["to"] == "active"))
    resized = [h for h in history if h["detail"].startswith("resized")]
    assert [h["detail"] for h in resized] == ["resized: 4 VMs on 4 nodes (was 2 on 2)",
                                              "resized: 1 VMs on 1 nodes (was 4 on 4)"]
    assert all(h["from"] == h["to"] == "active" for h in resized)
    t1, t2 = (epoch(h["time"]) - start for h in resized)
    # the first epochs at or after 1 s and 2 s (one a second), late by at most TOLERANCE
    assert 1 <= t1 < 2 + TOLERANCE and t1 < t2 and 2 <= t2 < t1 + 1 + TOLERANCE
    end = epoch(history[-1]["time"]) - start
    assert history[-1]["to"] == "done"
    assert abs(end - (t2 + (12 - 2 * t1 - 3 * (t2 - t1)) / 1.2)) < 0.01

    # the processes: VMs 0-1 from the start, 2-3 from t1, 1-3 stopped at t2, 0 at the end
    log = {key: when - start for key, when in vm_log(out).items()}
    assert set(log) == {(w, i) for w in ("start", "stop") for i in range(4)}
    for index in (0, 1):
        assert 0 <= log["start", index] < TOLERANCE
    for index in (2, 3):
        assert t1 <= log["start", index] < t1 + TOLERANCE
    for index in (1, 2, 3):
        assert t2 <= log["stop", index] < t2 + TOLERANCE
    assert end <= log["stop", 0] < end + TOLERANCE
