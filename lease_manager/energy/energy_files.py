"""The energy files of a run: ``series/power.csv``, ``nodes.csv`` and ``node_states.csv``,
site after site, each site's rows made by its
:class:`~lease_manager.energy.energy_accounting.EnergyAccounting`; and how their numbers are
written."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lease_manager.energy.energy_accounting import EnergyAccounting

#: the states of a node, in the order of the ``nodes.csv`` columns
NODE_STATES = ("on", "off", "switching-on", "switching-off")


def write_energy_files(out: Path, accountings: Sequence[EnergyAccounting]) -> None:
    """``series/power.csv`` and ``node_states.csv`` under ``out``, site after site."""
    series = out / "series"
    series.mkdir(parents=True, exist_ok=True)
    with (series / "power.csv").open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(("time", "site", "it_watts", "total_watts", "green_watts", "cap_watts"))
        for acc in accountings:
            fh.write(acc.power_lines())
    with (out / "nodes.csv").open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(("site", "node", "energy_it_joules",
                    *(f"seconds_{s.replace('-', '_')}" for s in NODE_STATES), "switch_ons"))
        for acc in accountings:
            w.writerows(acc.node_rows())
    with (out / "node_states.csv").open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(("site", "node", "state", "start", "end"))
        for acc in accountings:
            fh.write(acc.state_lines())


def csv_field(text: str) -> str:
    """``text`` as the csv module writes it inside a row (quoted if it must be)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow((text, ""))
    return buffer.getvalue()[:-2]


def num_texts(values: np.ndarray) -> list[str]:
    """:func:`num_text` of each of ``values`` (whole numbers converted at once)."""
    whole = np.isfinite(values) & (np.abs(values) < 2.0 ** 53)
    whole[whole] = values[whole] == np.floor(values[whole])
    if whole.all():
        return list(map(str, values.astype(np.int64).tolist()))
    return [num_text(x) for x in values.tolist()]


def num_text(x: float) -> str:
    """``x`` as the energy files write it: a whole number without its point, else its repr."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))
