"""Offline planning: a batch of known leases planned on a time grid under a power envelope
(:mod:`.board`: the platform and PlaceTask; :mod:`.mode`: the run's planning mode; the
built-in planner ``in-order`` is in :mod:`lease_manager.policies.planners`)."""
