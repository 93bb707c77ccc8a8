"""Idempotency keys: a submission repeated with the same ``Idempotency-Key`` (a client
retrying after a timeout) gets the first answer instead of new leases."""

from __future__ import annotations

import threading

import pytest
from test_api import SITE, call, submit

from lease_manager.daemon import client as client_module
from lease_manager.daemon.client import DaemonUnavailable, submit_with_retries

from daemon_support import ThreadDaemon, lwf, lwf_request, write_config


@pytest.fixture
def td(tmp_path):
    with ThreadDaemon(write_config(tmp_path, resources=SITE)) as daemon:
        yield daemon


def lease_count(td) -> int:
    return len(call(td, "GET", "/v1/leases").json)


def test_a_repeated_key_returns_the_first_answer(td):
    body = {"duration": 60, "nodes": 1}
    first = submit(td, body, headers={"Idempotency-Key": "k-1"})
    again = submit(td, body, headers={"Idempotency-Key": "k-1"})
    assert first.status == again.status == 201
    assert again.json["id"] == first.json["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert lease_count(td) == 1
    other = submit(td, body, headers={"Idempotency-Key": "k-2"})   # a new key: a new lease
    assert other.json["id"] != first.json["id"] and lease_count(td) == 2
    plain = submit(td, body)                                          # no key: always new
    assert plain.status == 201 and lease_count(td) == 3


def test_a_key_reused_for_another_request_is_refused(td):
    assert submit(td, {"duration": 60}, headers={"Idempotency-Key": "k"}).status == 201
    answer = submit(td, {"duration": 120}, headers={"Idempotency-Key": "k"})
    assert answer.status == 422 and answer.json["field"] == "Idempotency-Key"
    assert "was used for another request" in answer.error
    assert lease_count(td) == 1


def test_bad_keys_are_refused(td):
    for key in ("", "x" * 201, "caf\u00e9"):
        answer = submit(td, {"duration": 60},
                        headers={"Idempotency-Key": key.encode("utf-8").decode("latin-1")})
        assert answer.status == 400 and answer.json["field"] == "Idempotency-Key", key
    assert lease_count(td) == 0


def test_a_document_of_several_leases_with_a_key(td):
    body = lwf(lwf_request("a"), lwf_request("b"))
    first = submit(td, body, content_type="application/xml",
                   headers={"Idempotency-Key": "doc"})
    again = submit(td, body, content_type="application/xml",
                   headers={"Idempotency-Key": "doc"})
    assert [v["id"] for v in again.json] == [v["id"] for v in first.json]
    assert lease_count(td) == 2


def test_concurrent_requests_with_one_key_make_one_lease(td):
    """Eight threads send the same keyed request at once: the engine thread serialises them,
    so one lease is made and every thread gets it."""
    answers = []

    def send() -> None:
        answers.append(submit(td, {"duration": 60}, headers={"Idempotency-Key": "burst"}))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {a.status for a in answers} == {201}
    assert len({a.json["id"] for a in answers}) == 1
    assert lease_count(td) == 1


def test_the_client_retries_with_the_same_key(td, monkeypatch):
    """``request`` sends a key and tries again while the daemon does not answer; the first
    attempt's answer is lost here after the daemon made the lease, so the retry must not make
    a second one."""
    client = td.client
    calls = []

    def flaky(key: str) -> dict:
        calls.append(key)
        answer = client.submit({"duration": 60}, key=key)
        if len(calls) == 1:
            raise DaemonUnavailable("the daemon did not answer (lost on the way back)")
        return answer

    monkeypatch.setattr(client_module.time, "sleep", lambda s: None)
    view = submit_with_retries(flaky)
    assert len(calls) == 2 and calls[0] == calls[1]
    assert view["id"] == 1 and lease_count(td) == 1


def test_keys_survive_a_restart(tmp_path):
    config = write_config(tmp_path, resources=SITE)
    with ThreadDaemon(config) as daemon:
        first = submit(daemon, {"duration": 600}, headers={"Idempotency-Key": "durable"})
    with ThreadDaemon(config) as daemon:
        again = submit(daemon, {"duration": 600}, headers={"Idempotency-Key": "durable"})
        assert again.json["id"] == first.json["id"]
        assert again.headers["Idempotent-Replayed"] == "true"
        assert lease_count(daemon) == 1


def test_a_submission_and_its_key_are_one_transaction(tmp_path):
    """The database connections are in autocommit mode, where ``with connection:`` groups
    nothing. A failure after the leases' rows and before the key's (here: a key that cannot
    be stored) must leave neither, else a retry with the key finds no key and creates the
    lease a second time (or, keys first, a key names ids that later leases take)."""
    import sqlite3

    from lease_manager.daemon.lease_requests import build_lease
    from lease_manager.daemon.store import Store
    from lease_manager.kernel.resources import parse_site

    nodes = parse_site("2 CPU:1 Memory:1024")
    request = {"type": "best-effort", "start": None, "deadline": None, "duration": 60.0,
               "nodes": 1, "resources": {"CPU": 1.0}, "command": "", "workdir": None,
               "max_price": None, "name": "x", "extra": {}, "submitted": 0.0}
    store = Store(tmp_path / "leases.db", sync="normal")
    leases = [(build_lease(i, request, nodes), request) for i in (1, 2)]
    with pytest.raises(sqlite3.Error):
        store.insert(leases, 0.0, key=("k-1", object(), False))   # the key cannot be bound
    assert store.next_id() == 1 and store.lease(1) is None and store.recall_key("k-1") is None
    store.insert(leases, 0.0, key=("k-1", "hash", False))
    assert store.recall_key("k-1") == ("hash", [1, 2], False)
    store.close()
