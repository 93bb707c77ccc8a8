"""The real-time lease daemon: ``lease-manager serve``.

The same scheduler that replays traces runs on the real clock; a JSON HTTP API takes requests
(:mod:`.api`), every accepted lease and state change is kept in SQLite (:mod:`.store`), and an
enactment backend carries the leases out (:mod:`.driver`, :mod:`lease_manager.enactment`).
"""
