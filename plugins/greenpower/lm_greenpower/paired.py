"""Paired comparisons of two planners over a sweep's instances (``lm-kassab-figures DIR
--versus A,B``): does one's NM beat the other's instance by instance, or only on average?

An instance is one seed at one point (p_max, phi_max) of one kind of task and envelope scale;
A wins it when its NM is below B's, loses it when above, and a tie (the same NM, often both 0)
is left out. The exact two-sided sign test then gives the probability, were A and B equally
likely to win, of a split at least as uneven: twice the binomial tail of the smaller count,
capped at 1. The instances of one seed share its envelope window, so they are not
independent: the same counts over the seeds' means (each planner's mean NM over the seed's
points), with their own sign test, are the conservative reading, printed beside them. The
mean of A's NM minus B's over the instances is printed too: the paper's figures plot mean NM,
and a planner can lose most instances by a little and still have the lower mean.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .tables import table

#: two NM closer than this are a tie (the same plan's NM computed twice differs by rounding)
TIE = 1e-12


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test p-value of ``wins`` against ``losses`` (ties left out):
    ``min(1, 2 x P[X <= min(wins, losses)])``, X binomial(wins + losses, 1/2); 1 with no
    decided pair."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def split(pairs: Sequence[tuple[float, float]]) -> tuple[int, int, int]:
    """(wins, losses, ties) of the first value against the second, lower winning."""
    wins = sum(1 for a, b in pairs if a < b - TIE)
    losses = sum(1 for a, b in pairs if b < a - TIE)
    return wins, losses, len(pairs) - wins - losses


def versus(runs: Sequence[dict[str, Any]], a: str, b: str, metric: str = "nm"
           ) -> dict[str, Any]:
    """Planner ``a`` against ``b`` over the instances both ran (``runs`` of one kind of task
    and scale, as :func:`lm_greenpower.figures.read_runs` gives them): the instances' and the
    seeds' (wins, losses, ties), the sign test's p over each, and the mean of ``a``'s value
    minus ``b``'s over the instances (None without one)."""
    values: dict[tuple, dict[str, float]] = defaultdict(dict)
    for run in runs:
        if run["planner"] in (a, b) and run[metric] is not None:
            values[(run["seed"], run["pmax"], run["phimax"])][run["planner"]] = run[metric]
    both = {k: v for k, v in values.items() if a in v and b in v}
    by_seed: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    for (seed, _, _), v in both.items():
        by_seed[seed].append((v[a], v[b]))
    seeds = [(statistics.fmean(x for x, _ in p), statistics.fmean(y for _, y in p))
             for p in by_seed.values()]
    instances = split([(v[a], v[b]) for v in both.values()])
    by_seeds = split(seeds)
    mean = statistics.fmean(v[a] - v[b] for v in both.values()) if both else None
    return {"instances": instances, "seeds": by_seeds,
            "p": sign_test(instances[0], instances[1]),
            "p_seeds": sign_test(by_seeds[0], by_seeds[1]), "mean": mean}


def versus_text(runs: Sequence[dict[str, Any]], pairs: Sequence[tuple[str, str]],
                phi_min: float | None = None) -> str:
    """The sign test table of each pair (A, B), under NM and NM whole; with ``phi_min``, only
    the instances at phi_max >= ``phi_min``."""
    kept = [r for r in runs if phi_min is None
            or (r["phimax"] is not None and r["phimax"] >= phi_min)]
    n = len({(r["seed"], r["pmax"], r["phimax"]) for r in kept})
    seeds = len({r["seed"] for r in kept})
    where = "" if phi_min is None else f", phi_max >= {phi_min:g}"
    rows = []
    for metric, label in (("nm", "NM"), ("nm_whole", "NM whole")):
        for a, b in pairs:
            got = versus(kept, a, b, metric)
            wins, losses, ties = got["instances"]
            s_wins, s_losses, s_ties = got["seeds"]
            mean = "-" if got["mean"] is None else f"{got['mean']:+.4f}"
            rows.append([label, f"{a} vs {b}", str(wins), str(losses), str(ties),
                         f"{got['p']:.2g}", f"{s_wins} / {s_losses} / {s_ties}",
                         f"{got['p_seeds']:.2g}", mean])
    head = ["metric", "A vs B", "A better", "B better", "ties", "p", "seeds A / B / tied",
            "p seeds", "mean A-B"]
    return (f"paired sign tests over {n} instances ({seeds} seeds{where}; lower NM better, "
            f"ties left out; p: exact two-sided sign test over the instances; seeds: the "
            f"same over each seed's mean; mean A-B: over the instances)\n" + table(head, rows))


def parse_pair(text: str, known: Sequence[str]) -> tuple[str, str]:
    """``A,B`` as a pair of planner names; ValueError naming what is wrong."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise ValueError(f"--versus {text}: give two different planners as A,B")
    unknown = [p for p in parts if p not in known]
    if unknown:
        raise ValueError(f"--versus {text}: no runs of planner {unknown[0]!r} "
                         f"(planners here: {', '.join(known)})")
    return parts[0], parts[1]
