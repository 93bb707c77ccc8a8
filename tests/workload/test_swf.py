"""The SWF reader and the conversion of jobs into leases, on small hand-written traces."""

from __future__ import annotations

import gzip
import io
import math

import numpy as np
import pytest

from lease_manager.errors import TraceError
from lease_manager.kernel.lease import LeaseType
from lease_manager.workload.swf import (
    _CHUNK,
    SWFConversion,
    SWFJob,
    SWFReader,
    TraceStats,
    swf_leases,
)

VM = np.array([1.0, 1024.0])

HEADER = """\
; Version: 2.2
; Computer: IBM SP2
; MaxNodes: 144
; UnixStartTime: 956700003
; MaxProcs: 184  ( 6,  171,   7)
; Queue: 1 interactive
; Queue: 2 express
; Queue: 3 high
;
; a free-form comment line, not a directive
"""


def job(n: int, submit: float, run: float, alloc: int = 8, req_procs: int = -1,
        req_time: float = -1, *, queue: int = 1, wait: float = 0) -> str:
    """An SWF job line; fields not given are -1 (unknown)."""
    fields = [n, submit, wait, run, alloc, -1, -1, req_procs, req_time, -1, 1, 7, -1, -1,
              queue, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def write(tmp_path, *lines: str, name: str = "t.swf", header: str = "") -> str:
    path = tmp_path / name
    path.write_text(header + "".join(line + "\n" for line in lines))
    return str(path)


def convert(path: str, stats: TraceStats | None = None, **conv):
    conv.setdefault("vm_vector", VM)
    return list(swf_leases(SWFReader(path), SWFConversion(**conv), stats))


# ------------------------------------------------------------------------------ reader
def test_header_directives(tmp_path):
    path = write(tmp_path, job(1, 0, 10), header=HEADER)
    reader = SWFReader(path)
    jobs = list(reader.jobs())
    assert len(jobs) == 1
    assert reader.header["MaxNodes"] == ["144"]
    assert reader.header["Queue"] == ["1 interactive", "2 express", "3 high"]
    assert reader.header["Computer"] == ["IBM SP2"]
    assert reader.directive("MaxNodes") == 144
    assert isinstance(reader.directive("MaxNodes"), int)
    assert reader.directive("UnixStartTime") == 956700003
    assert reader.directive("MaxProcs") == 184
    assert reader.directive("Version") == 2.2
    assert reader.directive("MaxJobs") is None          # not in the header
    assert reader.directive("Computer") is None         # not a number
    assert "a free-form comment line, not a directive" not in reader.header


def test_a_header_directive_is_a_number_only_in_ascii_digits(tmp_path):
    """'٣' (an Arabic-Indic three) and '1_000' are not numbers in a header, as in the jobs."""
    header = "; MaxNodes: \u0663\n; MaxProcs: 1_000\n; MaxJobs: 12\n"
    reader = SWFReader(write(tmp_path, job(1, 0, 10), header=header))
    list(reader.jobs())
    assert reader.directive("MaxNodes") is None
    assert reader.directive("MaxProcs") is None
    assert reader.directive("MaxJobs") == 12


def test_all_eighteen_fields(tmp_path):
    line = "7 120 30 3600 16 3599.5 512.25 8 7200 1024 1 42 3 5 2 1 6 60"
    reader = SWFReader(write(tmp_path, "", "   " + line + "   "))
    [j] = list(reader.jobs())
    assert j == SWFJob(job=7, submit=120, wait=30, run_time=3600, allocated_procs=16,
                       avg_cpu_time=3599.5, used_memory=512.25, requested_procs=8,
                       requested_time=7200, requested_memory=1024, status=1, user=42, group=3,
                       executable=5, queue=2, partition=1, preceding_job=6, think_time=60,
                       line=2)
    assert isinstance(j.job, int) and isinstance(j.allocated_procs, int)
    assert isinstance(j.queue, int)
    assert j.avg_cpu_time == 3599.5 and j.used_memory == 512.25


def test_integer_fields_written_as_floats_are_accepted(tmp_path):
    [j] = list(SWFReader(write(tmp_path, job(1, 0, 10, alloc="8.0"))).jobs())
    assert j.allocated_procs == 8 and isinstance(j.allocated_procs, int)


def test_gzip_read_directly(tmp_path):
    path = tmp_path / "t.swf.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(HEADER + job(1, 0, 10) + "\n" + job(2, 5, 20, 16) + "\n")
    reader = SWFReader(path)
    jobs = list(reader.jobs())
    assert [(j.job, j.submit, j.run_time, j.allocated_procs) for j in jobs] == [
        (1, 0, 10, 8), (2, 5, 20, 16)]
    assert reader.directive("MaxNodes") == 144
    assert reader.position == reader.size == path.stat().st_size


def test_gzip_without_gz_suffix_detected_by_magic(tmp_path):
    path = tmp_path / "compressed.swf"
    path.write_bytes(gzip.compress((job(3, 0, 10) + "\n").encode()))
    assert [j.job for j in SWFReader(path).jobs()] == [3]


def test_missing_file(tmp_path):
    with pytest.raises(TraceError, match="not found") as info:
        SWFReader(tmp_path / "nope.swf")
    assert "nope.swf" in str(info.value)


# ---------------------------------------------------------------------- malformed lines
@pytest.mark.parametrize("bad, fragments", [
    ("1 0 0 10 8 -1 -1", ["expected 18 fields, found 7"]),
    ("1 0 0 ten 8 -1 -1 -1 -1 -1 1 7 -1 -1 1 -1 -1 -1", ["field 4 (run time)", "'ten'"]),
    ("1 0 0 10 8.5 -1 -1 -1 -1 -1 1 7 -1 -1 1 -1 -1 -1",
     ["field 5 (allocated processors)", "not an integer"]),
    ("1 0 0 10 8 -1 -1 -1 nan -1 1 7 -1 -1 1 -1 -1 -1", ["field 9 (requested time)"]),
    ("1 0 0 10 8 -1 -1 -1 -1 -1 1 7 -1 -1 q1 -1 -1 -1", ["field 15 (queue number)"]),
    # Unicode digits and underscores are not numbers here, though Python's float reads them
    ("1 \u0663 0 10 8 -1 -1 -1 -1 -1 1 7 -1 -1 1 -1 -1 -1", ["field 2 (submit time)",
                                                           "ASCII digits"]),
    ("1 0 0 1_000 8 -1 -1 -1 -1 -1 1 7 -1 -1 1 -1 -1 -1", ["field 4 (run time)",
                                                         "'1_000' is not a number"]),
    # out of range (a submit time of 1e16 s raised a traceback in the slot table)
    ("1 1e16 0 10 8 -1 -1 -1 -1 -1 1 7 -1 -1 1 -1 -1 -1", ["field 2 (submit time)",
                                                         "out of range"]),
    # a requested time too short to plan (1e-320 raised a traceback, 1e-9 gave an empty lease)
    ("1 0 0 10 8 -1 -1 -1 1e-320 -1 1 7 -1 -1 1 -1 -1 -1", ["field 9 (requested time)",
                                                          "below 0.001 s"]),
    ("1 0 0 10 8 -1 -1 -1 1e-9 -1 1 7 -1 -1 1 -1 -1 -1", ["field 9 (requested time)"]),
    # fields apart by a non-ASCII space: every field reads as a number, and the line was
    # dropped without a word
    ("1 0\u00a00 10 8 -1 -1 -1 -1 -1 1 7 -1 -1 1 -1 -1 -1", ["characters other than ASCII"]),
    ("1 0 0 10 8 -1 -1 -1 INF -1 1 7 -1 -1 1 -1 -1 -1", ["field 9 (requested time)",
                                                       "not a finite number"]),
    # a lease of 2^31 VMs (found by tests/test_fuzz_inputs.py)
    ("1 0 0 10 8 -1 -1 2147483648 -1 -1 1 7 -1 -1 1 -1 -1 -1",
     ["field 8 (requested processors)", "at most 10,000,000 processors"]),
])
def test_malformed_line_names_file_line_and_field(tmp_path, bad, fragments):
    path = write(tmp_path, job(1, 0, 10), bad, header="; MaxNodes: 4\n")
    with pytest.raises(TraceError) as info:
        list(SWFReader(path).jobs())
    message = str(info.value)
    assert message.startswith(f"{path}:3: ")
    assert info.value.file == path and info.value.line == 3
    for fragment in fragments:
        assert fragment in message


def test_skip_bad_lines(tmp_path):
    path = write(tmp_path, job(1, 0, 10), "1 2 3", job(2, 5, 10),
                 "3 9 0 x 8 -1 -1 -1 -1 -1 1 7 -1 -1 1 -1 -1 -1", job(4, 9, 10))
    reader = SWFReader(path, skip_bad_lines=True)
    stats = TraceStats()
    leases = list(swf_leases(reader, SWFConversion(vm_vector=VM), stats))
    assert [lease.source_id for lease in leases] == ["1", "2", "4"]
    assert [line for line, _ in reader.bad_lines] == [2, 4]
    assert "expected 18 fields, found 3" in reader.bad_lines[0][1]
    assert reader.bad_lines[1][1].startswith("field 4 (run time): ")
    assert stats.bad_lines == 2 and stats.as_dict()["bad_lines"] == 2


def test_out_of_submit_order(tmp_path):
    path = write(tmp_path, job(1, 100, 10), job(2, 200, 10), job(3, 150, 10))
    with pytest.raises(TraceError, match="not in submit order") as info:
        convert(path)
    assert info.value.line == 3
    assert str(info.value).startswith(f"{path}:3: field 2 (submit time): ")


def test_jobs_with_an_unknown_submit_time_are_skipped_and_not_in_the_order(tmp_path):
    """As in the archive's cleaned LLNL Thunder log, where 1,190 records have every field
    -1 but their number: such a job cannot be placed in time. It is skipped and counted,
    wherever it comes (first, between jobs, last), and the submit order is that of the other
    jobs: a job before the last known submit time is still out of order, and the error names
    the times in order."""
    unknown = " ".join(["299"] + ["-1"] * 9 + ["1", "36", "-1", "66", "-1", "2", "-1", "-1"])
    path = write(tmp_path, unknown, job(1, 100, 10), unknown, job(2, 150, 10),
                 job(3, 150, 10, alloc=-1), unknown)
    stats = TraceStats()
    leases = convert(path, stats, window_start=120.0)
    assert [(lease.source_id, lease.submit) for lease in leases] == [("2", 150)]
    assert stats.read == 6 and stats.replayed == 1
    assert stats.skipped == {"submit time < 0": 3, "no processor count": 1}
    assert stats.filtered == {"before the time window": 1}
    path = write(tmp_path, job(1, 100, 10), job(2, 200, 10), unknown, job(3, 150, 10),
                 name="disorder.swf")
    with pytest.raises(TraceError, match=r"not in submit order \(150 after 200\)") as info:
        convert(path)
    assert info.value.line == 4
    # the same across the reader's blocks of lines, the first ending with the unknown
    lines = [job(n, 1000 + n, 10) for n in range(1, _CHUNK)] + [unknown, job(0, 1050, 10)]
    with pytest.raises(TraceError, match=rf"\(1050 after {1000 + _CHUNK - 1}\)") as info:
        convert(write(tmp_path, *lines, name="blocks.swf"))
    assert info.value.line == _CHUNK + 1


def test_equal_submit_times_are_in_order(tmp_path):
    path = write(tmp_path, job(1, 100, 10), job(2, 100, 10))
    assert [lease.submit for lease in convert(path)] == [100, 100]


# --------------------------------------------------------------------------- conversion
def test_conversion_rules(tmp_path):
    path = write(
        tmp_path,
        job(10, 0, 50, alloc=8, req_procs=4, req_time=100),     # plain: 4 VMs, req 100, act 50
        job(11, 10, -1, alloc=8, req_procs=4, req_time=100),    # run < 0: skipped
        job(12, 20, 0, alloc=8, req_procs=2, req_time=100),     # run 0 -> 1 s
        job(13, 30, 300, alloc=8, req_procs=1, req_time=200),   # run > requested: actual 200
        job(14, 40, 70, alloc=6, req_procs=-1, req_time=-1),    # procs from field 5; req := run
        job(15, 50, 70, alloc=6, req_procs=0, req_time=0),      # same with zeros
        job(16, 60, 5, alloc=-1, req_procs=-1, req_time=10),    # no processor count: skipped
        job(17, 70, -1, alloc=8, req_procs=4, req_time=100),    # run < 0: skipped
    )
    stats = TraceStats()
    leases = convert(path, stats)
    got = [(l.id, l.source_id, l.submit, l.vms.count, l.requested_duration, l.actual_duration)
           for l in leases]
    assert got == [
        (1, "10", 0, 4, 100, 50),
        (2, "12", 20, 2, 100, 1),
        (3, "13", 30, 1, 200, 200),
        (4, "14", 40, 6, 70, 70),
        (5, "15", 50, 6, 70, 70),
    ]
    assert all(l.type is LeaseType.BEST_EFFORT for l in leases)
    assert [l.origin for l in leases] == [f"{path}:{n}" for n in (1, 3, 4, 5, 6)]
    np.testing.assert_array_equal(leases[0].vms.per_vm(), np.tile(VM, (4, 1)))
    assert stats.read == 8 and stats.replayed == 5
    assert stats.skipped["run time < 0"] == 2
    assert stats.skipped["no processor count"] == 1
    assert stats.as_dict()["jobs_skipped"] == {"run time < 0": 2, "no processor count": 1}


def test_procs_per_vm_rounds_up(tmp_path):
    path = write(tmp_path, job(1, 0, 10, req_procs=8), job(2, 1, 10, req_procs=9),
                 job(3, 2, 10, req_procs=1), job(4, 3, 10, alloc=17))
    assert [l.vms.count for l in convert(path, procs_per_vm=8)] == [1, 2, 1, 3]
    assert [l.vms.count for l in convert(path, procs_per_vm=1)] == [8, 9, 1, 17]


def test_cloud_paradigm_requests_the_actual_time(tmp_path):
    path = write(tmp_path, job(1, 0, 50, req_time=100), job(2, 1, 300, req_time=200),
                 job(3, 2, 0, req_time=-1))
    hpc = [(l.requested_duration, l.actual_duration) for l in convert(path, paradigm="hpc")]
    cloud = [(l.requested_duration, l.actual_duration) for l in convert(path, paradigm="cloud")]
    assert hpc == [(100, 50), (200, 200), (1, 1)]
    assert cloud == [(50, 50), (200, 200), (1, 1)]


def test_queue_filter(tmp_path):
    path = write(tmp_path, job(1, 0, 10, queue=1), job(2, 1, 10, queue=2),
                 job(3, 2, 10, queue=3), job(4, 3, 10, queue=2))
    stats = TraceStats()
    leases = convert(path, stats, queues=(2, 3))
    assert [l.source_id for l in leases] == ["2", "3", "4"]
    assert [l.id for l in leases] == [1, 2, 3]
    assert stats.filtered["queue not selected"] == 1
    assert [l.source_id for l in convert(path)] == ["1", "2", "3", "4"]


def test_time_window(tmp_path):
    path = write(tmp_path, *(job(n, submit, 10) for n, submit in
                             enumerate((0, 50, 100, 150, 199, 200, 250), 1)))
    stats = TraceStats()
    leases = convert(path, stats, window_start=100, window_length=100)
    assert [(l.source_id, l.submit) for l in leases] == [("3", 100), ("4", 150), ("5", 199)]
    assert stats.filtered["before the time window"] == 2
    assert stats.filtered["after the time window"] == 1     # stops at the first job past it
    assert stats.replayed == 3


def test_time_window_rebased(tmp_path):
    path = write(tmp_path, *(job(n, submit, 10) for n, submit in
                             enumerate((0, 50, 130, 150, 199, 200), 1)))
    leases = convert(path, window_start=100, window_length=100, rebase=True)
    assert [(l.source_id, l.submit) for l in leases] == [("3", 0), ("4", 20), ("5", 69)]


def test_rebase_without_window(tmp_path):
    path = write(tmp_path, job(1, 1000, 10, alloc=-1), job(2, 1500, 10), job(3, 1600, 10))
    # job 1 is skipped (no processors): the first *kept* job arrives at 0
    assert [l.submit for l in convert(path, rebase=True)] == [0, 100]
    assert [l.submit for l in convert(path)] == [1500, 1600]


def test_max_jobs(tmp_path):
    path = write(tmp_path, job(1, 0, -1), job(2, 1, 10), job(3, 2, 10), job(4, 3, 10),
                 job(5, 4, 10))
    stats = TraceStats()
    leases = convert(path, stats, max_jobs=2)
    assert [l.source_id for l in leases] == ["2", "3"]
    assert stats.replayed == 2 and stats.skipped["run time < 0"] == 1
    # job 4 was read and then turned away: it is accounted for, and reading stops there
    assert stats.read == 4 and stats.filtered == {"beyond max-jobs": 1}
    assert len(convert(path, max_jobs=0)) == 4          # 0: all


@pytest.mark.parametrize("conv", [
    {}, {"max_jobs": 3}, {"window_start": 2, "window_length": 5}, {"queues": (2,)},
    {"queues": (1,), "window_start": 1, "max_jobs": 2}])
def test_every_job_read_is_replayed_skipped_or_filtered(tmp_path, conv):
    path = write(tmp_path, job(1, 0, -1), job(2, 1, 10, queue=2), job(3, 2, 10),
                 job(4, 3, 10, alloc=-1), job(5, 4, 10, queue=2), job(6, 8, 10), job(7, 9, 10))
    stats = TraceStats()
    leases = convert(path, stats, **conv)
    assert stats.replayed == len(leases)
    assert stats.read == stats.replayed + sum(stats.skipped.values()) + \
        sum(stats.filtered.values())


def test_infinite_window_by_default():
    conv = SWFConversion(vm_vector=VM)
    assert conv.window_start == 0 and math.isinf(conv.window_length)
    assert conv.max_jobs == 0 and conv.queues == () and conv.paradigm == "hpc"


def test_a_truncated_gz_trace_is_one_error_naming_the_file_and_line(tmp_path):
    """A ``.swf.gz`` cut short raised EOFError from deep in gzip; it is a TraceError naming the
    first line that could not be read."""
    from support import TRACES

    data = gzip.compress((TRACES / "sdsc-blue-600requests.swf").read_bytes())
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(data[:3000])
    with pytest.raises(TraceError, match="the compressed file is truncated or damaged") as err:
        list(SWFReader(path).jobs())
    assert err.value.file == str(path) and err.value.line is not None and err.value.line > 1


def test_lines_are_read_in_chunks_yet_judged_one_by_one(tmp_path):
    """The reader parses thousands of lines together: a directive between job lines is still
    recorded, a bad line far into the file is still reported with its own number (or skipped
    alone), and a consumer that stops before a bad line never hears of it."""
    lines = [job(n, n, 10) for n in range(1, 6001)]
    lines[2999] = "; MaxNodes: 12"
    lines[4499] = job(4500, 4500, 10, alloc="8.5")
    path = write(tmp_path, *lines)
    with pytest.raises(TraceError, match="not an integer") as info:
        list(SWFReader(path).jobs())
    assert info.value.line == 4500 and "field 5 (allocated processors)" in str(info.value)
    reader = SWFReader(path, skip_bad_lines=True)
    jobs = list(reader.jobs())
    assert len(jobs) == 5998 and [line for line, _ in reader.bad_lines] == [4500]
    assert [j.line for j in jobs[2997:3000]] == [2998, 2999, 3001]   # (3000: the directive)
    assert reader.directive("MaxNodes") == 12
    stats = TraceStats()
    assert len(convert(path, stats, max_jobs=4000)) == 4000 and stats.bad_lines == 0


def test_a_line_longer_than_any_record_is_refused_without_reading_it_whole(tmp_path):
    """A 92 KB .swf.gz holding one line of hundreds of MB was read whole (657 MB) before it was
    refused. Here line 3 is 50 MB of digits: the reader (and the progress bar's count) stop
    after MAX_LINE characters of it, naming the line."""
    from lease_manager.workload.swf import MAX_LINE, SWFReader, _read_lines, count_jobs

    path = tmp_path / "long.swf.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"; Version: 2.2\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n")
        fh.write(b"2 " + b"9" * (50 << 20) + b"\n")
    assert path.stat().st_size < 200_000
    message = (f"{path}:3: the line is longer than {MAX_LINE:,} characters (an SWF record is "
               "18 numbers)")
    with pytest.raises(TraceError) as caught:
        list(SWFReader(path).jobs())
    assert str(caught.value) == message
    with pytest.raises(TraceError) as caught:
        count_jobs(path)
    assert str(caught.value) == message
    # and it stops at the line's first piece: a chunk of 4,096 pieces of 64 K held 207 MB
    record = "1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n"
    stream = io.StringIO(record + "9" * (10 << 20) + "\n")
    with pytest.raises(TraceError, match="longer than"):
        _read_lines(stream, 4096, 1, "x.swf")
    assert stream.tell() <= len(record) + MAX_LINE


def test_a_chunk_of_long_lines_stops_at_its_character_cap(tmp_path):
    """4,096 lines just under MAX_LINE were read into one chunk (268 MB). A chunk now stops
    once it holds _CHUNK_CHARS characters, and the lines after it are read in later chunks:
    here 40 lines of 60,000 characters (comments) and one record read as 3 chunks of
    18, 18 and 5 lines (1,080,000 characters each of the first two; 17 lines are 1,020,000,
    under the cap of 1,048,576), with the record and the job count kept."""
    from lease_manager.workload.swf import _CHUNK_CHARS, SWFReader, _read_lines, count_jobs

    comment = ";" + "x" * 59_998 + "\n"
    record = "1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n"
    stream = io.StringIO(comment * 40 + record)
    sizes = []
    while True:
        lines: list[str] = []
        ended = _read_lines(stream, 4096, 1, "x.swf", lines)
        sizes.append(len(lines))
        assert sum(map(len, lines)) < _CHUNK_CHARS + 60_000
        if ended:
            break
    assert sizes == [18, 18, 5]
    path = tmp_path / "wide.swf"
    path.write_text(comment * 40 + record)
    jobs = list(SWFReader(path).jobs())
    assert [(j.job, j.run_time, j.line) for j in jobs] == [(1, 10, 41)]
    assert count_jobs(path) == 1
