"""Threads that serve one API connection after another, instead of one new thread each.

``ThreadingMixIn`` starts a thread per connection, and its ``start()`` waits until the new
thread runs: the accepting thread then waits for the interpreter lock twice per connection
(handed over among the busy handler threads and the engine's), and the thread's stack is
mapped and unmapped each time. With a new connection per request at 8 clients
(``bench/daemon.py``) the daemon spent 0.5-0.6 ms more CPU a request than with kept-alive
connections, and about 0.2-0.3 ms of it was that. Here a thread that has closed its
connection waits for the next one; the accepting thread hands a connection to a waiting
thread through a queue, and starts a new thread only when none waits.

Limits are unchanged: a connection is still served as soon as it is admitted (a waiting
thread or a new one, never a queue of connections waiting for a free thread), so the
:class:`~lease_manager.daemon.connections.ConnectionGuard`'s cap and request timeout hold as
before. Threads only wait once their connection is closed; at most ``idle_workers`` wait, the
others end. No more threads are ever alive than connections were once open at the same time.
"""

from __future__ import annotations

import queue
import threading
from socketserver import ThreadingMixIn
from typing import Any


class ReusedThreadsMixin(ThreadingMixIn):
    """For a ``socketserver`` server: each connection on a thread of its own, as with
    :class:`ThreadingMixIn` (same error handling and closing), but the threads are kept for
    later connections. The threads are daemon threads. Put it before the server class."""

    daemon_threads = True
    #: threads kept waiting for a connection; the ones over this end
    idle_workers = 16

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._workers_lock = threading.Lock()
        self._idle = 0                      # threads waiting on the hand-over queue
        self._handover: queue.SimpleQueue[tuple[Any, Any] | None] = queue.SimpleQueue()
        self._workers_closed = False
        super().__init__(*args, **kwargs)

    @property
    def idle(self) -> int:
        """How many threads wait for a connection now."""
        with self._workers_lock:
            return self._idle

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._workers_lock:
            if self._idle:
                self._idle -= 1     # that waiting thread takes this connection
                self._handover.put((request, client_address))
                return
        thread = threading.Thread(target=self._serve_connections,
                                  args=(request, client_address), daemon=True)
        thread.start()

    def _serve_connections(self, request: Any, client_address: Any) -> None:
        while True:
            self.process_request_thread(request, client_address)
            with self._workers_lock:
                if self._workers_closed or self._idle >= self.idle_workers:
                    return
                self._idle += 1
            item = self._handover.get()
            if item is None:
                return
            request, client_address = item

    def server_close(self) -> None:
        super().server_close()
        with self._workers_lock:
            self._workers_closed = True
            idle, self._idle = self._idle, 0
        for _ in range(idle):
            self._handover.put(None)
