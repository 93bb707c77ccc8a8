"""The API's threads serve one connection after another (a new thread only when none waits),
and never hold a connection back: each one admitted is served at once."""

from __future__ import annotations

import threading
from typing import Any

from lease_manager.daemon.workers import ReusedThreadsMixin

from daemon_support import wait_for


class NoSockets:
    def server_close(self) -> None:
        pass


class Recording(ReusedThreadsMixin, NoSockets):
    """A server without sockets: a "connection" is a name, served by recording which thread
    took it and then waiting for its own event (set at once unless a test holds it)."""

    def __init__(self, idle_workers: int) -> None:
        super().__init__()
        self.idle_workers = idle_workers
        self.served: dict[str, threading.Thread] = {}
        self.release: dict[str, threading.Event] = {}
        self.closed: list[str] = []

    def serve(self, name: str, hold: bool = False) -> None:
        self.release[name] = threading.Event()
        if not hold:
            self.release[name].set()
        self.process_request(name, ("127.0.0.1", 0))

    def finish_request(self, request: Any, client_address: Any) -> None:
        self.served[request] = threading.current_thread()
        self.release[request].wait(20)

    def shutdown_request(self, request: Any) -> None:
        self.closed.append(request)


def test_a_thread_done_with_its_connection_serves_the_next():
    server = Recording(idle_workers=4)
    server.serve("a")
    wait_for(lambda: server.idle == 1, what="a's thread waiting")
    server.serve("b")
    wait_for(lambda: "b" in server.closed, what="b served")
    assert server.served["b"] is server.served["a"]
    assert server.closed == ["a", "b"]
    wait_for(lambda: server.idle == 1, what="the thread waiting again")
    server.server_close()
    server.served["a"].join(20)
    assert not server.served["a"].is_alive()


def test_a_connection_never_waits_for_a_busy_thread_and_at_most_idle_workers_stay():
    """a is held (being answered): b gets a thread of its own at once, and is served while a
    still is. Both released, one thread stays waiting (idle_workers=1), the other ends."""
    server = Recording(idle_workers=1)
    server.serve("a", hold=True)
    wait_for(lambda: "a" in server.served, what="a being served")
    server.serve("b")
    wait_for(lambda: "b" in server.closed, what="b served while a is")
    assert server.served["b"] is not server.served["a"] and "a" not in server.closed
    server.release["a"].set()
    wait_for(lambda: "a" in server.closed, what="a served")
    threads = (server.served["a"], server.served["b"])
    wait_for(lambda: sum(t.is_alive() for t in threads) == 1, what="one thread ended")
    assert server.idle == 1
    server.server_close()
    for thread in threads:
        thread.join(20)
        assert not thread.is_alive()
