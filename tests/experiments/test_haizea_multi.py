"""Haizea's multi-configuration files (``[multi]``) run as sweeps."""

from __future__ import annotations

import json

import pytest

from lease_manager.config.haizea import ConfigErrors
from lease_manager.experiments.sweep import run_sweep_file
from lease_manager.experiments.sweep_file import load_sweep
from lease_manager.plugins import Plugins

LWF = """<?xml version="1.0"?>
<lease-workload name="{name}">
  <site><resource-types names="CPU Memory"/>
    <nodes><node-set numnodes="2">
      <res type="CPU" amount="100"/><res type="Memory" amount="1024"/>
    </node-set></nodes>
  </site>
  <lease-requests>{requests}
  </lease-requests>
</lease-workload>
"""
REQUEST = """
    <lease-request arrival="{arrival}"><lease id="{id}" preemptible="true">
      <nodes><node-set numnodes="{n}">
        <res amount="100" type="CPU"/><res amount="1024" type="Memory"/>
      </node-set></nodes>
      {start}<duration time="00:10:00.00"/><software><none/></software>
    </lease></lease-request>"""

MULTI = """[multi]
tracedir: traces
tracefiles: small.lwf
injectiondir: traces
injectionfiles: ar.lwf
datadir: /var/tmp/haizea

[common:general]
mode: simulated
lease-preparation: unmanaged

[common:simulation]
resources: in-tracefile

[common:scheduling]
suspension: none

[common:accounting]
probes: best-effort

[fcfs:scheduling]
backfilling: off

[easy:scheduling]
backfilling: aggressive
"""


@pytest.fixture
def multi(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    be = "".join(REQUEST.format(arrival="00:00:00", id=i, n=n, start="<start/>")
                 for i, n in ((1, 2), (2, 1)))
    (traces / "small.lwf").write_text(LWF.format(name="small", requests=be))
    ar = REQUEST.format(arrival="00:00:00", id=9, n=1,
                        start='<start><exact time="00:05:00"/></start>')
    (traces / "ar.lwf").write_text(LWF.format(name="ar", requests=ar))
    path = tmp_path / "multi.conf"
    path.write_text(MULTI)
    return path


def test_a_multi_file_is_a_sweep_of_profiles_traces_and_injections(multi):
    """Two profiles, one trace, one injection file (and none, as Haizea runs): four runs."""
    sweep = load_sweep(multi, Plugins(entry_points=False))
    assert sweep.profiles == ("fcfs+ar", "fcfs", "easy+ar", "easy")
    assert [r.run_id for r in sweep.runs] == [
        "fcfs+ar/small.lwf/seed-0", "fcfs/small.lwf/seed-0", "easy+ar/small.lwf/seed-0",
        "easy/small.lwf/seed-0"]
    fcfs_ar = sweep.runs[0]
    assert "scheduling.backfilling=off" in fcfs_ar.overrides
    assert "scheduling.policy-preemption=no-preemption" in fcfs_ar.overrides   # Haizea's
    assert any(o.startswith("tracefile.injectionfile=") and o.endswith("ar.lwf")
               for o in fcfs_ar.overrides)


def test_a_multi_file_runs(multi, tmp_path):
    """Every run runs: the injected AR (1 node, 5:00-15:00) is accepted beside the two
    best-effort leases."""
    runs = run_sweep_file(multi, tmp_path / "out", plugins=Plugins(entry_points=False))
    assert len(runs) == 4
    summary = json.loads((tmp_path / "out" / "easy+ar" / "small.lwf" / "seed-0" /
                          "summary.json").read_text())
    assert summary["leases_total"] == 3 and summary["ar_accepted"] == 1


def test_every_error_of_a_multi_file_at_once(multi):
    text = (MULTI.replace("backfilling: off", "backfilling: of")
                 .replace("backfilling: aggressive", "backfiling: aggressive"))
    multi.write_text(text)
    with pytest.raises(ConfigErrors) as info:
        load_sweep(multi, Plugins(entry_points=False))
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("[scheduling] backfilling: profile 'fcfs': 'of' is not one of "
                             "off, aggressive, conservative, intermediate (did you mean 'off'?)")
    assert "backfiling" in lines[1] and "did you mean 'backfilling'" in lines[1]


def test_simulate_points_a_multi_file_to_sweep(multi):
    from lease_manager.config.schema import load_config
    from lease_manager.errors import ConfigError

    with pytest.raises(ConfigError, match="is run with `lease-manager sweep`"):
        load_config(multi, Plugins(entry_points=False).schema)


PRE_09 = """[multi]
tracedir: traces
tracefiles: small.lwf
basedatadir: /var/tmp/haizea/results

[common:simulation]
nodes: 4
resources: CPU,1;Mem,1024;Net (in),100;Net (out),100;Disk,20000
suspendresume-rate: 50

[common:scheduling]
diskimage-transfer: none

[nobackfilling:scheduling]
backfilling: off
"""


def test_a_multi_file_from_before_haizea_09_is_one_line_saying_what_it_is(multi, capsys):
    """Haizea's Technology Previews wrote ``basedatadir``, ``nodes`` and ``CPU,1;Mem,1024``:
    one line at the first such option says so and what 1.0 calls each, instead of an error
    per option (or, earlier, ``simulate`` sending it to ``sweep``)."""
    from lease_manager.cli import main

    old = multi.with_name("old.conf")
    old.write_text(PRE_09)
    assert main(["sweep", str(old)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"lease-manager: error: {old}:4: [multi] basedatadir: a "
                             "multi-configuration file of Haizea before 0.9")
    assert "datadir for basedatadir" in err[0] and "lease-preparation" in err[0]
    # no [multi] basedatadir: the first of the others, in the file's order
    old.write_text(PRE_09.replace("basedatadir: /var/tmp/haizea/results\n", ""))
    assert main(["sweep", str(old)]) == 2
    assert f"{old}:6: [common:simulation] nodes:" in capsys.readouterr().err
