"""Files a user names as input: only regular files, and small ones where the file is small by
nature.

``imagefile = /dev/zero`` or ``sites-file = /dev/zero`` was read until the kernel killed the
process (23.7 GB): a device, a pipe or a folder is refused in one line, and so is a
configuration-sized file (an ini file, a series, a task list) larger than its cap.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: the largest text input that is not a trace (an ini file, a CSV series, a task or image list)
MAX_TEXT_INPUT_BYTES = 64 << 20


def input_problem(path: str | Path, limit: int | None = MAX_TEXT_INPUT_BYTES) -> str:
    """Why ``path`` is no input to read (not a regular file, larger than ``limit`` bytes), or
    "" (also for a missing file: opening it says so)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return ""
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
        return f"is {kind}, not a regular file"
    if limit is not None and info.st_size > limit:
        return f"is {info.st_size >> 20} MB, larger than the {limit >> 20} MB an input of " \
               "this kind may be"
    return ""
