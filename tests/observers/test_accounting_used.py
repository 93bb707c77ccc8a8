"""The capacity x seconds the accountant adds up: exactly what numpy's
``used += amounts.sum(axis=0) * duration`` gives, reservation after reservation, whatever the
arrays (few or many rows, views, float32, shared read-only rows summed once)."""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager.kernel.mapper import Placement
from lease_manager.kernel.slottable import Reservation
from lease_manager.observers import accounting as accounting_module
from lease_manager.observers.accounting import Accounting


def reservation(amounts: np.ndarray, start: float, end: float) -> Reservation:
    return Reservation(None, start, end, np.arange(len(amounts)), amounts)


def amounts_of(rng: np.random.Generator, width: int, shared: dict) -> np.ndarray:
    rows = int(rng.choice([0, 1, 2, 5, 31, 32, 33, 80]))
    kind = rng.integers(6)
    if kind == 0:   # the rows of one-VM-a-node placements: shared and read-only
        vector = np.round(rng.uniform(0.1, 4, width), 3)
        key = (vector.tobytes(), max(rows, 1))
        if key not in shared:
            shared[key] = Placement.one_per_node(
                tuple(range(key[1])), np.arange(key[1]), vector).amounts
        return shared[key]
    values = rng.uniform(0, 1000, (rows, width)) * 10.0 ** rng.integers(-3, 4)
    if kind == 1:
        return values.astype(np.float32)
    if kind == 2:   # every other row: not C-contiguous
        return np.repeat(values, 2, axis=0)[::2]
    if kind == 3:   # read-only but not shared
        values.flags.writeable = False
    return values


@pytest.mark.parametrize("width", [1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_used_is_numpys_sum_whatever_the_amounts(width, seed):
    rng = np.random.default_rng(seed)
    accountant = Accounting([f"R{i}" for i in range(width)])
    expected = np.zeros(width)
    shared: dict = {}
    for _ in range(400):
        amounts = amounts_of(rng, width, shared)
        start = float(rng.uniform(0, 1e7))
        end = start + float(rng.choice([0.0, 1.0, rng.uniform(0, 1e5), 1e-3]))
        accountant._use(reservation(amounts, start, end))
        expected += amounts.sum(axis=0) * (end - start)
        assert accountant.used.tobytes() == expected.tobytes()


def test_shared_rows_are_summed_once_and_the_memory_of_them_is_bounded(monkeypatch):
    """A read-only array's sums are kept (with the array, so that no other array takes its
    id); a writeable one is summed each time, since it may change; past the bound the kept
    sums are dropped, and the answer stays the same."""
    monkeypatch.setattr(accounting_module, "_KNOWN_SUMS", 3)
    accountant = Accounting(["CPU", "Memory"])
    writeable = np.array([[1.0, 2.0], [3.0, 4.0]])
    accountant._use(reservation(writeable, 0, 10))
    assert accountant._row_sums == {}
    writeable[0, 0] = 5.0   # (changed in place: summed again)
    accountant._use(reservation(writeable, 0, 10))
    assert accountant.used.tolist() == [40.0 + 80.0, 60.0 + 60.0]
    arrays = [Placement.one_per_node((0,) * n, np.arange(n), np.array([1.0, 2.0])).amounts
              for n in range(1, 6)]
    for amounts in arrays:
        accountant._use(reservation(amounts, 0, 1))
        accountant._use(reservation(amounts, 0, 1))
    assert len(accountant._row_sums) <= 3
    assert all(accountant._row_sums[id(a)][0] is a for a in arrays[-2:])
    assert accountant.used.tolist() == [120.0 + 2 * 15.0, 120.0 + 2 * 30.0]
