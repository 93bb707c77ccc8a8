"""HiGHS 1.12.0's stray debugging line is kept off the standard output; nothing else is."""

import ctypes
import os

import pytest

from lm_greenpar.solver_output import DEBUG_LINE, without_debug_line

pytestmark = pytest.mark.skipif(os.name != "posix", reason="C's puts through ctypes")


def c_puts(text: str) -> None:
    """Print as HiGHS does: C's ``puts``, buffered by the C library, not by Python."""
    ctypes.CDLL(None).puts(text.encode())


def test_the_debug_line_is_dropped_and_other_c_and_python_output_kept(capfd):
    def solve():
        c_puts("before")
        c_puts(DEBUG_LINE)
        print("from python", flush=True)
        c_puts(DEBUG_LINE + " and more")   # not the line: kept
        return 42

    assert without_debug_line(solve) == 42
    out = capfd.readouterr().out
    assert sorted(out.splitlines()) == sorted(["before", "from python", DEBUG_LINE + " and more"])


def test_output_before_a_failure_is_kept_and_the_descriptor_restored(capfd):
    def solve():
        c_puts("partial")
        c_puts(DEBUG_LINE)
        raise RuntimeError("solver failed")

    fd_target = os.readlink("/proc/self/fd/1") if os.path.exists("/proc/self/fd/1") else None
    with pytest.raises(RuntimeError, match="solver failed"):
        without_debug_line(solve)
    if fd_target is not None:
        assert os.readlink("/proc/self/fd/1") == fd_target
    print("after", flush=True)
    assert capfd.readouterr().out == "partial\nafter\n"
