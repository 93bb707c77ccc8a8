"""What the wait queue's backfiller (:class:`~lease_manager.kernel.scheduler.queue.Backfiller`)
asks of its scheduler, as a Protocol (a module of its own: queue.py is near the size limit)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from lease_manager.kernel.lease import Lease, LeaseState
    from lease_manager.kernel.policy_protocols import QueueProtocol
    from lease_manager.kernel.scheduler.haizea_asap import HaizeaPlanner
    from lease_manager.kernel.scheduler.image_transfer import TransferPlanner
    from lease_manager.kernel.scheduler.placing import Placer
    from lease_manager.kernel.scheduler.plan_book import PlanBook
    from lease_manager.kernel.scheduler.reevaluator import Reevaluator
    from lease_manager.kernel.scheduler.seams import BootableNodes, PowerGate
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.scheduler.suspension import Suspender
    from lease_manager.kernel.scheduler.wait_queue import WaitQueue
    from lease_manager.kernel.slottable import SlotTable


class BackfillHost(Protocol):
    """What the backfiller asks of the scheduler (:class:`~lease_manager.kernel.scheduler.
    LeaseScheduler`): the parts it reads once, and on the per-lease path the energy parts
    (nodes to boot, the power cap), the re-evaluator, the suspender and the hooks."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def settings(self) -> SchedulerSettings: ...
    @property
    def waiting(self) -> WaitQueue: ...
    @property
    def plans(self) -> PlanBook: ...
    @property
    def max_future(self) -> float: ...
    @property
    def placer(self) -> Placer: ...
    @property
    def transfer_planner(self) -> TransferPlanner | None: ...
    @property
    def haizea_planner(self) -> HaizeaPlanner: ...
    @property
    def queue_policy(self) -> QueueProtocol: ...
    @property
    def reeval(self) -> Reevaluator: ...
    @property
    def suspender(self) -> Suspender: ...
    @property
    def bootable(self) -> Mapping[int, float]: ...
    @property
    def boots(self) -> BootableNodes: ...
    @property
    def power(self) -> PowerGate | None: ...
    @property
    def _muted(self) -> Collection[str]: ...
    def _emit(self, hook: str, **kw: Any) -> None: ...
    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...
    def length(self, lease: Lease) -> float: ...
