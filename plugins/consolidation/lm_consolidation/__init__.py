"""lm_consolidation: energy-aware consolidation for lease_manager.

Chapters 5 and 6 of Sheikhalishahi's thesis as a lease_manager plugin (entry point
``consolidation`` in the ``lease_manager`` group):

- annotator ``thesis-workload`` (:mod:`.annotator`): stress-on sets and IO/Net requirements of
  SWF leases, drawn as in Table 7.1;
- probe ``resource-contention`` (:mod:`.contention`): RC(t) of equations 5.1-5.4 at every
  scheduling cycle, its integral, mean and maximum;
- host selection ``ea-consolidation`` and ``ea-time-horizon`` (:mod:`.host_selection`):
  Algorithms 1-3;
- ``lm-thesis-ch6`` (:mod:`.ch6`): the chapter-6 experiment (Table 6.1) in one command.

Options live in the ``[consolidation]`` section.
"""

from __future__ import annotations

__version__ = "0.1.0"

from lease_manager import STRING, Option, OptionType, hookimpl
from lease_manager.characteristics import RESOURCES, parse_stress_on

from .annotator import ThesisWorkload
from .contention import ResourceContentionProbe, resource_contention_at
from .host_selection import EAConsolidation, EATimeHorizon, node_scores

__all__ = [
    "__version__", "RESOURCES", "parse_stress_on", "ThesisWorkload", "ResourceContentionProbe",
    "resource_contention_at", "EAConsolidation", "EATimeHorizon", "node_scores", "RANGE",
]


def _parse_range(text: str) -> tuple[float, float]:
    parts = text.replace(",", " ").split()
    if len(parts) != 2:
        raise ValueError(f"{text.strip()!r} is not two numbers 'LOW HIGH'")
    try:
        lo, hi = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not two numbers 'LOW HIGH'") from None
    if not (0 <= lo <= hi) or hi == float("inf"):
        raise ValueError(f"{text.strip()!r}: need 0 <= LOW <= HIGH, both finite")
    return lo, hi


def _format_range(value: tuple[float, float]) -> str:
    return " ".join(f"{v:g}" for v in value)


#: an option type: a uniform range "LOW HIGH"
RANGE = OptionType("range (two numbers: LOW HIGH)", _parse_range, _format_range)


@hookimpl
def register_policies():
    return [ThesisWorkload, ResourceContentionProbe, EAConsolidation, EATimeHorizon]


@hookimpl
def register_options():
    return [
        Option("consolidation", "io-range", RANGE, (10.0, 100.0), doc="""
            Annotator `thesis-workload`: the IO requirement per VM of a lease that stresses
            IO is drawn uniformly in this range (in the units the site uses for IO; the thesis
            gives no range)."""),
        Option("consolidation", "net-in-range", RANGE, (10.0, 100.0), doc="""
            Annotator `thesis-workload`: the Net-in requirement per VM range."""),
        Option("consolidation", "net-out-range", RANGE, (10.0, 100.0), doc="""
            Annotator `thesis-workload`: the Net-out requirement per VM range."""),
        Option("consolidation", "tie-break", STRING, "node-index",
               choices=("node-index", "greedy"), doc="""
            Policies `ea-consolidation` and `ea-time-horizon`: the order of nodes with equal
            scores: `node-index` (as the thesis' stable sort) or `greedy` (Haizea's greedy
            score first, then node index)."""),
    ]
