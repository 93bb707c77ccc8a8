"""Small helpers of ``lm-kassab-figures``: numbers read from a results row, means by keys, the
planners in the figures' order, and plain-text tables."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .planners import PLANNER_NAMES


def number(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def mean_by(runs: Sequence[dict[str, Any]], keys: Sequence[str], metric: str
            ) -> dict[tuple, float]:
    values: dict[tuple, list[float]] = defaultdict(list)
    for run in runs:
        if run[metric] is not None:
            values[tuple(run[k] for k in keys)].append(run[metric])
    return {k: statistics.fmean(v) for k, v in values.items()}


def ordered_planners(names: Sequence[str]) -> list[str]:
    known = [p for p in PLANNER_NAMES if p in names]
    return known + sorted(set(names) - set(known))


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [head, *rows])


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"
