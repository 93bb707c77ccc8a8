"""Metrics that compare a run with the other runs of the same instance: Kassab et al.'s NM.

An *instance* is a trace, a seed and every setting of the sweep but the policies (settings
named ``policy-*``): the runs of one instance differ only in how they schedule the same leases
under the same envelope. Its best makespan ``C*`` is the earliest time at which one of its runs
had finished every lease.

**NM** (Kassab et al., section 5.2) is the share of the leases' energy ``duration x watts``
(their own power, the ``watts`` column of ``leases.csv``, times their VMs) that a run schedules
after ``C*``: 0 for the best run, more the later the others finish their work. The part of a
lease that runs after ``C*`` counts (a lease that runs from before ``C*`` to after it counts in
part). A lease that no run of the instance ran (no room for it under the envelope) is left out;
one that some run ran counts whole for a run that did not. ``C*`` is the makespan of the best
run: the one that ran the most leases, the earliest to end among those (when every run ran
every lease, the best makespan). Runs whose leases have no power of their own have no NM.

**NM whole** (column ``nm_whole``) reads the paper's sentence literally: "the sum of the p_i x
phi_i area of all the tasks that are scheduled after the best Cmax". A lease that ends after
``C*`` counts with its whole energy, however little of it runs after ``C*``; the other rules are
NM's. The authors' simulator says the same in its comment ("get the tasks.scheduled after it
and compute pi x phii"; ``scheduled`` is the list of a task's intervals), and never computes
it. ``nm`` is the reading of the part after ``C*`` (the one the digest chose).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import attrs

from lease_manager.experiments.results import Results, collect

NM = "nm"
NM_WHOLE = "nm_whole"


@attrs.frozen
class TaskRows:
    """What NM needs of a run's leases: per lease, its id, start, end, energy rate (W), length
    and whether it ran."""

    ids: tuple[str, ...]
    starts: tuple[float, ...]
    ends: tuple[float, ...]
    rates: tuple[float, ...]
    lengths: tuple[float, ...]
    ran: tuple[bool, ...]

    @property
    def ran_ids(self) -> frozenset[str]:
        return frozenset(i for i, r in zip(self.ids, self.ran) if r)

    @property
    def last_end(self) -> float:
        return max((e for e, r in zip(self.ends, self.ran) if r), default=0.0)

    def nm(self, best: float, counted: frozenset[str], whole: bool = False) -> float:
        """The share of the energy of the leases ``counted`` after ``best`` (``whole``: the
        whole energy of every lease that ends after ``best``)."""
        total = out = 0.0
        for lease, start, end, rate, length, ran in zip(self.ids, self.starts, self.ends,
                                                        self.rates, self.lengths, self.ran):
            if lease not in counted:
                continue
            total += rate * length
            if not ran:
                out += rate * length
            elif end > best:
                out += rate * (length if whole else end - max(start, best))
        return out / total if total > 0 else 0.0


def read_tasks(run_dir: Path) -> TaskRows | None:
    """The leases of a run (``leases.csv`` with a ``watts`` column), or None."""
    path = run_dir / "leases.csv"
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError:
        return None
    if not rows or "watts" not in rows[0]:
        return None
    ids, starts, ends, rates, lengths, ran = [], [], [], [], [], []
    try:
        for row in rows:
            watts = float(row["watts"]) if row["watts"] else 0.0
            rate = watts * int(row["vms"])
            done = row["state"] == "done"
            start = float(row["start"]) if done else math.nan
            end = float(row["end"]) if done else math.nan
            ids.append(row["lease_id"])
            starts.append(start)
            ends.append(end)
            rates.append(rate)
            lengths.append(end - start if done else float(row["requested"]))
            ran.append(done)
    except (KeyError, ValueError):
        return None
    return TaskRows(tuple(ids), tuple(starts), tuple(ends), tuple(rates), tuple(lengths),
                    tuple(ran))


def instance_key(row: dict[str, Any], settings: tuple[str, ...]) -> tuple:
    """The runs of one instance share this key: trace, seed and settings but policies."""
    return (row["trace"], row["seed"],
            *(row.get(s) for s in settings if not s.rpartition(".")[2].startswith("policy-")))


def with_nm(results: Results, directory: Path) -> Results:
    """``results`` with the columns ``nm`` and ``nm_whole`` (None where a run's leases have no
    power of their own), when some run has one."""
    tasks: dict[str, TaskRows] = {}
    groups: dict[tuple, list[str]] = defaultdict(list)
    for row in results.done():
        got = read_tasks(directory / str(row["run_id"]))
        if got is None:
            continue
        tasks[str(row["run_id"])] = got
        groups[instance_key(row, results.setting_columns)].append(str(row["run_id"]))
    if not tasks:
        return results
    value: dict[str, float] = {}
    whole: dict[str, float] = {}
    for run_ids in groups.values():
        counted = frozenset().union(*(tasks[r].ran_ids for r in run_ids))
        best = min((-len(tasks[r].ran_ids), tasks[r].last_end) for r in run_ids)[1]
        for r in run_ids:
            value[r] = tasks[r].nm(best, counted)
            whole[r] = tasks[r].nm(best, counted, whole=True)
    rows = tuple({**row, NM: value.get(str(row["run_id"])),
                  NM_WHOLE: whole.get(str(row["run_id"]))} for row in results.rows)
    columns = (*[c for c in results.columns if c != "error"], NM, NM_WHOLE, "error")
    return attrs.evolve(results, columns=columns, rows=rows,
                        summary_columns=(*results.summary_columns, NM, NM_WHOLE))


def results_with_nm(directory: str | Path) -> Results:
    """The result table of the runs under ``directory`` (see
    :func:`~lease_manager.experiments.results.collect`), with ``nm`` when it applies."""
    return with_nm(collect(directory), Path(directory))
