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
