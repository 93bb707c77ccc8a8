"""Threads that accept their own connections and serve one after another.

``ThreadingMixIn`` started a thread per connection (its ``start()`` waits until the new thread
runs, and the thread's stack is mapped and unmapped each time). Then one accepting thread
handed each connection to a waiting thread through a queue: two threads woke for every
connection, each waiting for the interpreter lock, and ``strace`` still counted some 50 more
``futex`` calls per connection than on a kept-alive one. Here the waiting threads themselves
block in ``accept()`` on the listening socket (the kernel wakes one of them per connection),
and the thread that accepted a connection serves it: one wake per connection, no hand-over.

Limits are unchanged: one thread always waits in ``accept()`` (a thread that takes the last
waiter's place starts a new waiter first), so an admitted connection is served at once, never
queued behind a busy thread, and the
:class:`~lease_manager.daemon.connections.ConnectionGuard`'s cap and request timeout hold as
before. At most ``idle_workers`` threads wait; the others end once their connection is
closed. No more threads are alive than connections once open at the same time, plus one.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

log = logging.getLogger(__name__)


class AcceptingWorkersMixin:
    """For a ``socketserver`` TCP server, in place of ``ThreadingMixIn``: each connection on
    a thread of its own, with the server's ``verify_request``, ``process_request``,
    ``finish_request``, ``handle_error`` and ``shutdown_request`` as in ``socketserver``, on
    daemon threads that accept for themselves. :meth:`serve_forever` starts them and waits
    for :meth:`shutdown`. Put it before the server class in the bases."""

    #: threads kept waiting in ``accept()``; the ones over this end
    idle_workers = 16
    #: seconds :meth:`shutdown` waits for the waiting threads to leave ``accept()``
    stop_timeout = 5.0
    worker_name = "lm-api-worker"

    socket: socket.socket
    server_address: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._workers = threading.Condition()
        self._accepting = 0                # threads in (or on their way to) accept()
        self._stopped = False
        self._shut = threading.Event()
        super().__init__(*args, **kwargs)

    @property
    def idle(self) -> int:
        """How many threads wait for a connection now."""
        with self._workers:
            return self._accepting

    # ----------------------------------------------------------------- socketserver API
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Start the first accepting thread and wait for :meth:`shutdown`."""
        del poll_interval       # nothing polls: the threads block in accept()
        with self._workers:
            if self._stopped:
                return
            self._accepting += 1
        self._start_worker()
        self._shut.wait()

    def shutdown(self) -> None:
        """Stop accepting (the waiting threads end; connections being served are served to
        their end, as with ``ThreadingMixIn``'s daemon threads) and return once
        :meth:`serve_forever` has."""
        self._stop_accepting()
        self._shut.set()

    def server_close(self) -> None:
        self._stop_accepting()
        super().server_close()  # type: ignore[misc]

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection on this thread (it is the one that accepted it)."""
        self.process_request_thread(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """As ``ThreadingMixIn``'s: serve, report an error, close."""
        try:
            self.finish_request(request, client_address)  # type: ignore[attr-defined]
        except Exception:
            self.handle_error(request, client_address)  # type: ignore[attr-defined]
        finally:
            self.shutdown_request(request)  # type: ignore[attr-defined]

    # ---------------------------------------------------------------------- the threads
    def _start_worker(self) -> None:
        """Start a thread already counted as accepting (uncounted again if it cannot)."""
        try:
            threading.Thread(target=self._work, name=self.worker_name, daemon=True).start()
        except RuntimeError as exc:     # no thread to be had: the busy ones accept later
            log.error("cannot start a thread for the next connection: %s", exc)
            with self._workers:
                self._accepting -= 1
                self._workers.notify_all()

    def _work(self) -> None:
        """Accept a connection, serve it, and again, while at most ``idle_workers`` wait."""
        while True:
            try:
                request, client_address = self.get_request()  # type: ignore[attr-defined]
            except OSError:
                request = None          # no descriptor free (the guard pauses), or stopped
            with self._workers:
                if request is None and not self._stopped:
                    continue            # still counted as accepting
                self._accepting -= 1
                if self._stopped:
                    self._workers.notify_all()
                    if request is not None:
                        self.shutdown_request(request)  # type: ignore[attr-defined]
                    return
                replace = self._accepting == 0
                if replace:
                    self._accepting += 1
            if replace:                 # someone must be in accept() while this one serves
                self._start_worker()
            self._serve(request, client_address)
            with self._workers:
                if self._stopped or self._accepting >= self.idle_workers:
                    return
                self._accepting += 1

    def _serve(self, request: Any, client_address: Any) -> None:
        """As ``socketserver``'s ``_handle_request_noblock``, after the accept."""
        if not self.verify_request(request, client_address):  # type: ignore[attr-defined]
            self.shutdown_request(request)  # type: ignore[attr-defined]
            return
        try:
            self.process_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)  # type: ignore[attr-defined]
            self.shutdown_request(request)  # type: ignore[attr-defined]
        except BaseException:
            self.shutdown_request(request)  # type: ignore[attr-defined]
            raise

    def _stop_accepting(self) -> None:
        """Make the threads in ``accept()`` leave it, and wait (a while) until they have."""
        with self._workers:
            if self._stopped and not self._accepting:
                return
            self._stopped = True
        try:
            # Linux: accept() returns EINVAL in every thread blocked in it
            self.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        with self._workers:
            if self._workers.wait_for(lambda: not self._accepting, timeout=0.5):
                return
            waiting = self._accepting
        for _ in range(waiting):        # elsewhere: a connection wakes each one
            self._wake_one()
        with self._workers:
            if not self._workers.wait_for(lambda: not self._accepting,
                                          timeout=self.stop_timeout):
                log.warning("%d API threads still wait for a connection after the stop",
                            self._accepting)

    def _wake_one(self) -> None:
        host, port = self.server_address[:2]
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            pass
