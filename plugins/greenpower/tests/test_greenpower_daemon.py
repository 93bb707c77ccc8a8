"""Kassab et al.'s orders as queue policies of the daemon, under a power envelope."""

from __future__ import annotations

import pytest

from daemon_support import ThreadDaemon, lwf, lwf_request, wait_for, write_config
from lmk_helpers import plugins

#: arrival order a, b, c: (duration, watts); p x phi: 40, 30, 50
TASKS = {"a": ("00:00:20", 2), "b": ("00:00:30", 1), "c": ("00:00:10", 5)}


@pytest.mark.parametrize(("queue", "order"), [("twoqs", "cba"), ("lptpn", "cab"),
                                             ("fcfs", "abc")])
def test_orders_under_the_daemon(tmp_path, queue, order):
    """One core under a 1,000 W envelope file, booted for the first task (5 s), the three
    tasks submitted together in one LWF document and run one after another in the queue's
    order (conservative backfilling), at 600 x real time.
    LPTPN: c (50), a (40), b (30). LPT: b (30 s), a (20 s), c (10 s).
    twoqs, LPTPN and LPT in turn: c, b, then a.   lptpn: c, a, b.   fcfs: a, b, c.
    """
    cap = tmp_path / "cap.csv"
    cap.write_text("time,watts\n0,1000\n")
    config = write_config(tmp_path, resources="1 CPU:1 Memory:1024", speedup=600.0,
                          extra=f"""
[power]
pstates = 1:10:10
switch-on = 5:20
switch-off = 1:15
initial-state = off
policy-node-power = switch-off-idle
look-ahead = yes
power-cap = {cap}
""")
    config.write_text(config.read_text().replace(
        "[scheduling]\n",
        f"[scheduling]\npolicy-queue = {queue}\nbackfilling = conservative\n"))
    requests = [lwf_request(name, duration=duration,
                            extra=f'<extra><attr name="watts" value="{watts}"/></extra>')
                for name, (duration, watts) in TASKS.items()]
    with ThreadDaemon(config, plugins=plugins()) as td:
        assert len(td.client.submit_lwf(lwf(*requests).encode())) == 3

        def finished():
            leases = td.client.leases()
            return leases if all(l["state"] == "done" for l in leases) else None

        leases = wait_for(finished, what="the three tasks to finish")
    starts = sorted((l["start"], l["name"]) for l in leases)
    assert "".join(name for _, name in starts) == order
