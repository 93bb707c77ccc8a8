"""Deprecated module path of the ``process`` backend, which is now
:mod:`lease_manager.enactment.process_backend` (its helpers: ``os_processes``,
``vm_processes``, ``cgroups``). Kept for one release so that plugins and scripts that import
``ProcessBackend`` from here keep working: import it from ``process_backend`` instead."""

from lease_manager.enactment.process_backend import (
    ProcessBackend,
    register_options,
    register_policies,
)

__all__ = ["ProcessBackend", "register_options", "register_policies"]
