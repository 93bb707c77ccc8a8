"""Task files (CSV): reading, errors naming the file, line and column, and a replay."""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import TraceError
from lease_manager.plugins import Plugins
from lease_manager.run import Run
from lease_manager.workload.tasks import is_task_file, read_tasks

VM = np.array([1.0, 0.0])


def write(tmp_path, text, name="tasks.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_tasks_with_defaults_and_their_own_power(tmp_path):
    path = write(tmp_path, "id,duration,watts,vms,submit\nA,3600,30,1,0\nB,1800,,2,5\n")
    one, two = read_tasks(path, VM)
    assert is_task_file(path) and not is_task_file(tmp_path / "t.swf")
    assert (one.id, one.source_id, one.submit, one.requested_duration, one.actual_duration,
            one.vms.count, one.extra) == (1, "A", 0, 3600, 3600, 1, {"watts": "30.0"})
    assert (two.id, two.source_id, two.submit, two.vms.count, two.extra) == (2, "B", 5, 2, {})
    assert one.origin == f"{path}:2"


def test_only_a_duration_is_needed(tmp_path):
    lease, = read_tasks(write(tmp_path, "duration\n60\n"), VM)
    assert (lease.source_id, lease.submit, lease.requested_duration, lease.vms.count) == (
        "1", 0, 60, 1)


@pytest.mark.parametrize("text, line, field, message", [
    ("duration,colour\n1,red\n", 1, None, "unknown column 'colour'"),
    ("id,submit\n1,0\n", 1, None, "no duration column"),
    ("", 1, None, "empty file"),
    ("duration\n0\n", 2, "duration", "0 is not in (0, 1e+12]"),
    ("duration,watts\n10,-5\n", 2, "watts", "-5 is not in [0, 1e+09]"),
    ("duration,vms\n10,1.5\n", 2, "vms", "1.5 is not a whole number"),
    ("duration,vms\n10,x\n", 2, "vms", "'x' is not a number"),
    ("duration,actual\n10,20\n", 2, "actual", "longer than the duration"),
    ("duration,submit\n10,5\n10,1\n", 3, "submit", "not in submit order"),
    ("duration,submit\n10\n", 2, None, "expected 2 fields, found 1"),
    ("duration,submit\n,1\n", 2, "duration", "missing"),
])
def test_bad_task_files_name_the_line_and_column(tmp_path, text, line, field, message):
    path = write(tmp_path, text)
    with pytest.raises(TraceError) as info:
        read_tasks(path, VM)
    err = info.value
    assert (err.file, err.line, err.field) == (str(path), line, field)
    assert message in str(err)
    assert "\n" not in str(err)


def test_a_task_file_is_replayed_as_best_effort_leases(tmp_path):
    path = write(tmp_path, "id,duration,watts\na,100,20\nb,50,\n")
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [
        "simulation.resources=1 CPU:4 Memory:1024", "power.pstates=1.0:95:95",
        f"tracefile.tracefile={path}"])
    run = Run(config, plugins)
    run.run()
    assert run.summary["leases_completed"] == 2
    assert run.summary["trace"]["jobs_replayed"] == 2
    assert run.summary["energy_it_joules"] == 95 * 100 + 20 * 100
