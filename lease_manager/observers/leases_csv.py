"""``leases.csv``: how its fields and lines are written, and the columns plugins add to it.

The accountant (:mod:`lease_manager.observers.accounting`) writes one line per lease: the core's
columns (:data:`COLUMNS`), then the columns that plugins return from the ``lease_columns`` hook
(:class:`LeaseColumns`): energy, a run with several sites, malleable leases, any other plugin.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease

COLUMNS = ("lease_id", "source_id", "type", "state", "submit", "start", "end", "vms",
           "requested", "actual", "wait", "price", "reason", "nodes")
#: a lease's values for some columns, in their order
LeaseValues = Callable[["Lease"], tuple["float | str | None", ...]]


class LeaseColumns:
    """Columns a plugin adds to ``leases.csv`` (what its ``lease_columns`` hook returns).

    ``values(lease)`` gives the lease's values for ``names``, in their order, once, when the
    lease is accounted for (it has reached its final state, or the run has stopped); a float
    is written as :func:`format_field` writes it, None as an empty field. ``sparse`` columns
    are written only if some lease has a value (not None) for them, after every column that
    is always written.
    """

    __slots__ = ("names", "values", "sparse")

    def __init__(self, names: tuple[str, ...], values: LeaseValues,
                 sparse: bool = False) -> None:
        #: the columns' names (each unique in the file)
        self.names = tuple(names)
        #: the lease's values for them
        self.values = values
        #: written only if some lease has a value for them (a lease's own ``watts``)
        self.sparse = sparse

    def __repr__(self) -> str:
        return f"LeaseColumns({self.names!r}, {self.values!r}, sparse={self.sparse!r})"


def joined(columns: Sequence[LeaseColumns]) -> tuple[tuple[str, ...], LeaseValues | None]:
    """The names of ``columns`` one after the other, and one function giving a lease's
    values for all of them (None for no columns)."""
    names = tuple(name for part in columns for name in part.names)
    functions = [part.values for part in columns]
    if not functions:
        return names, None
    if len(functions) == 1:
        return names, functions[0]
    if len(functions) == 2:
        first, second = functions
        return names, lambda lease: first(lease) + second(lease)
    return names, lambda lease: tuple(value for f in functions for value in f(lease))


def format_field(x: float | str | None) -> str:
    """A ``leases.csv`` field's text: a whole number without its ``.0``, others rounded to
    six decimals, ``inf``, or empty for None."""
    if type(x) is float:   # the common case, as below (inf is no integer)
        if x.is_integer():
            return str(int(x))
        if x in _INFINITE:
            return "inf"
        return repr(round(x, 6))
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if math.isinf(x):
        return "inf"
    if float(x).is_integer():
        return str(int(x))
    return repr(round(float(x), 6))

_INFINITE = (math.inf, -math.inf)
#: submit, start, end, VMs, requested, actual, wait and price of a row: the VMs an int, the
#: others floats of integer values (``%d`` writes what ``str`` and ``format_field`` do then)
_EIGHT_INTEGERS = "%d,%d,%d,%d,%d,%d,%d,%d"

#: texts of runs of consecutive nodes kept, at most (most leases of a replay run on some)
_KNOWN_RUNS = 4096


#: characters that make the csv module quote a field (with "," and '"', lines ending in \n)
_PLAIN = frozenset(',"\r\n')


class CSVLines:
    """``leases.csv`` lines, one at a time (a csv writer into a reused buffer)."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        self._names: list[str] = []
        #: (first node, count) -> the text of that many consecutive nodes
        self._runs: dict[tuple[int, int], str] = {}
        self._writer = csv.writer(self._buffer, lineterminator="\n")

    def header(self, columns: tuple[str, ...]) -> str:
        return self._line(columns)

    def fields(self, fields: tuple[str, ...]) -> str:
        """Fields to append to a line, as the csv module writes them inside a row."""
        if all(_PLAIN.isdisjoint(field) for field in fields):
            return ",".join(fields) + "\n"
        return self._line(fields + ("",))[:-2] + "\n"   # (a last field: none alone)

    def row(self, row: tuple) -> str:
        fmt = format_field
        source, reason, nodes, extra = row[1], row[12], row[13], row[14:]
        submit, start, end, vms, requested, actual, wait, price = row[4:12]
        f = float
        if (type(price) is f and price.is_integer() and type(vms) is int
                and type(submit) is f and submit.is_integer()
                and type(start) is f and start.is_integer() and type(end) is f
                and end.is_integer() and type(requested) is f and requested.is_integer()
                and type(actual) is f and actual.is_integer() and type(wait) is f
                and wait.is_integer()):
            # a lease that ran, at whole seconds, at a whole price (a trace replay's rows):
            # its eight numbers in one formatting
            numbers = _EIGHT_INTEGERS % (submit, start, end, vms, requested, actual, wait,
                                         price)
            fields = [str(row[0]), source, row[2], row[3], numbers, reason, self.nodes(nodes)]
        else:
            numbers = ""
            fields = [str(row[0]), source, row[2], row[3], fmt(submit), fmt(start), fmt(end),
                      str(vms), fmt(requested), fmt(actual), fmt(wait), fmt(price), reason,
                      self.nodes(nodes)]
        if extra:
            fields.extend(map(fmt, extra))
        if _PLAIN.isdisjoint(source) and _PLAIN.isdisjoint(reason) and not (extra and any(
                isinstance(x, str) and not _PLAIN.isdisjoint(x) for x in extra)):
            return ",".join(fields) + "\n"   # nothing to quote: what csv would write
        if numbers:   # (the csv module's line, from the fields one by one)
            fields[4:5] = numbers.split(",")
        return self._line(tuple(fields))

    def nodes(self, nodes: list[int] | np.ndarray) -> str:
        """Node indices (sorted, distinct), space-separated (their texts are made once, and
        those of the last runs of consecutive nodes kept)."""
        if not len(nodes):
            return ""
        count = len(nodes)
        if type(nodes) is list and nodes[-1] - nodes[0] == count - 1:   # consecutive nodes
            key = (nodes[0], count)
            text = self._runs.get(key)
            if text is None:
                if len(self._runs) >= _KNOWN_RUNS:
                    self._runs.clear()
                text = self._runs[key] = self._join(nodes)
            return text
        return self._join(nodes)

    def _join(self, nodes: list[int] | np.ndarray) -> str:
        names = self._names
        top = int(nodes[-1])
        if top >= len(names):
            names.extend(str(i) for i in range(len(names), top + 1))
        return " ".join(map(names.__getitem__,
                            nodes if isinstance(nodes, list) else nodes.tolist()))

    def _line(self, fields: tuple) -> str:
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        self._writer.writerow(fields)
        return buffer.getvalue()
