"""Hostile clients against a live daemon process: random and truncated bodies, slow senders,
floods of connections, bad tokens, and valid leases with hostile ``extra`` attributes.

Each case is drawn from a seeded generator (the seeds below are the suite's; the long profile,
``LM_LONG=1``, runs 10 times the cases: 150 and 1,500 a seed, most slow senders skipped). The
daemon runs with image transfers and a short ``request-timeout``, so that interpreted attributes
and slow senders are exercised. Counted:
cases, refusals (4xx or a closed connection), 5xx answers, daemon deaths, and a failed restore
(the daemon restarted on its state folder at the end must start and list every lease it
accepted). The target is 0 of the last three.
"""

from __future__ import annotations

import json
import random
import socket
import time

import pytest

from daemon_support import ProcessDaemon, write_config
from support import FUZZ_CASES

#: cases per seed: half the fuzz profile's number (300, 3,000 with LM_LONG=1)
CASES = max(30, FUZZ_CASES // 2)
SEEDS = (11, 29)
EXTRA_CONFIG = """request-timeout = 1
max-connections = 64
[preparation]
lease-preparation = imagetransfer
imagetransfer-bandwidth = 100
"""
HOSTILE_VALUES = ["x", "", "nan", "inf", "-1", "1e100", "1e308", "\u0663", "1_000", "0x10",
                  "\x00", "a" * 5000, -1, 1e100, 10**30, True, None, [], {}, "99999999999"]
INTERPRETED = ["disk-image", "disk-image-size", "preemptible", "watts"]


class Raw:
    """Requests written byte by byte to the daemon's socket."""

    def __init__(self, daemon: ProcessDaemon) -> None:
        host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
        self.address = (host, int(port))
        self.token = daemon.token

    def send(self, data: bytes, *, pause: float = 0.0) -> int | None:
        """Send ``data`` (one byte every ``pause`` seconds if given); the answer's status, or
        None if the daemon closed the connection without one."""
        with socket.create_connection(self.address, timeout=10) as sock:
            try:
                if pause:
                    for i in range(len(data)):
                        sock.send(data[i:i + 1])
                        time.sleep(pause)
                else:
                    sock.sendall(data)
                sock.shutdown(socket.SHUT_WR)
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
            except OSError:
                return None
        if not answer.startswith(b"HTTP/1.1 "):
            return None
        return int(answer[9:12])

    def request(self, body: bytes, *, token: str | None = "", length: int | None = None,
                content_type: str = "application/json") -> bytes:
        head = [b"POST /v1/leases HTTP/1.1", b"Host: x", f"Content-Type: {content_type}".encode(),
                f"Content-Length: {len(body) if length is None else length}".encode(),
                b"Connection: close"]
        if token is not None:
            head.append(f"Authorization: Bearer {token or self.token}".encode())
        return b"\r\n".join(head) + b"\r\n\r\n" + body


def hostile_case(rng: random.Random, raw: Raw) -> tuple[str, bytes, float]:
    """One case: (its kind, the bytes to send, the pause between bytes)."""
    kind = rng.choice(["random", "truncated", "slow", "token", "extra", "valid", "garbage"])
    valid = {"duration": rng.choice([60, 600, "00:30:00"]), "nodes": rng.randint(1, 2)}
    if kind == "random":
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
        return kind, raw.request(body), 0.0
    if kind == "truncated":
        body = json.dumps(valid).encode()
        return kind, raw.request(body[:rng.randint(0, len(body) - 1)], length=len(body)), 0.0
    if kind == "slow":       # a request that would take 60 s at 1 byte per 0.25 s: timed out
        return kind, raw.request(json.dumps(valid).encode())[:16], 0.25
    if kind == "token":
        token = rng.choice([None, "wrong", "Bearer", "x" * 10000, "\u0663"])
        return kind, raw.request(json.dumps(valid).encode(), token=token), 0.0
    if kind == "extra":
        extra = {rng.choice(INTERPRETED + ["free"]): rng.choice(HOSTILE_VALUES)
                 for _ in range(rng.randint(1, 3))}
        body = json.dumps({**valid, "extra": extra}).encode()
        return kind, raw.request(body), 0.0
    if kind == "garbage":
        return kind, bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200))), 0.0
    return kind, raw.request(json.dumps(valid).encode()), 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_hostile_clients_never_kill_or_brick_the_daemon(tmp_path, seed):
    config = write_config(tmp_path, resources="4 CPU:1 Memory:1024", extra=EXTRA_CONFIG)
    daemon = ProcessDaemon(config)
    raw = Raw(daemon)
    rng = random.Random(seed)
    counts = {"cases": 0, "accepted": 0, "refused": 0, "5xx": 0, "deaths": 0}
    try:
        for _ in range(CASES):
            kind, data, pause = hostile_case(rng, raw)
            if kind == "slow" and rng.random() < 0.8:
                continue                     # a few slow senders: each costs about 1 s
            status = raw.send(data, pause=pause)
            counts["cases"] += 1
            if status is not None and status >= 500:
                counts["5xx"] += 1
            elif status == 201:
                counts["accepted"] += 1
            else:
                counts["refused"] += 1
            if daemon.proc.poll() is not None:
                counts["deaths"] += 1
                break
        # a flood: connections opened and dropped at once
        for _ in range(200):
            try:
                socket.create_connection(raw.address, timeout=5).close()
            except OSError:
                pass
        listed = [v["id"] for v in daemon.client.leases()]
    finally:
        code = daemon.terminate() if daemon.proc.poll() is None else daemon.proc.returncode
    print(f"seed {seed}: {counts}")
    assert counts["5xx"] == 0 and counts["deaths"] == 0, counts
    assert code == 0
    assert counts["accepted"] == len(listed) and counts["refused"] > 0
    restored = ProcessDaemon(config)           # no restore failure
    try:
        assert [v["id"] for v in restored.client.leases()] == listed
    finally:
        assert restored.terminate() == 0
