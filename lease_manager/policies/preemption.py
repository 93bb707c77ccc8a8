"""Built-in preemption policies: ``no-preemption``, ``ar-preempts-be``, ``ar-preempts-everything``
and Haizea 1.1's ``deadline``.

As in Haizea, a preemptable lease is scored by age: a lease submitted a week or more before is
not preempted; younger leases score higher and are preempted first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseType
from lease_manager.policies import PreemptionPolicy

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease

AGE_HORIZON = 7 * 86400.0


def age_score(lease: Lease, now: float) -> float | None:
    """1 for a lease submitted now, falling to 0 at a week; None beyond."""
    age = now - lease.submit
    if age >= AGE_HORIZON:
        return None
    return (AGE_HORIZON - age) / AGE_HORIZON


class NoPreemption(PreemptionPolicy):
    """No lease is ever preempted."""

    name = "no-preemption"
    preempts_nothing = True

    def score(self, preemptor: Lease, preemptee: Lease, now: float) -> float | None:
        return None


class ARPreemptsBE(PreemptionPolicy):
    """Advance reservations preempt best-effort leases (younger first)."""

    name = "ar-preempts-be"

    def score(self, preemptor: Lease, preemptee: Lease, now: float) -> float | None:
        if preemptor.type is not LeaseType.ADVANCE_RESERVATION:
            return None
        if (preemptee.type is not LeaseType.BEST_EFFORT
                or preemptee.extra.get("preemptible") is False):
            return None
        return age_score(preemptee, now)


class ARPreemptsEverything(PreemptionPolicy):
    """Advance reservations preempt any lease that is not an advance reservation (younger
    first); leases marked ``preemptible = no`` are never preempted."""

    name = "ar-preempts-everything"

    def score(self, preemptor: Lease, preemptee: Lease, now: float) -> float | None:
        if preemptor.type is not LeaseType.ADVANCE_RESERVATION:
            return None
        if (preemptee.type is LeaseType.ADVANCE_RESERVATION
                or preemptee.extra.get("preemptible") is False):
            return None
        return age_score(preemptee, now)


class DeadlinePreemption(PreemptionPolicy):
    """Haizea 1.1's ``deadline`` policy: advance reservations and deadline leases may preempt
    best-effort leases (always, before anything else) and deadline leases that would still
    meet their deadline after waiting for the preemptor (those with the most slack first);
    advance reservations and immediate leases are never preempted, nor leases marked
    ``preemptible = no``.

    A deadline preemptee's slack, as Haizea's ``DeadlinePolicy`` computes it at the time of the
    preemption ``at``: (deadline - (at + delay)) / remaining, where remaining is its remaining
    requested time at ``at`` and delay is its suspend estimate + the preemptor's duration + its
    resume estimate (without suspension: its whole request, and the preemptor's duration). The
    scheduler passes ``at`` and the ``estimates`` (remaining, suspend, resume); without them,
    ``at`` is taken as given and the estimates as none."""

    name = "deadline"
    #: the score of a best-effort lease: above any slack, so taken first
    BEST_EFFORT = 1e18
    #: the scheduler scores at the preemptor's start, with the estimates (see above)
    scores_at_preemption = True

    def score(self, preemptor: Lease, preemptee: Lease, now: float,
              estimates: tuple[float, float, float] | None = None) -> float | None:
        if preemptor.type not in (LeaseType.ADVANCE_RESERVATION, LeaseType.DEADLINE):
            return None
        if preemptee.extra.get("preemptible") is False:
            return None
        if preemptee.type is LeaseType.BEST_EFFORT:
            return self.BEST_EFFORT
        if preemptee.type is not LeaseType.DEADLINE or preemptee.deadline is None:
            return None
        remaining, suspend, resume = (estimates if estimates is not None
                                      else (preemptee.remaining_requested, 0.0, 0.0))
        delayed = now + suspend + preemptor.requested_duration + resume
        if remaining <= 0 or delayed + remaining >= preemptee.deadline:
            return None
        return (preemptee.deadline - delayed) / remaining

    def score_at(self, preemptor: Lease, preemptee: Lease, at: float,
                 estimates: tuple[float, float, float]) -> float | None:
        return self.score(preemptor, preemptee, at, estimates=estimates)


@hookimpl
def register_policies():
    return [NoPreemption, ARPreemptsBE, ARPreemptsEverything, DeadlinePreemption]
