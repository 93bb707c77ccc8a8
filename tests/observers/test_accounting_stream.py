"""leases.csv written as leases end: the same file as when rows are kept, whether ids arrive in
order (rows go out as soon as no smaller id is pending) or not (merged at the end)."""

from __future__ import annotations

from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest
from lease_manager.observers.accounting import Accounting


def lease(lease_id: int, start: float, end: float) -> Lease:
    out = Lease(lease_id, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(1, [1, 0]), 100, 100)
    out.start, out.end, out.state = start, end, LeaseState.DONE
    return out


def replay(accounting: Accounting, arrivals: list[int], ends: list[int]) -> list[int]:
    """Submit ``arrivals`` (ids), then end ``ends`` in that order; after each end, the ids
    whose rows are already in the streamed file."""
    leases = {i: lease(i, 10 * i, 10 * i + 5) for i in arrivals}
    for i in arrivals:
        accounting.lease_submitted(None, leases[i], 0)
    written = []
    for i in ends:
        accounting.lease_ended(None, leases[i], leases[i].end)
        if accounting._stream is not None:
            accounting._stream.flush()
            text = accounting._stream_path.read_text().splitlines()[1:]
            written.append([int(line.split(",")[0]) for line in text])
    return written


def test_rows_stream_in_id_order_as_soon_as_no_smaller_id_is_pending(tmp_path):
    """Leases 1-4 arrive in order and end 2, 1, 4, 3: row 2 waits for 1, then 1 and 2 go out;
    4 waits for 3."""
    kept, streamed = Accounting(["CPU", "Memory"]), Accounting(["CPU", "Memory"])
    streamed.stream_to(tmp_path / "leases.csv.part")
    replay(kept, [1, 2, 3, 4], [2, 1, 4, 3])
    written = replay(streamed, [1, 2, 3, 4], [2, 1, 4, 3])
    assert written == [[], [1, 2], [1, 2], [1, 2, 3, 4]]
    kept.write_leases(tmp_path / "kept.csv")
    streamed.write_leases(tmp_path / "leases.csv")
    assert not (tmp_path / "leases.csv.part").exists()
    assert (tmp_path / "leases.csv").read_text() == (tmp_path / "kept.csv").read_text()


def test_ids_out_of_order_are_merged_at_the_end(tmp_path):
    """Leases arrive as 5, 6, 2 (an LWF file need not number them in order): rows written
    before 2 arrived are merged with the others, and the file is still in id order."""
    kept, streamed = Accounting(["CPU", "Memory"]), Accounting(["CPU", "Memory"])
    streamed.stream_to(tmp_path / "leases.csv.part")
    order = [5, 6, 2]
    leases = {i: lease(i, i, i + 1) for i in order}
    for accounting in (kept, streamed):
        for i in order:
            accounting.lease_submitted(None, leases[i], 0)
            if i == 6:
                accounting.lease_ended(None, leases[5], 6)
        accounting.lease_ended(None, leases[2], 3)
        accounting.lease_ended(None, leases[6], 7)
    kept.write_leases(tmp_path / "kept.csv")
    streamed.write_leases(tmp_path / "leases.csv")
    text = (tmp_path / "leases.csv").read_text()
    assert [line.split(",")[0] for line in text.splitlines()[1:]] == ["2", "5", "6"]
    assert text == (tmp_path / "kept.csv").read_text()


def test_a_failed_run_leaves_no_partial_file(tmp_path):
    accounting = Accounting(["CPU", "Memory"])
    accounting.stream_to(tmp_path / "leases.csv.part")
    replay(accounting, [1], [1])
    accounting.discard_stream()
    assert list(tmp_path.iterdir()) == []


def test_an_optional_column_appears_streamed_as_kept(tmp_path):
    """A column written only when some lease has a value for it (a lease's own watts): the
    streamed file gains it at the end, with the same values and blanks as the kept one, and
    has none when no lease has a value."""
    for watts in ({2: 12.5}, {}):
        files = []
        for stream in (False, True):
            accounting = Accounting(["CPU", "Memory"])
            accounting.optional_columns = ("watts",)
            accounting.optional_values = lambda lease, w=watts: (w.get(lease.id),)
            if stream:
                accounting.stream_to(tmp_path / "leases.csv.part")
            replay(accounting, [1, 2, 3], [3, 1, 2])
            out = tmp_path / f"{stream}.csv"
            accounting.write_leases(out)
            files.append(out.read_text())
        assert files[0] == files[1]
        assert files[0].splitlines()[0].endswith(",watts") == bool(watts)
        if watts:
            assert [line.rsplit(",", 1)[1] for line in files[0].splitlines()[1:]] == \
                ["", "12.5", ""]
