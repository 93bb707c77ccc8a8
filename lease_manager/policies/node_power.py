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
    """Switch a node off once it has been idle ``[power] idle-timeout`` seconds."""

    name = "switch-off-idle"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.timeout: float = ctx.config.get("power", "idle-timeout")

    def switch_off(self, idle: np.ndarray, idle_since: np.ndarray, now: float) -> Iterable[int]:
        return idle[now - idle_since >= self.timeout].tolist()

    def next_check(self, idle_since: float) -> float | None:
        return idle_since + self.timeout


@hookimpl
def register_policies():
    return [AlwaysOn, SwitchOffIdle]
