"""Standard Workload Format (SWF) traces: reading them and turning jobs into leases.

The reader streams the file (plain or gzipped), parses the header directives (``; MaxNodes:
144``) and the 18 fields of every job, and reports a malformed line with its file, line and
field. :func:`swf_leases` (:mod:`~lease_manager.workload.swf_conversion`) applies the
conversion rules and filters of a replay.
"""

from __future__ import annotations

import collections
import io
import itertools
import math
import operator
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple

import attrs
import numpy as np

from lease_manager.errors import TraceError
from lease_manager.input_files import input_problem
from lease_manager.kernel.lease import Lease
from lease_manager.workload.swf_conversion import (
    AFTER_WINDOW,
    BEYOND_MAX_JOBS,
    STOPPING_FILTERS,
    SWFConversion,
    TraceStats,
    swf_leases,
)

__all__ = ["AFTER_WINDOW", "BEYOND_MAX_JOBS", "FIELDS", "MAX_FIELD", "MAX_LINE", "MAX_PROCS",
           "MIN_REQUESTED", "NUMERIC_DIRECTIVES", "STOPPING_FILTERS", "JobBlock", "SWFConversion",
           "SWFJob", "SWFReader", "TraceStats", "count_jobs", "open_text", "read_swf_leases",
           "swf_leases"]

#: The 18 SWF fields, in order, with the names used in error messages.
FIELDS = (
    ("job", "job number"),
    ("submit", "submit time"),
    ("wait", "wait time"),
    ("run_time", "run time"),
    ("allocated_procs", "allocated processors"),
    ("avg_cpu_time", "average CPU time"),
    ("used_memory", "used memory"),
    ("requested_procs", "requested processors"),
    ("requested_time", "requested time"),
    ("requested_memory", "requested memory"),
    ("status", "status"),
    ("user", "user id"),
    ("group", "group id"),
    ("executable", "executable number"),
    ("queue", "queue number"),
    ("partition", "partition number"),
    ("preceding_job", "preceding job number"),
    ("think_time", "think time after preceding job"),
)
#: header directives whose value is a number
NUMERIC_DIRECTIVES = ("MaxJobs", "MaxRecords", "UnixStartTime", "TimeZone", "MaxNodes",
                      "MaxProcs", "MaxRuntime", "MaxMemory", "MaxQueues", "MaxPartitions")


class SWFJob(NamedTuple):
    """One job line; ``-1`` means unknown, as in the format. ``line`` is its line number."""

    job: int
    submit: float
    wait: float
    run_time: float
    allocated_procs: int
    avg_cpu_time: float
    used_memory: float
    requested_procs: int
    requested_time: float
    requested_memory: float
    status: int
    user: int
    group: int
    executable: int
    queue: int
    partition: int
    preceding_job: int
    think_time: float
    line: int


@attrs.frozen
class JobBlock:
    """Consecutive jobs read together: ``values[i]`` holds the 18 fields of the job on line
    ``lines[i]``, as floats (the integer fields hold integers, exactly)."""

    values: np.ndarray   # (jobs, 18)
    lines: np.ndarray    # (jobs,)

    @classmethod
    def of(cls, jobs: list[SWFJob]) -> JobBlock:
        return cls(np.array([job[:_EIGHTEEN] for job in jobs], dtype=float),
                   np.array([job.line for job in jobs], dtype=np.int64))

    def rows(self, start: int, stop: int | None = None) -> JobBlock:
        """The jobs ``start`` to ``stop`` (excluded) of the block."""
        return JobBlock(self.values[start:stop], self.lines[start:stop])

    def jobs(self) -> Iterator[SWFJob]:
        """The block's jobs, one by one."""
        columns = self.values.T
        fields = columns.tolist()
        ints = columns[_INT_FIELDS, :].astype(np.int64).tolist()
        for i, values in zip(_INT_FIELDS, ints):
            fields[i] = values
        return map(tuple.__new__, itertools.repeat(SWFJob),
                   zip(*fields, self.lines.tolist()))


#: the largest magnitude a field may have (seconds: about 317 years)
MAX_FIELD = 1e10
#: the shortest requested time lease_manager plans, in seconds (smaller positive values are
#: refused: a reservation that short is empty in floating point)
MIN_REQUESTED = 1e-3
_REQUESTED_TIME = 8
#: the most processors a job may have or ask for (the largest machines have about ten million
#: cores); a job's VM count follows from it
MAX_PROCS = 10_000_000
_PROCS = (4, 7)
_INT_FIELDS = tuple(i for i, (name, _) in enumerate(FIELDS)
                    if name in ("job", "allocated_procs", "requested_procs", "status", "user",
                                "group", "executable", "queue", "partition", "preceding_job"))
_int_fields = operator.itemgetter(*_INT_FIELDS)
_EIGHTEEN = len(FIELDS)
#: what each ASCII character is in a job line: whitespace (as str.split() sees it), a digit,
#: a sign, a character of other numbers ('.', 'e', 'E') or one no number has
_SPACE, _DIGIT, _SIGN, _NUMBER, _OTHER = range(5)
_CHARACTER_KIND = np.array([_SPACE if chr(c).isspace() else _DIGIT if chr(c).isdigit()
                            else _SIGN if chr(c) in "+-" else _NUMBER if chr(c) in ".eE"
                            else _OTHER for c in range(128)], dtype=np.uint8)
#: powers of ten for the digits of a field (a longer field goes line by line)
_POWERS = 10.0 ** np.arange(64)
#: lines read and parsed together (the progress position moves on after each chunk)
_CHUNK = 4096
#: the longest line read: far above any SWF record (18 numbers) or header comment. A 92 KB
#: .swf.gz holding one line of hundreds of MB was read whole (657 MB) before being refused.
MAX_LINE = 65536
#: the most characters read into one chunk: 4,096 lines of ordinary records are about 400 K,
#: but 4,096 lines just under :data:`MAX_LINE` were 268 MB
_CHUNK_CHARS = 1 << 20


def _read_lines(fh: IO[str], count: int, first: int, file: str,
                lines: list[str] | None = None) -> bool:
    """Read up to ``count`` lines of ``fh``, and fewer once they hold :data:`_CHUNK_CHARS`
    characters, appending them to ``lines`` (a read error leaves it holding the lines read
    before), the first being line ``first``. True when the file ended. :class:`TraceError`
    for a line longer than :data:`MAX_LINE` characters."""
    lines = [] if lines is None else lines
    readline, append = fh.readline, lines.append
    start, chars = len(lines), 0
    for _ in range(count):
        line = readline(MAX_LINE)
        if not line:
            return True
        # refused at its first piece: a chunk of pieces of one long line held 207 MB
        if len(line) >= MAX_LINE and line[-1] != "\n":
            raise TraceError(f"the line is longer than {MAX_LINE:,} characters (an SWF "
                             f"record is 18 numbers)", file=file,
                             line=first + len(lines) - start)
        append(line)
        chars += len(line)
        if chars >= _CHUNK_CHARS:
            break
    return False


def open_text(path: str | Path) -> IO[str]:
    """Open a trace as text, decompressing ``.gz`` files."""
    path = Path(path)
    problem = input_problem(path, limit=None)
    if problem:
        raise TraceError(f"the trace {problem}", file=str(path))
    try:
        raw = path.open("rb")
    except FileNotFoundError:
        raise TraceError("trace file not found", file=str(path)) from None
    except OSError as exc:
        raise TraceError(f"cannot open trace file: {exc.strerror}", file=str(path)) from None
    if raw.read(2) == b"\x1f\x8b":
        import gzip

        raw.seek(0)
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8", errors="replace")
    raw.seek(0)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


def count_jobs(path: str | Path) -> int:
    """The number of job lines of an SWF trace (neither empty nor comments), read quickly
    without parsing them: the total of a progress bar."""
    total, first = 0, 1
    with open_text(path) as fh:
        while True:
            lines: list[str] = []
            ended = _read_lines(fh, _CHUNK, first, str(path), lines)
            total += sum(1 for line in lines if line.strip() and not line.lstrip().startswith(";"))
            first += len(lines)
            if ended:
                return total


class SWFReader:
    """Streams the jobs of an SWF file; header directives are collected as they are read.

    With ``skip_bad_lines`` a malformed line is recorded in :attr:`bad_lines` and skipped;
    otherwise it raises :class:`TraceError`.
    """

    def __init__(self, path: str | Path, *, skip_bad_lines: bool = False) -> None:
        self.path = str(path)
        self.skip_bad_lines = skip_bad_lines
        #: directive -> every value given (``Queue`` and ``Information`` repeat)
        self.header: dict[str, list[str]] = collections.defaultdict(list)
        self.bad_lines: list[tuple[int, str]] = []
        #: bytes of the (compressed) file consumed so far, for progress bars
        self.position = 0
        self.size = Path(path).stat().st_size if Path(path).exists() else 0
        self._fh = open_text(path)

    def directive(self, name: str) -> int | float | None:
        """The number a numeric header directive gives (its first value), or None."""
        values = self.header.get(name)
        if not values:
            return None
        # [0-9], not \d: \d also matches other scripts' digits, which float() would read
        m = re.match(r"\s*(-?[0-9]+(?:\.[0-9]+)?)(?![0-9A-Za-z_.])", values[0], re.ASCII)
        if not m:
            return None
        number = float(m.group(1))
        return int(number) if number.is_integer() else number

    def _bad(self, line: int, message: str, field: str | None = None) -> None:
        if self.skip_bad_lines:
            self.bad_lines.append((line, f"{field}: {message}" if field else message))
            return
        raise TraceError(message, file=self.path, line=line, field=field)

    def jobs(self) -> Iterator[SWFJob]:
        """The jobs, in file order."""
        for block in self.blocks():
            yield from block.jobs()

    def blocks(self) -> Iterator[JobBlock]:
        """The jobs, in file order, as blocks of consecutive jobs read together (none empty)."""
        raw = getattr(self._fh, "buffer", None)
        fh = self._fh
        read = 0   # lines read so far
        with fh:
            while True:
                # lines are read in chunks and parsed together (see _chunk); a read error is
                # raised once the lines read before it are through, as if read one by one
                chunk: list[str] = []
                failure: Exception | None = None
                ended = False
                try:
                    ended = _read_lines(fh, _CHUNK, read + 1, self.path, chunk)
                except (EOFError, OSError, zlib.error) as exc:   # a damaged .gz
                    failure = exc
                if not ended and failure is None and raw is not None:
                    self.position = _raw_position(raw)
                yield from self._chunk(chunk, read + 1)
                read += len(chunk)
                if failure is not None:
                    raise TraceError(f"cannot read on after line {read}: the compressed "
                                     f"file is truncated or damaged ({failure})", file=self.path,
                                     line=read + 1) from None
                if ended:
                    break
        self.position = self.size

    def _chunk(self, lines: list[str], first: int) -> Iterator[JobBlock]:
        """The jobs of consecutive ``lines`` (the first is line ``first``), in order, with the
        header directives among them recorded where they come."""
        texts = list(map(str.strip, lines))
        if not texts:
            return iter(())
        if "" not in texts and ";" not in "".join(texts):   # job lines only (mostly)
            return self._run(texts, first)
        return self._chunk_with_comments(texts, first)

    def _chunk_with_comments(self, texts: list[str], first: int) -> Iterator[JobBlock]:
        start = 0   # of the job lines not parsed yet
        for i, stripped in enumerate(texts):
            if stripped and stripped[0] != ";":
                continue
            if start < i:
                yield from self._run(texts[start:i], first + start)
            start = i + 1
            if stripped:
                key, sep, value = stripped[1:].partition(":")
                if sep and key.strip() and " " not in key.strip():
                    self.header[key.strip()].append(value.strip())
        if start < len(texts):
            yield from self._run(texts[start:], first + start)

    def _run(self, texts: list[str], first: int) -> Iterator[JobBlock]:
        """The jobs of consecutive job lines (stripped, neither empty nor comments), read
        together (:func:`_numbers`) and checked as :meth:`_parse` checks them; a line those
        checks refuse, and every line when the run has a line without 18 fields or a field
        :func:`_numbers` does not read as float() does, goes through :meth:`_parse` in its
        turn, which reports it. (A plain iterator when every line is read together.)"""
        text = "\n".join(texts)
        v = None
        # (as in _parse: float() also reads '٣', '1_000', 'nan' and 'inf')
        if text.isascii() and "_" not in text and "n" not in text and "N" not in text:
            v = _numbers(text, len(texts))
        if v is None:
            return self._one_by_one(texts, first)
        ints = v[:, _INT_FIELDS]
        requested = v[:, _REQUESTED_TIME]
        # the checks of _parse, line by line (no value is a nan: no 'n' in the text)
        bad = ((np.abs(v) > MAX_FIELD).any(axis=1) | (ints != np.floor(ints)).any(axis=1)
               | ((0 < requested) & (requested < MIN_REQUESTED))
               | (np.maximum(v[:, 4], v[:, 7]) > MAX_PROCS))
        lines = np.arange(first, first + len(texts))
        if not bad.any():
            return iter((JobBlock(v, lines),))
        return self._around_refused(texts, JobBlock(v, lines), np.flatnonzero(bad).tolist())

    def _around_refused(self, texts: list[str], block: JobBlock, refused: list[int]
                        ) -> Iterator[JobBlock]:
        """The jobs of a run read together but for the lines ``refused`` (indices), which
        :meth:`_parse` reports in their turn: the jobs before each come first."""
        start = 0
        for k in refused:
            if start < k:
                yield block.rows(start, k)
            job = self._parse(texts[k], int(block.lines[k]))
            if job is not None:
                yield JobBlock.of([job])
            start = k + 1
        if start < len(texts):
            yield block.rows(start)

    def _one_by_one(self, texts: list[str], first: int) -> Iterator[JobBlock]:
        """The jobs of lines that :meth:`_parse` parses (or reports) one by one, as one block
        (the jobs before a line it raises for come first)."""
        jobs: list[SWFJob] = []
        for number, text in enumerate(texts, first):
            try:
                job = self._parse(text, number)
            except TraceError:
                if jobs:
                    yield JobBlock.of(jobs)
                raise
            if job is not None:
                jobs.append(job)
        if jobs:
            yield JobBlock.of(jobs)

    def _parse(self, text: str, number: int) -> SWFJob | None:
        parts = text.split()
        if len(parts) != 18:
            self._bad(number, f"expected 18 fields, found {len(parts)}")
            return None
        v = None
        # float() also reads '٣', '1_000', 'nan' and 'inf' (every spelling of the last two
        # has an n): such lines go to _explain, which says which field is wrong
        if text.isascii() and "_" not in text and "n" not in text and "N" not in text:
            try:
                v = list(map(float, parts))
            except ValueError:
                pass
        if (v is None or max(v) > MAX_FIELD or min(v) < -MAX_FIELD
                or not all(map(float.is_integer, _int_fields(v)))
                or 0 < v[_REQUESTED_TIME] < MIN_REQUESTED or max(v[4], v[7]) > MAX_PROCS):
            self._explain(parts, number)
            return None
        return SWFJob(int(v[0]), v[1], v[2], v[3], int(v[4]), v[5], v[6], int(v[7]), v[8],
                      v[9], int(v[10]), int(v[11]), int(v[12]), int(v[13]), int(v[14]),
                      int(v[15]), int(v[16]), v[17], number)

    def _explain(self, parts: list[str], number: int) -> None:
        """Report the first bad field of a line that did not parse."""
        for i, part in enumerate(parts):
            field = f"field {i + 1} ({FIELDS[i][1]})"
            try:
                if not part.isascii() or "_" in part:
                    raise ValueError(part)
                value = float(part)
            except ValueError:
                self._bad(number, f"{part!r} is not a number (ASCII digits, '.', 'e' and a "
                                  f"sign only)", field)
                return None
            if not math.isfinite(value):
                self._bad(number, f"{part!r} is not a finite number", field)
                return None
            if abs(value) > MAX_FIELD:
                self._bad(number, f"{part} is out of range (at most {MAX_FIELD:g} in size)",
                          field)
                return None
            if i in _PROCS and value > MAX_PROCS:
                self._bad(number, f"{part} is out of range (at most {MAX_PROCS:,} "
                                  f"processors)", field)
                return None
            if i == _REQUESTED_TIME and 0 < value < MIN_REQUESTED:
                self._bad(number, f"{part} s is below {MIN_REQUESTED:g} s, the shortest "
                                  f"duration lease_manager plans", field)
                return None
            if i in _INT_FIELDS and not value.is_integer():
                self._bad(number, f"{part!r} is not an integer", field)
                return None
        # every field reads as a number: the line itself holds something else (a non-ASCII
        # space between fields, say)
        self._bad(number, "the line holds characters other than ASCII digits, signs, '.', "
                          "'e' and spaces")
        return None


def _raw_position(raw: IO[bytes]) -> int:
    inner = getattr(raw, "fileobj", None)   # GzipFile: position in the compressed file
    try:
        return (inner or raw).tell()
    except (OSError, ValueError):
        return 0


def _numbers(text: str, lines: int) -> np.ndarray | None:
    """float() of every field of ``lines`` job lines joined by newlines (ASCII, without 'n'
    or '_'), a row per line; None if a line has not 18 fields or a field is not a number.

    A field of at most 15 digits, signed or not, is read from its digits (its value is an
    integer below 2**53: every partial sum is exact, and the float is the one float() makes,
    -0.0 for '-0' too); any other is read by float().
    """
    data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    kind = _CHARACTER_KIND[data]
    if (kind == _OTHER).any():
        return None   # (a character no number has: float() refuses the field)
    edges = np.diff((kind != _SPACE).view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    count = len(starts)
    if count != _EIGHTEEN * lines or (ends - starts).max() >= len(_POWERS):
        return None
    field_of = np.cumsum(edges[:-1] == 1, dtype=np.int32) - 1   # of every character
    before = field_of[np.flatnonzero(data == 10)] + 1   # fields before each newline
    if not (np.diff(before, prepend=0, append=count) == _EIGHTEEN).all():
        return None
    # a field of digits only, but for a sign in front
    digits = ends - starts - (kind[starts] == _SIGN)
    integer = (digits >= 1) & (digits <= 15)
    stray = np.flatnonzero(kind >= _SIGN)
    integer[field_of[stray[(kind[stray] != _SIGN) | (edges[stray] != 1)]]] = False
    at = np.flatnonzero(kind == _DIGIT)
    field = field_of[at]
    size = np.bincount(field, weights=(data[at] - 48) * _POWERS[ends[field] - 1 - at],
                       minlength=count)
    values = np.where(data[starts] == 45, -size, size)   # (45: '-')
    others = np.flatnonzero(~integer)
    if len(others):
        try:
            values[others] = [float(text[a:b]) for a, b in zip(starts[others].tolist(),
                                                                ends[others].tolist())]
        except ValueError:
            return None
    return values.reshape(lines, _EIGHTEEN)


def read_swf_leases(path: str | Path, conv: SWFConversion, *, skip_bad_lines: bool = False,
                    stats: TraceStats | None = None) -> list[Lease]:
    """Convenience: all leases of an SWF file as a list."""
    return list(swf_leases(SWFReader(path, skip_bad_lines=skip_bad_lines), conv, stats))

