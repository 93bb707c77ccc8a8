"""lease_manager: a Haizea-style lease manager for clusters and data centers.

The public API is what this module exports; everything else may change.
"""

__version__ = "0.1.0"

from lease_manager.config.schema import Option, OptionType  # noqa: E402
from lease_manager.errors import ConfigError, InputError, LeaseManagerError, TraceError  # noqa: E402
from lease_manager.hookspecs import hookimpl  # noqa: E402
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest  # noqa: E402
from lease_manager.policies import (AdmissionPolicy, Annotator, HostSelectionPolicy,  # noqa: E402
                       Policy, PricingPolicy, QueuePolicy)
from lease_manager.run import Run, load_run  # noqa: E402
from lease_manager.kernel.slottable import Reservation, SlotTable  # noqa: E402

__all__ = [
    "__version__", "hookimpl", "Option", "OptionType", "Lease", "LeaseState", "LeaseType",
    "VMRequest", "Reservation", "SlotTable", "Run", "load_run", "Policy", "AdmissionPolicy",
    "Annotator",
    "PricingPolicy", "QueuePolicy", "HostSelectionPolicy", "LeaseManagerError", "InputError",
    "ConfigError", "TraceError",
]
