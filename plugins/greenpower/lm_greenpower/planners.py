"""Kassab et al.'s planners (section 4), policies of the core's kind ``planner``.

Every planner places tasks with the core's :class:`~lease_manager.PowerBoard` (PlaceTask, the
earliest fit under the envelope with machine states):

- **list heuristics** ``lpt``, ``spt``, ``lpn``, ``lptpn``, ``twoqs``, ``lpp``, ``random``: sort
  (:mod:`.orders`), then PlaceTask each task in turn from time 0;
- **binary search** ``bs-lpt``, ``bs-lpn``, ``bs-lptpn``, ``bs-lpp``, ``bs-twoqs``: the list
  schedule of the order gives a makespan H that works; then for a horizon halfway between the
  largest one that failed (first 0) and the smallest that worked, fill machine after machine
  (the first machine takes every task, in order, that fits before the horizon, at the start
  leaving the least power unused, then the second...), until every task is placed (the horizon
  works, and its plan is kept) or a machine takes none (it fails); the best plan found;
- **stripe** ``stripe-lpt``, ``stripe-lptpn``, ``stripe-twoqs``, ``stripe-lpp``: place the
  longest task left at its earliest start from the current position: that defines a stripe
  ``[start, start + p)``; fill it with the tasks left, in order, that fit whole inside it
  (booting machines as needed); the next stripe starts where this one ends;
- **genetic algorithm** ``ga``: individuals are task orders, their fitness the makespan of
  their list schedule. The population (``[greenpower] ga-population``, 50) starts with the
  LPTPN, TwoQs, LPT, LPN and LPP orders and random ones; each generation makes 10 swap
  mutations (1 to 5 swaps), 10 chunk swaps (two chunks of up to 5 tasks) and 20 one-cut order
  crossovers (OX: the first parent's prefix, then the rest in the second parent's order), the
  parents drawn by roulette wheel on 1/makespan; the best ``ga-population`` of the old and new
  individuals survive. It stops after ``ga-patience`` (25) generations without a better
  makespan. Draws come from the run's seed.

A plan that leaves tasks unplaced (no room under the envelope within the horizon) is worse than
any plan that places them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from lease_manager import Planner

from .orders import order_tasks

if TYPE_CHECKING:
    from lease_manager import PlanTask, PowerBoard


def list_schedule(tasks: Sequence[PlanTask], board: PowerBoard) -> PowerBoard:
    """PlaceTask each task in turn, from time 0."""
    for task in tasks:
        board.place_earliest(task)
    return board


def score(board: PowerBoard, n_tasks: int) -> float:
    """Lower is better: the makespan, plus a horizon per task left unplaced."""
    return board.makespan + (n_tasks - len(board.placements)) * board.horizon


class OrderedPlanner(Planner):
    """A planner whose tasks come in one of Kassab et al.'s orders (``order``)."""

    order = "random"

    def ordered(self, tasks: Sequence[PlanTask], board: PowerBoard) -> list[PlanTask]:
        return order_tasks(self.order, tasks, board.cap[:board.horizon],
                           board.platform.p_stat)


# --------------------------------------------------------------------------- list heuristics
class ListHeuristic(OrderedPlanner):
    """Sort the tasks, then PlaceTask each in turn (Kassab et al.'s list heuristics)."""

    def plan(self, tasks: Sequence[PlanTask], board: PowerBoard) -> PowerBoard:
        return list_schedule(self.ordered(tasks, board), board)


def _list(order: str, doc: str) -> type[ListHeuristic]:
    return type(f"List_{order}", (ListHeuristic,), {"name": order, "order": order,
                                                    "__doc__": doc})


LIST_HEURISTICS = [
    _list("lpt", "List scheduling, largest processing time first."),
    _list("spt", "List scheduling, shortest processing time first."),
    _list("lpn", "List scheduling, largest power need first."),
    _list("lptpn", "List scheduling, largest processing time x power need first."),
    _list("twoqs", "List scheduling alternating the LPTPN and LPT queues (TwoQs)."),
    _list("lpp", "List scheduling, least possible places on the envelope first."),
    _list("random", "List scheduling in the workload's (random) order."),
]


# ----------------------------------------------------------------------------- binary search
def fill_machines(tasks: Sequence[PlanTask], board: PowerBoard, horizon: int
                  ) -> PowerBoard | None:
    """Fill machine after machine with the tasks that fit before ``horizon`` (best fit); the
    board if every task is placed, None as soon as a machine takes none."""
    from lease_manager import Spot  # (the board loads with a planner's runs only: start-up)

    left = list(tasks)
    machine = 0
    while left:
        if machine >= board.platform.machines:
            return None
        took = []
        for task in left:
            xs, slack = board.candidates(task, machine, 0, horizon)
            if not len(xs):
                continue
            for i in np.lexsort((xs, slack)).tolist():   # least room left, then earliest
                spot = Spot(int(xs[i]), machine)
                if board.fits(task, spot):
                    board.place(task, spot)
                    took.append(task)
                    break
        if not took:
            return None
        taken = {id(t) for t in took}
        left = [t for t in left if id(t) not in taken]
        machine += 1
    return board


class BinarySearch(OrderedPlanner):
    """Binary search on the horizon, filling machine after machine (Kassab et al.'s BS)."""

    def plan(self, tasks: Sequence[PlanTask], board: PowerBoard) -> PowerBoard:
        order = self.ordered(tasks, board)
        best = list_schedule(order, board.fresh())
        if len(best.placements) < len(tasks):
            return best          # the list schedule could not place them all: no horizon
        lo, hi = 0, best.makespan
        while hi - lo > 1:
            mid = (lo + hi) // 2
            tried = fill_machines(order, board.fresh(), mid)
            if tried is None:
                lo = mid
            else:
                best, hi = tried, tried.makespan
        return best


def _bs(order: str) -> type[BinarySearch]:
    return type(f"BS_{order}", (BinarySearch,), {
        "name": f"bs-{order}", "order": order,
        "__doc__": f"Binary search on the horizon, tasks in {order.upper()} order."})


BINARY_SEARCHES = [_bs(o) for o in ("lpt", "lpn", "lptpn", "lpp", "twoqs")]


# ------------------------------------------------------------------------------------ stripes
class Stripe(OrderedPlanner):
    """Stripes defined by the longest task left, filled in order (Kassab et al.'s Stripe)."""

    def plan(self, tasks: Sequence[PlanTask], board: PowerBoard) -> PowerBoard:
        left = self.ordered(tasks, board)
        position = 0
        while left:
            longest = max(left, key=lambda t: t.length)   # the first of the longest
            left.remove(longest)
            spot = board.place_earliest(longest, position)
            if spot is None:
                continue            # no room for it anywhere: left unplaced
            start, end = spot.x, spot.x + longest.length
            rest = []
            for task in left:
                if board.place_earliest(task, start, end) is None:
                    rest.append(task)
            left = rest
            position = end
        return board


def _stripe(order: str) -> type[Stripe]:
    return type(f"Stripe_{order}", (Stripe,), {
        "name": f"stripe-{order}", "order": order,
        "__doc__": f"Stripes filled in {order.upper()} order."})


STRIPES = [_stripe(o) for o in ("lpt", "lptpn", "twoqs", "lpp")]


# ---------------------------------------------------------------------- genetic algorithm
SEEDED = ("lptpn", "twoqs", "lpt", "lpn", "lpp")


class Genetic(Planner):
    """Genetic algorithm over task orders, seeded with the list orders (Kassab et al.)."""

    name = "ga"
    mutations = 10
    chunk_swaps = 10
    crossovers = 20

    def plan(self, tasks: Sequence[PlanTask], board: PowerBoard) -> PowerBoard:
        config = self.ctx.config
        size = max(config.get("greenpower", "ga-population"), len(SEEDED))
        patience = config.get("greenpower", "ga-patience")
        rng = self.ctx.rng("ga")
        n = len(tasks)
        self.evaluations = 0
        cache: dict[tuple[int, ...], tuple[float, PowerBoard]] = {}

        def fitness(order: tuple[int, ...]) -> float:
            got = cache.get(order)
            if got is None:
                planned = list_schedule([tasks[i] for i in order], board.fresh())
                got = cache[order] = (score(planned, n), planned)
                self.evaluations += 1
            return got[0]

        index = {id(t): i for i, t in enumerate(tasks)}
        population = []
        for name in SEEDED:
            population.append(tuple(index[id(t)] for t in order_tasks(
                name, tasks, board.cap[:board.horizon], board.platform.p_stat)))
        while len(population) < size:
            population.append(tuple(int(i) for i in rng.permutation(n)))
        best = min(fitness(o) for o in population)
        stale = 0
        self.generations = 0
        while stale < patience and n > 1:
            self.generations += 1
            weights = np.array([1.0 / max(fitness(o), 1e-9) for o in population])
            drawn = rng.choice(len(population), p=weights / weights.sum(),
                               size=self.mutations + self.chunk_swaps + 2 * self.crossovers)
            parents = [population[i] for i in drawn.tolist()]
            m, c = self.mutations, self.mutations + self.chunk_swaps
            children = [swap(o, rng) for o in parents[:m]]
            children += [chunk_swap(o, rng) for o in parents[m:c]]
            children += [one_cut_ox(a, b, rng) for a, b in zip(parents[c::2], parents[c + 1::2])]
            pool = list(dict.fromkeys(population + children))     # each order once
            pool.sort(key=fitness)                                 # stable: elders first
            population = pool[:size]
            top = fitness(population[0])
            if top < best:
                best, stale = top, 0
            else:
                stale += 1
        return cache[min(population, key=fitness)][1]


def swap(order: tuple[int, ...], rng: np.random.Generator) -> tuple[int, ...]:
    """1 to 5 swaps of two random positions."""
    genes = list(order)
    for _ in range(int(rng.integers(1, 6))):
        i, j = rng.choice(len(genes), 2, replace=False).tolist()
        genes[i], genes[j] = genes[j], genes[i]
    return tuple(genes)


def chunk_swap(order: tuple[int, ...], rng: np.random.Generator) -> tuple[int, ...]:
    """Two chunks of the same random length (1 to 5, at most half the order) swapped."""
    n = len(order)
    size = int(rng.integers(1, max(2, min(5, n // 2) + 1)))
    if 2 * size > n:
        return swap(order, rng)
    a = int(rng.integers(0, n - 2 * size + 1))
    b = int(rng.integers(a + size, n - size + 1))
    genes = list(order)
    genes[a:a + size], genes[b:b + size] = order[b:b + size], order[a:a + size]
    return tuple(genes)


def one_cut_ox(first: tuple[int, ...], second: tuple[int, ...],
               rng: np.random.Generator) -> tuple[int, ...]:
    """One-cut order crossover: ``first``'s prefix, then the rest in ``second``'s order."""
    cut = int(rng.integers(1, len(first)))
    head = first[:cut]
    taken = set(head)
    return head + tuple(g for g in second if g not in taken)


PLANNERS: list[type[Planner]] = [*LIST_HEURISTICS, *BINARY_SEARCHES, *STRIPES, Genetic]
#: every planner's name, as the figures list them
PLANNER_NAMES = tuple(cls.name for cls in PLANNERS)
