"""lm-shortest: the queue policy ``shortest-first`` and a summary of the leases it ordered."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lease_manager import BOOLEAN, Lease, Option, QueuePolicy, RunContext, hookimpl

__version__ = "0.1.0"


class ShortestFirst(QueuePolicy):
    """The wait queue by requested duration, shortest first (ties: arrival order)."""

    name = "shortest-first"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.sign = -1 if ctx.config.get("shortest", "longest-first") else 1

    def sort_key(self, lease: Lease) -> Any:
        return (self.sign * lease.requested_duration, lease.submit, lease.id)


class Summary:
    """The leases of the current run that ended, and the order in which leases started."""

    def __init__(self) -> None:
        self.ended = 0
        self.started: list[int] = []

    def clear(self) -> None:
        self.ended = 0
        self.started.clear()


SUMMARY = Summary()


@hookimpl
def register_options() -> Iterable[Option]:
    return [Option("shortest", "longest-first", BOOLEAN, False,
                   doc="Order the queue longest first instead.")]


@hookimpl
def register_policies() -> Iterable[type]:
    return [ShortestFirst]


@hookimpl
def run_started(ctx: RunContext) -> None:
    SUMMARY.clear()


@hookimpl
def lease_started(ctx: RunContext, lease: Lease, now: float) -> None:
    SUMMARY.started.append(lease.id)


@hookimpl
def lease_ended(ctx: RunContext, lease: Lease, now: float) -> None:
    SUMMARY.ended += 1


@hookimpl
def collect_summary(ctx: RunContext) -> dict[str, Any]:
    return {"shortest_leases_ended": SUMMARY.ended,
            "shortest_queue_order": " ".join(map(str, SUMMARY.started))}
