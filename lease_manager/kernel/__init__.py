"""The kernel: leases, resources, the slot table, the mapper, the scheduler, the event loop
and clocks."""
