"""What the dashboard's state holds with ``[power]``: the power against the clock, the energy
so far, the nodes' power states as Gantt bars (no browser: ``GET /dashboard/state``)."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest

from daemon_support import ThreadDaemon, write_config


def _state(td: ThreadDaemon) -> dict[str, Any]:
    parts = urlsplit(td.daemon.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    conn.request("GET", f"/dashboard?code={td.daemon.access.new_code()}")
    redirect = conn.getresponse()
    redirect.read()
    cookie = redirect.getheader("Set-Cookie").split(";")[0]
    conn.request("GET", "/dashboard/state", headers={"Cookie": cookie})
    answer = conn.getresponse()
    body = answer.read()
    conn.close()
    assert answer.status == 200, body
    return json.loads(body)


def test_power_and_energy_of_one_lease_on_two_nodes(tmp_path: Any) -> None:
    """
    node-1  [lease 1: 1 VM of its 1 CPU, from s for 600 s]
    node-2  (idle)

    power: 2 x 100 W idle + 1/1 x (200 - 100) W = 300 W while the lease runs, 200 W after;
    the cap is 1,000 W all along. Energy from the daemon's start t0 to now:
    200 W x (now - t0) + 100 W x (now - s).
    """
    config = write_config(tmp_path, extra="[power]\npstates = 1.0:100:200\npower-cap = 1000")
    with ThreadDaemon(config) as td:
        view = td.client.submit({"duration": 600})
        assert view["state"] == "active"
        state = _state(td)
        lease = td.daemon.find(1)
        assert lease is not None
        power, now = state["power"], state["now"]
        assert power["now_watts"] == pytest.approx(300.0)
        t0 = td.daemon.run.started_at
        assert power["energy_joules"] == pytest.approx(
            200 * (now - t0) + 100 * (now - lease.start), rel=1e-9, abs=1e-6)
        steps = dict(zip(power["times"], power["watts"]))
        end = lease.reservations[0].end
        assert steps[round(end, 3)] == pytest.approx(200.0)       # the lease's end
        assert max(power["watts"]) == pytest.approx(300.0)
        assert set(power["cap"]) == {1000.0} and "green" not in power
        assert state["counters"]["utilisation"] == {"CPU": 0.5, "Memory": 0.25}


def test_nodes_off_and_booting_are_drawn_and_counted(tmp_path: Any) -> None:
    """Both nodes start off (booting takes 600 s at 150 W; off: 0 W); a lease of 60 s arrives
    at s: node-1 boots over [s, s + 600) and the lease is reserved from s + 600; node-2 stays
    off, with no boot planned (its bar has no end).

    power ahead: 150 W while node-1 boots, 100 + 100 W while the lease runs, 100 W after
    (node-1 idle; node-2 still off, not on once its rolling off reservation ends)."""
    config = write_config(tmp_path, extra="[power]\npstates = 1.0:100:200\n"
                                          "switch-on = 600:150\nswitch-off = 5:50\n"
                                          "initial-state = off\n"
                                          "policy-node-power = switch-off-idle")
    with ThreadDaemon(config, "scheduling.policy-host-selection=no-policy") as td:
        td.client.submit({"duration": 60})
        state = _state(td)
        nodes = state["nodes"]
        assert nodes["state"] == ["booting", "off"]
        assert nodes["counts"] == {"on": 0, "off": 1, "booting": 1, "shutting down": 0}
        kinds = {(n, kind): end for n, start, end, kind in state["plan"]["node_bars"]}
        assert kinds[1, "off"] is None                   # no boot planned on node-2
        boot = [b for b in state["plan"]["node_bars"] if b[3] == "boot"]
        assert [b[0] for b in boot] == [0]
        (lease_bar,) = state["plan"]["bars"]
        assert lease_bar[1] == 0 and lease_bar[4] == "reserved"
        assert lease_bar[2] == pytest.approx(boot[0][2])  # it starts when the boot ends
        power = state["power"]
        assert power["now_watts"] == pytest.approx(150.0)   # booting; off: 0 W
        # ahead: node-1 on with the lease (100 + 100 W), then idle (100 W); node-2 stays off
        steps = dict(zip(power["times"], power["watts"]))
        assert steps[round(lease_bar[2], 3)] == pytest.approx(200.0)
        assert steps[round(lease_bar[3], 3)] == pytest.approx(100.0)
        assert power["watts"][-1] == pytest.approx(100.0)


def test_green_production_over_the_past_and_the_plan_ahead(tmp_path: Any) -> None:
    """Green production of 400 W until an hour from now, 800 W after (a step series on the
    daemon's clock): the power chart's green series has both steps, at their times."""
    import time

    step = round(time.time()) + 3600
    (tmp_path / "green.csv").write_text(f"time,watts\n0,400\n{step},800\n")
    config = write_config(tmp_path, extra=f"[power]\npstates = 1.0:100:200\n"
                                          f"green-production = {tmp_path / 'green.csv'}")
    with ThreadDaemon(config) as td:
        power = _state(td)["power"]
        green = dict(zip(power["grid"], power["green"]))
        assert green[float(step)] == 800.0
        assert power["green"][0] == 400.0 and power["green"][-1] == 800.0
        assert "cap" not in power
