"""A ``leases.csv`` line is what the csv module writes for the row's fields, each number as
``_fmt`` gives it: the one-format path for whole-second rows and the texts kept for runs of
consecutive nodes must not change a byte."""

from __future__ import annotations

import csv
import io
import math
import random

from lease_manager.observers.leases_csv import CSVLines as _CSVLines
from lease_manager.observers.leases_csv import format_field as _fmt


def csv_line(row: tuple) -> str:
    """The line the csv module writes for ``row`` (nodes space-separated, numbers by _fmt)."""
    buffer = io.StringIO()
    fields = [str(row[0]), row[1], row[2], row[3], *map(_fmt, row[4:7]), str(row[7]),
              *map(_fmt, row[8:12]), row[12], " ".join(map(str, row[13])),
              *map(_fmt, row[14:])]
    csv.writer(buffer, lineterminator="\n").writerow(fields)
    return buffer.getvalue()


def test_a_trace_replays_row_by_hand():
    """Lease 2 waited 0 s for its 4 VMs on nodes 4-7, ran 44 s of 64,800 s asked, price 0."""
    lines = _CSVLines()
    row = (2, "14", "best-effort", "done", 32.0, 32.0, 76.0, 4, 64800.0, 44.0, 0.0, 0.0, "",
           [4, 5, 6, 7])
    assert lines.row(row) == "2,14,best-effort,done,32,32,76,4,64800,44,0,0,,4 5 6 7\n"


def test_rows_are_the_csv_modules_on_random_fields():
    """20,000 seeded random rows: whole, fractional, signed-zero, infinite, missing and huge
    numbers, a VM count that is a float, fields the csv module must quote, extra columns,
    and node lists that are runs (seen again) or not."""
    rng = random.Random(38)
    values = [0.0, -0.0, 3.0, 123456.0, 1.5, 2.25e-7, 1e20, math.inf, -math.inf, math.nan,
              None, 7]
    texts = ["", "123", "a,b", 'q"uote', "two\nlines"]
    lines = _CSVLines()
    for lease_id in range(20_000):
        first = rng.randint(0, 40)
        nodes = (list(range(first, first + rng.randint(1, 6))) if rng.random() < 0.5
                 else sorted(rng.sample(range(60), rng.randint(0, 6))))
        extra = tuple(rng.choice(values + texts) for _ in range(rng.choice([0, 0, 2])))
        row = (lease_id, rng.choice(texts), "best-effort", "done",
               *(rng.choice(values) for _ in range(3)), rng.choice([1, 8, 3.0]),
               *(rng.choice(values) for _ in range(4)), rng.choice(texts), nodes) + extra
        assert lines.row(row) == csv_line(row), row
