"""The API's connections, held to a number and to a time: hostile clients cannot stop it.

About 1,000 connections that never finished their request, opened by anyone who could reach
the port, used up the daemon's file descriptors (1,024): its reconciliation then failed with
EMFILE and the daemon exited. And a client sending its body at one byte a second was never
timed out (the socket timeout counts from one byte to the next). Now:

- a connection has ``request-timeout`` seconds to send each whole request (headers and body),
  from the moment the daemon waits for it; a reaper thread shuts down the ones that are late;
- at most ``max-connections`` are open (never more than half the descriptors the process may
  open); when a new one comes and all are taken, the one that has waited longest for its
  request is shut down to make room (an idle or slow client, never one being answered), and if
  every connection is being answered the newcomer is closed at once;
- a full descriptor table (EMFILE) makes ``accept`` pause briefly instead of spinning.
"""

from __future__ import annotations

import errno
import io
import logging
import resource
import socket
import struct
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

#: descriptors kept for the daemon's own files (the database, logs, the backend's processes)
RESERVED_DESCRIPTORS = 64


def connection_cap(configured: int) -> int:
    """``configured``, but at most half of what the process may open, less a reserve."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, soft // 2 - RESERVED_DESCRIPTORS))


class ConnectionGuard:
    """Which connections are open, and which are waiting for a request since when."""

    def __init__(self, max_connections: int, request_timeout: float) -> None:
        self.max_connections = connection_cap(max_connections)
        self.request_timeout = request_timeout
        self._lock = threading.Lock()
        #: open connection -> when it began waiting for its current request (None: answered)
        self._waiting: dict[socket.socket, float | None] = {}
        #: connections whose client closed them first, their handler done with them
        self._ended: set[socket.socket] = set()
        self._stop = threading.Event()
        self.shut = 0                    #: connections shut down for being late or evicted
        self.refused = 0                 #: connections closed at once (every one busy)

    @property
    def open(self) -> int:
        """How many connections are open now."""
        with self._lock:
            return len(self._waiting)

    # ------------------------------------------------------------------- the server's side
    def admit(self, sock: socket.socket) -> bool:
        """Take ``sock`` in (making room if needed); False when it must be closed at once."""
        now = time.monotonic()
        with self._lock:
            if len(self._waiting) >= self.max_connections:
                waiting = [(since, s) for s, since in self._waiting.items() if since is not None]
                if not waiting:
                    self.refused += 1
                    return False
                _, victim = min(waiting, key=lambda pair: pair[0])
                self._shut(victim)
            self._waiting[sock] = now
        return True

    def closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._waiting.pop(sock, None)
            self._ended.discard(sock)

    def ended_by_client(self, sock: socket.socket) -> None:
        """The client closed ``sock`` (its handler read the end) and the handler closed its
        files: nothing is left to send or to read."""
        with self._lock:
            if sock in self._waiting:
                self._ended.add(sock)

    def is_ended_by_client(self, sock: socket.socket) -> bool:
        with self._lock:
            return sock in self._ended

    # ------------------------------------------------------------------ the handler's side
    def waiting(self, sock: socket.socket) -> None:
        """``sock`` waits for its next request from now."""
        with self._lock:
            if sock in self._waiting:
                self._waiting[sock] = time.monotonic()

    def answering(self, sock: socket.socket) -> None:
        """``sock``'s request is in: no deadline while it is answered."""
        with self._lock:
            if sock in self._waiting:
                self._waiting[sock] = None

    # ----------------------------------------------------------------------------- reaper
    def reap(self, now: float | None = None) -> int:
        """Shut down the connections late with their request; how many."""
        now = time.monotonic() if now is None else now
        with self._lock:
            late = [s for s, since in self._waiting.items()
                    if since is not None and now - since > self.request_timeout]
            for sock in late:
                self._shut(sock)
        return len(late)

    def _shut(self, sock: socket.socket) -> None:
        """Shut ``sock`` down (its handler's read ends at once, and it closes it); it no longer
        counts as waiting. Called with the lock held."""
        self._waiting[sock] = None
        self.shut += 1
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def start_reaper(self, every: float = 0.5) -> threading.Thread:
        def loop() -> None:
            while not self._stop.wait(every):
                self.reap()
        thread = threading.Thread(target=loop, name="lm-api-reaper", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()


def accept_pausing(listener: socket.socket) -> tuple[socket.socket, Any]:
    """``listener.accept()``; on EMFILE/ENFILE, pause 50 ms before raising, so that the
    server's loop does not spin while no descriptor is free (the pending connection waits in
    the backlog until one is)."""
    try:
        return listener.accept()
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            log.warning("no file descriptor free for a new API connection: %s", exc.strerror)
            time.sleep(0.05)
        raise


class _KernelTimedIO(socket.SocketIO):
    """A connection's raw stream whose reads and writes time out in the kernel
    (``SO_RCVTIMEO``/``SO_SNDTIMEO``): the EAGAIN that ends one raises ``TimeoutError``, as a
    Python socket timeout does."""

    def readinto(self, b: Any) -> int | None:
        n = super().readinto(b)
        if n is None:
            self._timeout_occurred = True
            raise TimeoutError("timed out")
        return n

    def write(self, b: Any) -> int | None:
        n = super().write(b)
        if n is None:
            raise TimeoutError("timed out")
        return n


def kernel_timed_files(sock: socket.socket, seconds: float, read_buffer: int,
                       write_buffer: int) -> tuple[io.BufferedReader, io.BufferedWriter]:
    """``sock.makefile("rb")`` and ``("wb")``, each read and write ending in ``TimeoutError``
    after ``seconds``, as with ``sock.settimeout(seconds)``, but timed by the kernel. A Python
    socket timeout makes every read and write a ``poll()`` first, then the call: twice the
    system calls, each one letting go of the interpreter lock and waiting to take it back (two
    or three more a request on the API, more with a new connection each)."""
    if sock.gettimeout() is not None:   # (an accepted socket is blocking already, and
        sock.settimeout(None)           # settimeout is an ioctl that lets go of the lock)
    whole = int(seconds)
    timeval = struct.pack("ll", whole, int((seconds - whole) * 1e6))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
    reader, writer = _KernelTimedIO(sock, "rb"), _KernelTimedIO(sock, "wb")
    sock._io_refs += 2      # type: ignore[attr-defined]  # as makefile(): close() waits for them
    return (io.BufferedReader(reader, read_buffer if read_buffer > 0 else io.DEFAULT_BUFFER_SIZE),
            io.BufferedWriter(writer, write_buffer if write_buffer > 0 else io.DEFAULT_BUFFER_SIZE))


class GuardedServerMixin:
    """For a ``socketserver`` server: accept through :func:`accept_pausing`, admit each
    connection through the server's :class:`ConnectionGuard` (a refused one is shut at once),
    and tell the guard when it closes. Put it before the server class in the bases."""

    guard: ConnectionGuard

    def start_guard(self, max_connections: int, request_timeout: float) -> None:
        """Set the server's guard (``[daemon] max-connections``, ``request-timeout``) and
        start its reaper of idle and slow connections."""
        self.guard = ConnectionGuard(max_connections, request_timeout)
        self.guard.start_reaper()

    def get_request(self) -> tuple[socket.socket, Any]:
        return accept_pausing(self.socket)  # type: ignore[attr-defined]

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.guard.admit(request):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)  # type: ignore[misc]

    def shutdown_request(self, request: Any) -> None:
        """As ``socketserver``'s (``shutdown(SHUT_WR)``, then close), but a connection its
        client closed first is only closed: its files are closed, so the close sends the end
        at once, as the shutdown did (with a new connection a request, that is every
        connection: the shutdown was one more system call each, letting go of the interpreter
        lock)."""
        if self.guard.is_ended_by_client(request):
            self.close_request(request)
            return
        super().shutdown_request(request)  # type: ignore[misc]

    def close_request(self, request: Any) -> None:
        self.guard.closed(request)
        super().close_request(request)  # type: ignore[misc]

    def server_close(self) -> None:
        self.guard.stop()
        super().server_close()  # type: ignore[misc]
