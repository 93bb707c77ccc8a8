"""Haizea 1.0's clients against the daemon (``[daemon] haizea-rpc = yes``): the XML-RPC
calls below are written from Haizea's documented protocol (its clients' calls and its
``<lease>`` XML), made with the standard library's ``xmlrpc.client`` against a live
``lease-manager serve`` process.

The site has Haizea's units: two nodes of ``CPU:100 Memory:1024``. Hand-computed, with EASY
backfilling (only the first waiting lease reserves)::

    node-1  |#1 now, 1 h ..........(cancelled)|#2 ........
    node-2  |#1 ...................(cancelled)|#2 ........
            #2 (2 nodes, best-effort) is reserved after #1 (Scheduled, 3);
            #3 (1 node, best-effort) waits in the queue (Queued, 4)
    cancel_lease(1): #2 starts at once (Active, 8); #3, now the first waiting lease,
    reserves after #2 (Scheduled, 3) and leaves the queue
"""

from __future__ import annotations

import json
import os
import socket
import xml.etree.ElementTree as ET
import xmlrpc.client
from datetime import UTC, datetime

import pytest

from lease_manager.daemon.haizea_rpc import peer_uid

from daemon_support import ProcessDaemon, wait_for, write_config

SITE = "2 CPU:100 Memory:1024"


def haizea_lease(numnodes: int, start: str, duration: str = "01:00:00.00",
                 preemptible: str = "False", image: str = "foo.img", size: int = 1024) -> str:
    """A lease as ``haizea-request-lease -n N -t START -d DURATION --cpu 1 --mem 1024 -i
    IMAGE -z SIZE`` sends it to ``create_lease``: Haizea's ``Lease.to_xml`` of a new lease (no
    id, state 0 (New), its CPU amount 100 for one CPU)."""
    return (f'<lease state="0" preemptible="{preemptible}"><nodes>'
            f'<node-set numnodes="{numnodes}"><res type="CPU" amount="100"/>'
            f'<res type="Memory" amount="1024"/></node-set></nodes>{start}'
            f'<duration time="{duration}"/><software><disk-image id="{image}" size="{size}"/>'
            f'</software></lease>')


def read_lease(text: str) -> dict:
    """What Haizea's ``Lease.from_xml_element`` reads of a ``<lease>``, and its
    ``haizea-list-leases`` shows (id, state, start, duration, nodes)."""
    root = ET.fromstring(text)
    start = root.find("start")
    assert start is not None
    child = start[0].tag if len(start) else None
    exact = start.find("exact")
    datetime.fromisoformat(root.get("submit-time"))      # a time Haizea's parser reads
    node_sets = root.findall("nodes/node-set")
    return {"id": int(root.get("id")), "state": int(root.get("state")),
            "preemptible": root.get("preemptible"),
            "start": exact.get("time") if exact is not None else child,
            "duration": root.find("duration").get("time"),
            "numnodes": sum(int(n.get("numnodes")) for n in node_sets),
            "res": {r.get("type"): int(r.get("amount")) for r in node_sets[0].iter("res")},
            "image": root.find("software/disk-image").attrib}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    folder = tmp_path_factory.mktemp("haizea-rpc")
    config = write_config(folder, resources=SITE, vm="CPU:100 Memory:512",
                          extra="haizea-rpc = yes\nhaizea-rpc-port = 0")
    daemon = ProcessDaemon(config, "--set", "scheduling.backfilling=aggressive")
    info = json.loads((daemon.state / "daemon.json").read_text())
    daemon.rpc_url = info["haizea_rpc_url"]
    yield daemon
    assert daemon.terminate() == 0


def proxy(daemon) -> xmlrpc.client.ServerProxy:
    return xmlrpc.client.ServerProxy(daemon.rpc_url, allow_none=True)   # as Haizea's clients


def test_haizeas_clients_calls_get_haizeas_answers(daemon):
    s = proxy(daemon)
    assert daemon.rpc_url.startswith("http://127.0.0.1:")
    assert s.test_func() == 0
    assert s.get_hosts() == [{"id": 1, "hostname": "node-1", "cpu": 100, "mem": 1024},
                             {"id": 2, "hostname": "node-2", "cpu": 100, "mem": 1024}]
    one = s.create_lease(haizea_lease(2, "<start><now/></start>"))
    two = s.create_lease(haizea_lease(2, "<start/>", duration="1:00:00:00.00",
                                      preemptible="True"))
    three = s.create_lease(haizea_lease(1, "<start/>", image="bar.img", size=512))
    assert isinstance(one, int) and [two, three] == [one + 1, one + 2]

    def states():
        return {lease["id"]: lease["state"] for lease in map(read_lease, s.get_leases())}
    wait_for(lambda: states() == {one: 8, two: 3, three: 4}, what="active, scheduled, queued")
    leases = {lease["id"]: lease for lease in map(read_lease, s.get_leases())}
    assert leases[one]["start"] == "now" and leases[two]["start"] is None
    assert leases[one]["duration"] == "01:00:00.00"
    assert leases[two]["duration"] == "1:00:00:00.00"   # a day, as Haizea writes it
    assert (leases[one]["preemptible"], leases[two]["preemptible"]) == ("False", "True")
    assert (leases[one]["numnodes"], leases[three]["numnodes"]) == (2, 1)
    assert leases[one]["res"] == {"CPU": 100, "Memory": 1024}
    assert leases[three]["image"] == {"id": "bar.img", "size": "512"}
    assert [read_lease(x)["id"] for x in s.get_queue()] == [three]
    assert read_lease(s.get_lease(two))["state"] == 3

    assert s.cancel_lease(one) == 0
    wait_for(lambda: states() == {two: 8, three: 3}, what="#2 to start once #1 is cancelled")
    assert s.get_queue() == []
    assert read_lease(s.get_lease(one))["state"] == 5       # Cancelled, still shown by id
    assert s.notify_event(two, 7, "running") is None        # ignored, as Haizea does

    # refusals are XML-RPC faults whose string says why ("XMLRPC fault: ..." in Haizea)
    for call, code, text in (
            (lambda: s.cancel_lease(one), 409, f"lease {one} is already cancelled"),
            (lambda: s.cancel_lease(99999), 404, "no lease 99999"),
            (lambda: s.get_lease(99999), 404, "no lease 99999"),
            (lambda: s.create_lease("<lease"), 400, "lease: malformed XML"),
            (lambda: s.create_lease(haizea_lease(1, "<start/>", duration="soon")), 400,
             "duration: "),
            (lambda: s.create_lease(haizea_lease(1, "<start/>").replace("Memory", "Disk")),
             400, "resources.Disk: the site has no such resource")):
        with pytest.raises(xmlrpc.client.Fault) as fault:
            call()
        assert fault.value.faultCode == code
        assert fault.value.faultString.startswith(text), fault.value.faultString
    assert states() == {two: 8, three: 3}                   # nothing was changed by them
    # an AR whose start has passed is taken, then rejected (Rejected, 2), as Haizea does
    late = s.create_lease(haizea_lease(1, '<start><exact time="2001-01-01 00:00:00.00"/>'
                                          '</start>'))
    assert wait_for(lambda: read_lease(s.get_lease(late))["state"] == 2)
    assert late not in states()


def test_an_advance_reservation_from_haizeas_client(daemon):
    """``haizea-request-lease -t +01:00:00`` sends an absolute time, in the future (an hour
    from now, the request being read as UTC): an AR, listed with that exact start."""
    s = proxy(daemon)
    at = datetime.fromtimestamp(int(datetime.now().timestamp()) + 3600, tz=UTC)
    text = at.strftime("%Y-%m-%d %H:%M:%S.00")
    lease_id = s.create_lease(haizea_lease(1, f'<start><exact time="{text}"/></start>'))
    lease = read_lease(s.get_lease(lease_id))
    assert (lease["start"], lease["state"]) == (text, 3)
    assert s.cancel_lease(lease_id) == 0


def test_only_the_daemons_user_is_answered(daemon, tmp_path):
    """The kernel's connection table names the user at the other end of a loopback
    connection: this process's for a connection it opened; another user is refused."""
    port = int(daemon.rpc_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as conn:
        assert peer_uid(conn.getsockname()[1], port) == os.getuid()
    table = tmp_path / "tcp"
    table.write_text("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
                     "retrnsmt   uid  timeout inode\n"
                     f"   0: 0100007F:D431 0100007F:{port:04X} 01 00000000:00000000 "
                     "00:00000000 00000000  1001        0 123 1 0 20 4 30 10 -1\n")
    assert peer_uid(0xD431, port, table) == 1001
    assert peer_uid(0xD432, port, table) is None
    assert peer_uid(0xD431, port, tmp_path / "missing") is None


def test_the_endpoint_is_off_unless_asked_for(tmp_path):
    config = write_config(tmp_path)
    daemon = ProcessDaemon(config)
    try:
        assert "haizea_rpc_url" not in json.loads((daemon.state / "daemon.json").read_text())
    finally:
        assert daemon.terminate() == 0


def test_haizeas_lease_xml_to_a_request_and_back():
    """``haizea-request-lease -d unlimited`` sends Haizea's century (``DateTimeDelta(36500)``);
    a deadline lease's ``<deadline>`` and a lease of two groups of VMs are written back."""
    from lease_manager.daemon.haizea_lease import lease_xml, request_of
    from lease_manager.daemon.lease_requests import RequestError

    body = request_of(haizea_lease(3, "<start/>", duration="36500:00:00:00.00"))
    assert body == {"nodes": 3, "resources": {"CPU": 100.0, "Memory": 1024.0},
                    "start": "best_effort", "duration": "36500:00:00:00.00",
                    "extra": {"preemptible": False, "disk-image": "foo.img",
                              "disk-image-size": 1024}}
    with pytest.raises(RequestError, match="the root element is <lease-workload>"):
        request_of("<lease-workload/>")
    with pytest.raises(RequestError, match=r"<disk-image size>: '1e3' is not a whole number"):
        request_of(haizea_lease(1, "<start/>").replace('size="1024"', 'size="1e3"'))

    row = {"id": 7, "state": "suspended", "type": "deadline", "submit": 1800000000.0,
           "plan": '[{"kind": "resume"}]',
           "request": json.dumps({"start": None, "deadline": 1800007200.0, "duration": 3600.0,
                                  "nodes": 3, "resources": {"CPU": 100.0},
                                  "groups": [{"nodes": 1, "resources": {"CPU": 100.0}},
                                             {"nodes": 2, "resources": {"CPU": 50.0,
                                                                        "Memory": 512.5}}],
                                  "extra": {}})}
    assert lease_xml(row) == (
        '<lease id="7" state="12" preemptible="True" submit-time="2027-01-15 08:00:00.00">'
        '<nodes><node-set numnodes="1"><res type="CPU" amount="100"/></node-set>'
        '<node-set numnodes="2"><res type="CPU" amount="50"/>'
        '<res type="Memory" amount="512.5"/></node-set></nodes>'
        '<start><exact time="2027-01-15 08:00:00.00"/></start>'
        '<duration time="01:00:00.00"/><deadline time="2027-01-15 10:00:00.00"/>'
        '<software><none/></software></lease>')


@pytest.mark.parametrize("uid", [4242, None])
def test_a_connection_of_another_user_is_closed_unanswered(tmp_path, monkeypatch, caplog, uid):
    """The server asks the kernel's table who is calling: another user (4242), or a caller
    the table does not show, gets its connection closed, no answer, and a log line."""
    import logging

    from lease_manager.daemon import haizea_rpc

    from daemon_support import ThreadDaemon

    config = write_config(tmp_path, resources=SITE, vm="CPU:100 Memory:512",
                          extra="haizea-rpc = yes\nhaizea-rpc-port = 0")
    with ThreadDaemon(config) as daemon:
        url = json.loads((tmp_path / "state" / "daemon.json").read_text())["haizea_rpc_url"]
        assert xmlrpc.client.ServerProxy(url).test_func() == 0      # the daemon's own user
        monkeypatch.setattr(haizea_rpc, "peer_uid", lambda client, server: uid)
        with caplog.at_level(logging.WARNING, "lease_manager.daemon.haizea_rpc"):
            with pytest.raises((ConnectionError, xmlrpc.client.ProtocolError, OSError)):
                xmlrpc.client.ServerProxy(url).create_lease(haizea_lease(1, "<start/>"))
        assert daemon.daemon.store.leases() == []                    # nothing was submitted
    who = "an unknown user" if uid is None else f"user {uid}"
    assert any(f"of {who} (only the daemon's user and root may call)" in r.getMessage()
               for r in caplog.records)
