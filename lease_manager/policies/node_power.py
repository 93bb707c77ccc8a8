"""Built-in node-power policies: ``always-on`` and ``switch-off-idle``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.hookspecs import hookimpl
from lease_manager.policies import NodePowerPolicy

if TYPE_CHECKING:
    from lease_manager.context import RunContext


class AlwaysOn(NodePowerPolicy):
    """Never switch a node off (nodes that start off are booted when a lease needs them)."""

    name = "always-on"
    switches_off = False


class SwitchOffIdle(NodePowerPolicy):
    """Switch a node off once it has been idle ``[power] idle-timeout`` seconds (with
    Kassab et al.'s look-ahead and look-back, ``[power] look-ahead`` and ``look-back``)."""

    name = "switch-off-idle"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.timeout: float = ctx.config.get("power", "idle-timeout")
        self.look_ahead: bool = ctx.config.get("power", "look-ahead")
        self.look_back: bool = ctx.config.get("power", "look-back")

    def switch_off(self, idle: np.ndarray, idle_since: np.ndarray, now: float) -> Iterable[int]:
        return idle[now - idle_since >= self.timeout].tolist()

    def next_check(self, idle_since: float) -> float | None:
        return idle_since + self.timeout

    def stays_on(self, now: float, next_start: float, off_seconds: float,
                 on_seconds: float) -> bool:
        """Also, with ``[power] look-ahead``, when the lease's boot would begin just as the
        shutdown ends, and with ``look-back``, when it would begin within ``on_seconds`` of
        the shutdown."""
        return (next_start < now + off_seconds + on_seconds
                or (self.look_ahead and next_start <= now + off_seconds + on_seconds)
                or (self.look_back and next_start <= now + 2 * on_seconds))


@hookimpl
def register_policies():
    return [AlwaysOn, SwitchOffIdle]
