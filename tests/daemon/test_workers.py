"""The API's threads accept their own connections and serve one after another: the thread
that accepts a connection serves it (no hand-over), one thread always waits in accept() (a
connection never waits for a busy thread), at most ``idle_workers`` wait, and a shutdown ends
the waiting ones."""

from __future__ import annotations

import socket
import socketserver
import threading
from typing import Any

from lease_manager.daemon.workers import AcceptingWorkersMixin

from daemon_support import wait_for


class Handler(socketserver.StreamRequestHandler):
    """Reads a name, records the thread serving it, waits for the name's event (set at once
    unless a test holds it), answers ``ok``."""

    server: Recording

    def handle(self) -> None:
        name = self.rfile.readline().strip().decode()
        self.server.served[name] = threading.current_thread()
        self.server.release.setdefault(name, threading.Event()).wait(20)
        self.wfile.write(b"ok\n")


class Recording(AcceptingWorkersMixin, socketserver.TCPServer):
    allow_reuse_address = True

    def __init__(self, idle_workers: int) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.idle_workers = idle_workers
        self.served: dict[str, threading.Thread] = {}
        self.release: dict[str, threading.Event] = {}
        self.accepted_by: list[threading.Thread] = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    def get_request(self) -> tuple[socket.socket, Any]:
        request = super().get_request()
        self.accepted_by.append(threading.current_thread())
        return request

    def open(self, name: str, hold: bool = False) -> socket.socket:
        event = self.release.setdefault(name, threading.Event())
        if not hold:
            event.set()
        conn = socket.create_connection(self.server_address, timeout=20)
        conn.sendall(name.encode() + b"\n")
        return conn

    def ask(self, name: str) -> None:
        with self.open(name) as conn:
            assert conn.makefile("rb").readline() == b"ok\n"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(20)
        assert not self.thread.is_alive()


def test_the_thread_that_accepts_a_connection_serves_it_and_then_the_next():
    server = Recording(idle_workers=4)
    try:
        for i in range(20):
            server.ask(f"c{i}")
            # the thread that served it is back in accept(), beside the one started in its
            # place; a next connection sooner could find it still closing this one and start
            # a third, as the scheduler decides: waiting makes the count exact
            wait_for(lambda: server.idle == 2, what="two threads in accept()")
        serving = {server.served[f"c{i}"] for i in range(20)}
        assert set(server.accepted_by) == serving      # no hand-over between threads
        # not a thread per connection: the first thread and the one started in its place
        assert len(serving) <= 2
    finally:
        server.stop()


def test_a_connection_never_waits_for_a_busy_thread_and_at_most_idle_workers_stay():
    """a and b are held (being answered): c is served at once all the same. Released, a's
    and b's threads end (idle_workers=1: c's thread, or the one that took its place, waits)."""
    server = Recording(idle_workers=1)
    try:
        held = [server.open("a", hold=True), server.open("b", hold=True)]
        wait_for(lambda: "a" in server.served and "b" in server.served, what="a, b served")
        server.ask("c")
        assert len({server.served[n] for n in "abc"}) == 3
        assert server.idle == 1
        for name, conn in zip("ab", held):
            server.release[name].set()
            assert conn.makefile("rb").readline() == b"ok\n"
            conn.close()
        for name in "abc":
            server.served[name].join(20)
            assert not server.served[name].is_alive()
        assert server.idle == 1
    finally:
        server.stop()


def test_shutdown_ends_the_waiting_threads_and_leaves_a_served_connection_be():
    server = Recording(idle_workers=8)
    held = server.open("held", hold=True)
    try:
        wait_for(lambda: "held" in server.served, what="held served")
        for i in range(3):
            server.ask(f"c{i}")
        waiting = [t for t in set(server.accepted_by) if t is not server.served["held"]]
        server.stop()
        assert server.idle == 0
        for thread in waiting:
            thread.join(20)
            assert not thread.is_alive()
        assert server.served["held"].is_alive()       # its client is still answered
        server.release["held"].set()
        assert held.makefile("rb").readline() == b"ok\n"
    finally:
        held.close()
        server.release["held"].set()
