"""Test helpers: paths, and sites, leases and runs for hand-computed scenarios.

Imported by test modules as ``from support import ...`` (pytest puts ``tests/`` on the path)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from lease_manager.config.schema import load_config
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest
from lease_manager.plugins import Plugins
from lease_manager.run import Run

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"

#: ``LM_LONG=1``: the long profile (tests marked ``long``, and the long fuzz), as CI runs it
LONG = os.environ.get("LM_LONG") == "1"
#: cases per fuzzed format: 300, 3,000 in the long profile; ``LM_FUZZ_CASES`` sets it
FUZZ_CASES = int(os.environ.get("LM_FUZZ_CASES", "3000" if LONG else "300"))
SHARED_TRACES = ROOT.parent / "shared" / "traces"
MIN = 60
HOUR = 3600


def be(lease_id: int, vms: int, duration: float, submit: float, *, actual: float | None = None,
       cpu: float = 1, memory: float = 0) -> Lease:
    """A best-effort lease of ``vms`` identical VMs (CPU ``cpu``, Memory ``memory``)."""
    return Lease(lease_id, LeaseType.BEST_EFFORT, submit, VMRequest.uniform(vms, [cpu, memory]),
                 duration, duration if actual is None else actual)


def simulate(leases: Iterable[Lease], *settings: str, resources: str = "4 CPU:1 Memory:1024",
             plugins: Plugins | None = None) -> Run:
    """Run ``leases`` on a site to completion; ``settings`` are ``section.option=value``."""
    plugins = plugins or Plugins(entry_points=False)
    config = load_config(None, plugins.schema,
                         [f"simulation.resources={resources}", *settings])
    run = Run(config, plugins, leases=list(leases))
    run.run()
    run.table.check()
    return run


def times(run: Run, leases: Iterable[Lease]) -> dict[int, tuple[float, float]]:
    """``{lease id: (start, end)}`` of finished leases."""
    out = {}
    for lease in leases:
        assert lease.state is LeaseState.DONE, lease
        out[lease.id] = (lease.start, lease.end)
    return out


def five_leases():
    """#1 BE 2 nodes 1 h at 0:00, #2 BE 4 nodes 30 min at 0:01, #3 BE 2 nodes 30 min at 0:02,
    #4 BE 2 nodes 2 h at 0:03, #5 BE 1 node 20 min at 0:04."""
    return [be(1, 2, HOUR, 0), be(2, 4, 30 * MIN, 1 * MIN), be(3, 2, 30 * MIN, 2 * MIN),
            be(4, 2, 2 * HOUR, 3 * MIN), be(5, 1, 20 * MIN, 4 * MIN)]


def pip_install_target(sources: Iterable[Path], target: Path) -> Path:
    """``pip install`` package folders into ``target`` (offline, without build isolation or
    dependencies: what they need is this environment's); ``target``."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(target), *map(str, sources)],
                   check=True, capture_output=True)
    return target


def env_with(target: Path) -> dict[str, str]:
    """This process's environment with ``target`` (a ``pip --target`` folder) on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(target) + os.pathsep + env.get("PYTHONPATH", "")
    return env


#: a leases.csv header and six rows, one of each type and end state, on 4 nodes: the plots'
#: and the HTML report's tests draw them
LEASES_CSV_HEADER = ("lease_id,source_id,type,state,submit,start,end,vms,requested,actual,"
                     "wait,price,reason,nodes")
MIXED_LEASE_ROWS = [
    "1,,best-effort,done,0,0,3600,2,3600,3600,0,0,,0 1",
    "2,,advance-reservation,done,0,1800,5400,1,3600,3600,0,0,,3",
    "3,,best-effort,done,600,5400,7200,2,1800,1800,4800,0,,0 3",
    "4,,immediate,rejected,900,,,1,600,600,,0,no room,",
    "5,,best-effort,failed,1200,3600,4000,1,900,400,2400,0,,1",
    "6,,deadline,active,2000,4000,,1,9000,9000,2000,0,,2",
]


def lwf_request(lease_id: int, arrival: int, vms: int, seconds: int, *,
                runs: int | None = None, start: str = "<start/>", memory: int = 1024) -> str:
    """A preemptible LWF ``<lease-request>`` of ``vms`` VMs (CPU 100, ``memory`` MB) arriving
    at ``arrival`` s, asking ``seconds`` and running ``runs`` (``seconds`` if None)."""
    def hms(t: int) -> str:
        return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.00"
    return f"""
    <lease-request arrival="{hms(arrival)}">
      <realduration time="{hms(seconds if runs is None else runs)}"/>
      <lease id="{lease_id}" preemptible="yes">
        <nodes><node-set numnodes="{vms}">
          <res type="CPU" amount="100"/><res type="Memory" amount="{memory}"/>
        </node-set></nodes>
        {start}
        <duration time="{hms(seconds)}"/>
        <software><none/></software>
      </lease>
    </lease-request>"""


def write_lwf_requests(path: Path, *requests: str) -> Path:
    """``path`` written as an LWF workload of ``requests`` (from :func:`lwf_request`)."""
    path.write_text('<?xml version="1.0"?>\n<lease-workload name="t"><lease-requests>'
                    + "".join(requests) + "\n</lease-requests></lease-workload>\n")
    return path
