"""Built-in operating-point policies: ``highest`` and ``lowest``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.hookspecs import hookimpl
from lease_manager.policies import OperatingPointPolicy

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease


class Highest(OperatingPointPolicy):
    """Every lease at the highest frequency (no DVFS)."""

    name = "highest"

    def level(self, lease: Lease, now: float) -> int:
        power = self.ctx.power
        return 0 if power is None else power.top_level


class Lowest(OperatingPointPolicy):
    """Every lease at the lowest frequency."""

    name = "lowest"

    def level(self, lease: Lease, now: float) -> int:
        return 0


@hookimpl
def register_policies():
    return [Highest, Lowest]
