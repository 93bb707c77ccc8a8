"""Keep a stray debugging line of HiGHS off the process's standard output.

HiGHS 1.12.0, the version scipy 1.17 and 1.18 bundle, writes
``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();`` with C's
``puts`` when a new incumbent fails its check against the original model. It bypasses
HiGHS' logger, so ``disp=False`` cannot silence it, and it lands in whatever a user
redirected the standard output to (a summary, a JSON document). HiGHS 1.13 no longer
prints it: this filter can go once the scipy floor bundles 1.13 or later.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from collections.abc import Callable
from typing import IO, TypeVar

#: the line, exactly as HiGHS 1.12.0 prints it
DEBUG_LINE = "HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();"

T = TypeVar("T")


def _libc_flush() -> Callable[[], None] | None:
    """C's ``fflush(NULL)``, or None where the C library cannot be loaded by name."""
    if os.name != "posix":
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return lambda: libc.fflush(None)


_FLUSH = _libc_flush()


def without_debug_line(solve: Callable[[], T]) -> T:
    """``solve()``'s result. Whatever it writes to the standard output (file descriptor 1),
    C code's included, is written back after it, except :data:`DEBUG_LINE`."""
    return filtered_stdout(solve, lambda line: line.rstrip("\r\n") != DEBUG_LINE)


def filtered_stdout(call: Callable[[], T], keep: Callable[[str], bool]) -> T:
    """``call()``'s result. What it writes to the standard output (file descriptor 1, C
    code's included) is captured, and the lines ``keep`` accepts are written back after it,
    even if it raises."""
    sys.stdout.flush()
    if _FLUSH is not None:
        _FLUSH()
    with tempfile.TemporaryFile() as captured:
        saved = os.dup(1)
        os.dup2(captured.fileno(), 1)
        try:
            return call()
        finally:
            if _FLUSH is not None:
                _FLUSH()
            os.dup2(saved, 1)
            os.close(saved)
            _write_back(captured, keep)


def _write_back(captured: IO[bytes], keep: Callable[[str], bool]) -> None:
    """Write the lines of ``captured`` that ``keep`` accepts to the standard output."""
    captured.seek(0)
    text = captured.read().decode(errors="replace")
    kept = "".join(line for line in text.splitlines(keepends=True) if keep(line))
    if kept:
        sys.stdout.write(kept)
        sys.stdout.flush()
