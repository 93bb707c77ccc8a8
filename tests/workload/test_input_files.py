"""A file named as input that is a device, a pipe or a folder is refused in one line (``imagefile
= /dev/zero`` was read until the kernel killed the process), and so is an oversized ini, series
or task file."""

from __future__ import annotations

import os

import pytest

from lease_manager.errors import InputError
from lease_manager.input_files import input_problem
from lease_manager.plugins import Plugins
from lease_manager.run import load_run

from support import TRACES


def test_what_is_refused(tmp_path):
    assert input_problem(TRACES / "sdsc-blue-600requests.swf") == ""
    assert input_problem(tmp_path / "missing") == ""          # opening it says so
    assert input_problem("/dev/zero") == "is a device, pipe or socket, not a regular file"
    assert input_problem(tmp_path) == "is a folder, not a regular file"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert input_problem(fifo) == "is a device, pipe or socket, not a regular file"
    big = tmp_path / "big.csv"
    with big.open("wb") as fh:
        fh.truncate(65 << 20)                                  # sparse: no 65 MB written
    assert input_problem(big) == "is 65 MB, larger than the 64 MB an input of this kind may be"
    assert input_problem(big, limit=None) == ""


@pytest.mark.parametrize("option, message", [
    ("tracefile.imagefile=/dev/zero",
     "/dev/zero: the image file is a device, pipe or socket, not a regular file"),
    ("tracefile.tracefile=/dev/zero",
     "--set: [tracefile] tracefile: /dev/zero is a device, pipe or socket, not a regular "
     "file"),
])
def test_a_device_as_input_is_one_line(option, message):
    with pytest.raises(InputError) as caught:
        load_run(None, ["simulation.resources=4 CPU:1 Memory:1024",
                        f"tracefile.tracefile={TRACES / 'sdsc-blue-600requests.swf'}",
                        "tracefile.vm-resources=CPU:1 Memory:1024", option],
                 plugins=Plugins(entry_points=False)).run()
    assert str(caught.value) == message


def _readers():
    """Every reader of a text input that is not a trace, as ``(header, read(path))``."""
    import numpy as np

    from lease_manager.config.schema import read_ini, read_sites_file
    from lease_manager.energy.forecast import read_forecast
    from lease_manager.energy.series import read_step_series
    from lease_manager.workload.overheads import read_image_file
    from lease_manager.workload.tasks import iter_tasks

    schema = Plugins(entry_points=False).schema
    return {
        "image file": ("img 10", read_image_file),
        "sites file": ("name,resources", lambda p: read_sites_file(p, schema)),
        "task file": ("id,submit,duration", lambda p: list(iter_tasks(p, np.ones(2)))),
        "series": ("time,watts", lambda p: read_step_series(p, "watts")),
        "forecast": ("issued,time,watts", lambda p: read_forecast(p, maximum=1e9)),
        "ini file": ("[simulation]", lambda p: read_ini(p, "configuration file")),
    }


@pytest.mark.parametrize("kind", sorted(_readers()))
def test_a_line_longer_than_any_valid_one_is_refused_naming_it(tmp_path, kind):
    """A 63 MB image file of one line was taken whole (366 MB) and quoted whole in the error;
    a sites file of one long line ended in csv's traceback. Every such reader refuses a line
    over 65,536 characters with the file and the line."""
    header, read = _readers()[kind]
    path = tmp_path / "input.txt"
    path.write_text(header + "\n" + "# " + "9" * 70_000 + "\n")
    with pytest.raises(InputError) as caught:
        read(path)
    assert str(caught.value) == f"{path}:2: the line is longer than 65,536 characters"


def test_a_quoted_csv_field_over_the_csv_limit_is_one_line(tmp_path):
    """Lines of 1,000 characters, but one quoted field across 200 of them: csv's own error
    (field larger than field limit) was a traceback."""
    from lease_manager.config.schema import read_sites_file

    path = tmp_path / "sites.csv"
    path.write_text('name,resources\n"' + ("a" * 1000 + "\n") * 200 + '",1 CPU:1\n')
    with pytest.raises(InputError) as caught:
        read_sites_file(path, Plugins(entry_points=False).schema)
    assert str(caught.value) == (f"{path}:133: not a CSV line: field larger than field limit "
                                 "(131072)")
