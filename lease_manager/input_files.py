"""Files a user names as input: only regular files, and small ones where the file is small by
nature.

``imagefile = /dev/zero`` or ``sites-file = /dev/zero`` was read until the kernel killed the
process (23.7 GB): a device, a pipe or a folder is refused in one line, and so is a
configuration-sized file (an ini file, a series, a task list) larger than its cap.
"""

from __future__ import annotations

import csv
import os
import stat
from collections.abc import Callable, Iterator, Sequence
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


#: the longest line of a text input that is not a trace: far longer than any valid line (an
#: image file's line of 63 MB was taken whole, and quoted whole in the error message)
MAX_TEXT_LINE = 65536


def long_line(lines: Sequence[str], limit: int = MAX_TEXT_LINE) -> int:
    """The number (from 1) of the first of ``lines`` longer than ``limit`` characters, or 0."""
    if not lines or max(map(len, lines)) <= limit:
        return 0
    return next(i for i, line in enumerate(lines, 1) if len(line) > limit)


def long_line_message(limit: int = MAX_TEXT_LINE) -> str:
    return f"the line is longer than {limit:,} characters"


def csv_rows(lines: Sequence[str], fail: Callable[[str, int], Exception]) -> Iterator[list[str]]:
    """The CSV rows of ``lines``, after refusing a line longer than :data:`MAX_TEXT_LINE`;
    a line that is not CSV (a quoted field over the csv module's limit, across lines) is
    ``fail(message, line)`` instead of csv's error."""
    too_long = long_line(lines)
    if too_long:
        raise fail(long_line_message(), too_long)
    reader = csv.reader(lines)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise fail(f"not a CSV line: {exc}", reader.line_num) from None
        yield row
