"""Built-in planner ``in-order``: a list schedule in the workload's order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lease_manager.hookspecs import hookimpl
from lease_manager.policies import Planner

if TYPE_CHECKING:
    from lease_manager.planning.board import PlanTask, PowerBoard


def list_schedule(tasks: Sequence[PlanTask], board: PowerBoard) -> PowerBoard:
    """Place every task in turn at its earliest spot (PlaceTask), each from time 0."""
    for task in tasks:
        board.place_earliest(task)
    return board


class InOrder(Planner):
    """PlaceTask on each lease in the workload's order (Kassab et al.'s list scheduling in
    the order given)."""

    name = "in-order"

    def plan(self, tasks: Sequence[PlanTask], board: PowerBoard) -> PowerBoard:
        return list_schedule(tasks, board)


@hookimpl
def register_policies():
    return [InOrder]
