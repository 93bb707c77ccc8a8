"""Policies' answers checked where they enter the core.

A run's policy object enters the core once, when the run instantiates it: :func:`guard` then
puts, on that object, a checking wrapper over each method whose answer the core uses (an
instance attribute over the class's method). A duplicate, out-of-range or wrongly-typed
answer stops the run with :class:`PolicyAnswerError`, one line that names the policy, the
plugin and package that provide it, and what was wrong, instead of failing frames deep in
the core. The checks test cheap invariants of an answer (types, ranges, repeats), never
re-derive it: they are on the hot path of replays. The core's own policies
(``BUILTIN_PLUGINS``) are not wrapped: their tests check their answers, and a replay with
them pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from lease_manager.errors import LeaseManagerError

_REAL = (int, float, np.integer, np.floating)
_BOOL = (bool, np.bool_)
_INT = (int, np.integer)


class PolicyAnswerError(LeaseManagerError):
    """A policy answered the core with something the core cannot use."""


def _is_real(value: Any) -> bool:
    """A number that is not a boolean, and not NaN."""
    return isinstance(value, _REAL) and not isinstance(value, _BOOL) and value == value


def _is_index(value: Any) -> bool:
    return isinstance(value, _INT) and not isinstance(value, _BOOL)


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Guard:
    """Builds one policy's checking wrappers; :meth:`wrong` words what was wrong."""

    def __init__(self, policy: Any, kind: str, provider: Callable[[], str]) -> None:
        self.policy = policy
        self.kind = kind
        self.provider = provider

    def wrong(self, method: str, what: str) -> PolicyAnswerError:
        name = getattr(self.policy, "name", "") or type(self.policy).__name__
        return PolicyAnswerError(f"{self.kind} policy {name!r} ({self.provider()}): "
                                 f"{method}() {what}")

    def original(self, method: str) -> Any:
        return getattr(self.policy, method, None)

    # ------------------------------------------------------------------- one per kind
    def admission(self) -> dict[str, Callable]:
        admit = self.original("admit")

        def checked_admit(lease: Any, now: float) -> str | None:
            reason = admit(lease, now)
            if reason is not None and not isinstance(reason, str):
                raise self.wrong("admit", f"returned {_show(reason)} for lease {lease.id}: "
                                 f"None to accept, or the reason for rejecting (a str)")
            return reason

        return {"admit": checked_admit}

    def pricing(self) -> dict[str, Callable]:
        price, surcharge = self.original("price"), self.original("surcharge")

        def checked_price(lease: Any, now: float) -> float:
            value = price(lease, now)
            if not _is_real(value):
                raise self.wrong("price", f"returned {_show(value)} for lease {lease.id}: "
                                 f"a price is a number")
            return value

        def checked_surcharge(lease: Any, seconds_suspended: float) -> float:
            value = surcharge(lease, seconds_suspended)
            if not _is_real(value):
                raise self.wrong("surcharge", f"returned {_show(value)} for lease "
                                 f"{lease.id}: a surcharge is a number")
            return value

        return {"price": checked_price, "surcharge": checked_surcharge}

    def queue(self) -> dict[str, Callable]:
        hold, release = self.original("hold"), self.original("release")

        def checked_hold(lease: Any, now: float) -> Any:
            answer = hold(lease, now)
            if not isinstance(answer, _BOOL):
                raise self.wrong("hold", f"returned {_show(answer)} for lease {lease.id}: "
                                 f"True or False")
            return answer

        def checked_release(held: tuple, now: float) -> list:
            answer = release(held, now)
            if not isinstance(answer, Iterable):
                raise self.wrong("release", f"returned {_show(answer)}: an iterable of "
                                 f"held leases")
            chosen = list(answer)
            if chosen:
                waiting = {id(lease) for lease in held}
                seen: set[int] = set()
                for lease in chosen:
                    if id(lease) not in waiting:
                        raise self.wrong("release", f"returned {_show(lease)}, which is not "
                                         f"one of the held leases it was given")
                    if id(lease) in seen:
                        raise self.wrong("release", f"returned lease {lease.id} twice")
                    seen.add(id(lease))
            return chosen

        sort_key = self.original("sort_key")
        last: list[Any] = []   # the previous key (keys are compared with each other)

        def checked_sort_key(lease: Any) -> Any:
            key = sort_key(lease)
            if last:
                try:
                    key < last[0]   # noqa: B015 (the comparison is the test)
                except TypeError:
                    raise self.wrong("sort_key", f"returned {_show(key)} for lease {lease.id},"
                                     f" which does not compare with its key "
                                     f"{_show(last[0])} of an earlier lease") from None
                last[0] = key
            else:
                last.append(key)
            return key

        return {"hold": checked_hold, "release": checked_release, "sort_key": checked_sort_key}

    def host_selection(self) -> dict[str, Callable]:
        order_hosts = self.original("order_hosts")

        def checked_order_hosts(lease: Any, start: float, end: float, table: Any) -> Any:
            answer = order_hosts(lease, start, end, table)
            try:
                order = answer if type(answer) is np.ndarray else np.asarray(answer)
            except (ValueError, TypeError):   # ragged, or not a sequence numpy can read
                order = np.empty((0, 0))
            if order.ndim != 1 or (order.dtype.kind not in "iu" and order.size):
                raise self.wrong("order_hosts", f"returned {_show(answer)} for lease "
                                 f"{lease.id}: a sequence of node indices (integers)")
            if order.size:
                nodes = table.capacity.shape[0]
                try:
                    counts = np.bincount(order if order.dtype.kind == "i"
                                         else order.astype(np.intp), minlength=nodes)
                except ValueError:   # a negative index
                    counts = None
                if counts is None or len(counts) > nodes:
                    bad = [int(n) for n in order.tolist() if not 0 <= n < nodes]
                    raise self.wrong("order_hosts", f"returned node {bad[0]} for lease "
                                     f"{lease.id}: the nodes are 0 to {nodes - 1}")
                if np.count_nonzero(counts) != order.size:
                    twice = int(np.flatnonzero(counts > 1)[0])
                    raise self.wrong("order_hosts", f"returned node {twice} "
                                     f"{int(counts[twice])} times for lease {lease.id}: each "
                                     f"node at most once")
            return answer   # (as it was: the core reads it as it always has)

        return {"order_hosts": checked_order_hosts}

    def preemption(self) -> dict[str, Callable]:
        score, score_at = self.original("score"), self.original("score_at")

        def check(method: str, value: Any, preemptor: Any, preemptee: Any) -> Any:
            if value is not None and not _is_real(value):
                raise self.wrong(method, f"returned {_show(value)} for lease {preemptee.id} "
                                 f"preempted by {preemptor.id}: None, or a number")
            return value

        def checked_score(preemptor: Any, preemptee: Any, now: float) -> float | None:
            return check("score", score(preemptor, preemptee, now), preemptor, preemptee)

        def checked_score_at(preemptor: Any, preemptee: Any, at: float,
                             estimates: tuple[float, float, float]) -> float | None:
            return check("score_at", score_at(preemptor, preemptee, at, estimates),
                         preemptor, preemptee)

        return {"score": checked_score, "score_at": checked_score_at}

    def node_power(self) -> dict[str, Callable]:
        switch_off = self.original("switch_off")
        next_check, stays_on = self.original("next_check"), self.original("stays_on")

        def checked_switch_off(idle: np.ndarray, idle_since: np.ndarray, now: float) -> list:
            answer = switch_off(idle, idle_since, now)
            if not isinstance(answer, Iterable):
                raise self.wrong("switch_off", f"returned {_show(answer)}: an iterable of "
                                 f"idle node indices")
            nodes = list(answer)
            if nodes:
                allowed = set(idle.tolist())
                seen: set[int] = set()
                for node in nodes:
                    if not _is_index(node) or node not in allowed:
                        raise self.wrong("switch_off", f"returned {_show(node)}, which is not "
                                         f"one of the idle nodes it was given")
                    if node in seen:
                        raise self.wrong("switch_off", f"returned node {node} twice")
                    seen.add(node)
            return nodes

        def checked_next_check(idle_since: float) -> float | None:
            when = next_check(idle_since)
            if when is not None and not _is_real(when):
                raise self.wrong("next_check", f"returned {_show(when)}: None, or a time")
            return when

        def checked_stays_on(now: float, next_start: float, off_seconds: float,
                             on_seconds: float) -> Any:
            answer = stays_on(now, next_start, off_seconds, on_seconds)
            if not isinstance(answer, _BOOL):
                raise self.wrong("stays_on", f"returned {_show(answer)}: True or False")
            return answer

        return {"switch_off": checked_switch_off, "next_check": checked_next_check,
                "stays_on": checked_stays_on}

    def operating_point(self) -> dict[str, Callable]:
        level = self.original("level")
        power = self.policy.ctx.power

        def checked_level(lease: Any, now: float) -> int:
            answer = level(lease, now)
            levels = power.levels if power is not None else 1
            if not _is_index(answer) or not 0 <= answer < levels:
                raise self.wrong("level", f"returned {_show(answer)} for lease {lease.id}: "
                                 f"the levels are 0 to {levels - 1}")
            return answer

        return {"level": checked_level}

    def site_selection(self) -> dict[str, Callable]:
        select, select_batch = self.original("select"), self.original("select_batch")

        def check(method: str, choice: Any, lease: Any, sites: Any) -> Any:
            if isinstance(choice, str):
                return choice
            if not _is_index(choice) or not 0 <= choice < len(sites):
                raise self.wrong(method, f"chose {_show(choice)} for lease {lease.id}: a site's "
                                 f"index (0 to {len(sites) - 1}), or why no site may have it")
            return choice

        def checked_select(lease: Any, sites: Any, length: float, now: float) -> int | str:
            return check("select", select(lease, sites, length, now), lease, sites)

        def checked_select_batch(leases: Any, sites: Any, now: float,
                                 send: Callable[[Any, int | str], None]) -> None:
            batch = {id(lease) for lease in leases}
            sent: set[int] = set()

            def checked_send(lease: Any, choice: int | str) -> None:
                if id(lease) not in batch:
                    raise self.wrong("select_batch", f"sent {_show(lease)}, which is not in "
                                     f"its batch")
                if id(lease) in sent:
                    raise self.wrong("select_batch", f"sent lease {lease.id} twice")
                sent.add(id(lease))
                send(lease, check("select_batch", choice, lease, sites))

            select_batch(leases, sites, now, checked_send)
            missing = [lease.id for lease in leases if id(lease) not in sent]
            if missing:
                raise self.wrong("select_batch", f"sent no site for leases {missing[:10]} of "
                                 f"its batch: every lease once")

        return {"select": checked_select, "select_batch": checked_select_batch}

    def allocation(self) -> dict[str, Callable]:
        from lease_manager.kernel.malleable import Allocation

        initial, reallocate = self.original("initial"), self.original("reallocate")
        next_event = self.original("next_event")

        def checked_initial(lease: Any, now: float) -> Any:
            answer = initial(lease, now)
            if answer is not None and not isinstance(answer, Allocation):
                raise self.wrong("initial", f"returned {_show(answer)} for lease {lease.id}: "
                                 f"None, or an Allocation")
            return answer

        def checked_reallocate(now: float, reasons: frozenset[str]) -> list:
            answer = reallocate(now, reasons)
            if not isinstance(answer, Iterable):
                raise self.wrong("reallocate", f"returned {_show(answer)}: an iterable of "
                                 f"(lease, Allocation) pairs")
            decisions = list(answer)
            seen: set[int] = set()
            for decision in decisions:
                if (not isinstance(decision, tuple) or len(decision) != 2
                        or not isinstance(decision[1], Allocation)
                        or not hasattr(decision[0], "malleable")):
                    raise self.wrong("reallocate", f"returned {_show(decision)}: each decision "
                                     f"is a (lease, Allocation) pair")
                if id(decision[0]) in seen:
                    raise self.wrong("reallocate", f"decided lease {decision[0].id} twice")
                seen.add(id(decision[0]))
            return decisions

        def checked_next_event(now: float) -> float:
            when = next_event(now)
            if not _is_real(when):
                raise self.wrong("next_event", f"returned {_show(when)}: a time (inf: none)")
            return when

        return {"initial": checked_initial, "reallocate": checked_reallocate,
                "next_event": checked_next_event}

    def planner(self) -> dict[str, Callable]:
        from lease_manager.planning.board import PowerBoard

        plan = self.original("plan")

        def checked_plan(tasks: Any, board: Any) -> Any:
            answer = plan(tasks, board)
            if not isinstance(answer, PowerBoard):
                raise self.wrong("plan", f"returned {_show(answer)}: the PowerBoard holding "
                                 f"its plan")
            return answer

        return {"plan": checked_plan}


#: policy kind -> the Guard method building its checks (kinds whose answers the core does
#: not use are absent: probes and annotators answer nothing, enactment backends report their
#: own failures as EnactmentError)
CHECKED_KINDS: dict[str, Callable[[Guard], dict[str, Callable]]] = {
    "admission": Guard.admission,
    "pricing": Guard.pricing,
    "queue": Guard.queue,
    "host-selection": Guard.host_selection,
    "preemption": Guard.preemption,
    "node-power": Guard.node_power,
    "operating-point": Guard.operating_point,
    "site-selection": Guard.site_selection,
    "allocation": Guard.allocation,
    "planner": Guard.planner,
}


def guard(policy: Any, kind: str, provider: Callable[[], str]) -> Any:
    """Put checking wrappers over ``policy``'s answering methods (those it has); return it.

    ``provider`` says which plugin and package provide the policy (called only to word an
    error)."""
    build = CHECKED_KINDS.get(kind)
    if build is None:
        return policy
    for method, checked in build(Guard(policy, kind, provider)).items():
        if getattr(policy, method, None) is not None:
            object.__setattr__(policy, method, checked)
    return policy
