"""``lm-greenpar-workload``: a day of a log, its jobs mapped to NPB applications by run-time
rank in GreenPar's Grid5k proportions."""

from __future__ import annotations

from lease_manager.kernel.resources import ResourceTypes
from lease_manager.workload.lwf import read_lwf
from lm_greenpar.workload import GRID5K_MIX, apportion, day_of, main, map_by_runtime

#: SWF lines: job, submit, wait, run time, procs, cpu, mem, requested procs (nodes here),
#: requested time, then 9 fields
SWF = """\
1 100 0 300 8 -1 -1 1 600 -1 1 1 1 -1 1 -1 -1 -1
2 200 0 300 16 -1 -1 2 600 -1 1 1 1 -1 1 -1 -1 -1
3 300 0 100 32 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1
4 400 0 200 16 -1 -1 2 600 -1 1 1 1 -1 1 -1 -1 -1
5 500 0 400 64 -1 -1 8 600 -1 1 1 1 -1 1 -1 -1 -1
6 90000 0 300 16 -1 -1 2 600 -1 1 1 1 -1 1 -1 -1 -1
"""


def test_the_grid5k_mix_of_26_jobs_is_the_papers():
    assert apportion(GRID5K_MIX, 26) == (["IS"] + ["MG"] * 3 + ["EP"] + ["CG"] * 2
                                         + ["FT"] * 12 + ["LU"] * 6 + ["SP"])


def test_apportion_by_largest_remainder():
    """61 jobs: quotas FT 28.15, LU 14.08, MG 7.04, CG 4.69, SP/EP/IS 2.35 each; floors make
    59, the 2 left go to CG (0.69) and SP (0.35, listed before EP and IS in the mix)."""
    apps = apportion(GRID5K_MIX, 61)
    assert {a: apps.count(a) for a in set(apps)} == {"IS": 2, "MG": 7, "EP": 2, "CG": 5,
                                                    "FT": 28, "LU": 14, "SP": 3}


def test_a_day_mapped_by_run_time(tmp_path):
    """Jobs 2-5 (submitted 200-500 s, at least 2 nodes; job 1 asks for 1, job 6 is the next
    day) from 100 s: run times 300, 100, 200, 400 s. With half FT, half IS the two shortest
    (jobs 3 and 4) are IS, the others FT. The tool writes them, with their applications, as
    an LWF file."""
    swf = tmp_path / "log.swf"
    swf.write_text(SWF)
    leases = day_of(swf, 100)
    assert [(l.source_id, l.submit, l.vms.count) for l in leases] == [
        ("2", 100, 2), ("3", 200, 4), ("4", 300, 2), ("5", 400, 8)]
    map_by_runtime(leases, (("FT", 1), ("IS", 1)))
    assert [l.extra["app"] for l in leases] == ["FT", "IS", "IS", "FT"]
    out = tmp_path / "day.lwf"
    assert main([str(swf), "--start", "100", "--out", str(out)]) == 0
    # the Grid5k mix for 4 jobs: FT 1.85, LU 0.92, MG 0.46 ...: 2 FT, 1 LU, 1 MG (largest
    # remainders), shortest first: MG (job 3), FT (4), FT (2), LU (5)
    read = list(read_lwf(out, ResourceTypes(("CPU", "Memory"))).leases)
    assert [l.extra["app"] for l in read] == ["FT", "MG", "FT", "LU"]


def test_an_empty_day_is_one_line(tmp_path, capsys):
    swf = tmp_path / "log.swf"
    swf.write_text(SWF)
    assert main([str(swf), "--start", "200000", "--out", str(tmp_path / "x.lwf")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no job of at least 2 nodes" in err
