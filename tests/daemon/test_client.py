"""The client commands (``lease-manager request``, ``cancel``, ``list-leases``, ``show-lease``,
``show-queue``, ``list-hosts``) against a real ``lease-manager serve`` process with the
``simulated`` backend on the real clock; then SIGTERM and a restart.

Every lease here lasts at least an hour of that clock and none starts within half an hour, so no
lease changes state while the module runs: a test compares two calls' answers exactly, never
racing a clock it does not control (at 60 times the wall clock, a lease of a minute ended between
two client calls on a busy machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from daemon_support import ProcessDaemon, lwf, lwf_request, write_config

SPEEDUP = 1         # the daemon's clock is the wall clock: leases of an hour or more stay put
SITE = "4 CPU:1 Memory:1024"
LEASE_HEADER = ["ID", "TYPE", "STATE", "VMS", "START", "END", "NODES", "REASON"]

LWF = lwf(lwf_request("from-xml-ar", start='<start><exact time="20:00:00"/></start>',
                      duration="01:00:00", memory=128),
          lwf_request("from-xml-be", duration="10:00:00", memory=128))


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any LEASE_MANAGER_* setting (plus ``extra``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEASE_MANAGER_")}
    return {**env, **extra}


def lm(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
       ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lease_manager.cli", *args],
                          env=clean_env() if env is None else env, cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def table(stdout: str) -> tuple[list[str], list[list[str]]]:
    """A human table's header and rows (cells split on runs of 2+ spaces)."""
    import re

    lines = [line for line in stdout.splitlines() if line.strip()]
    split = [re.split(r"\s{2,}", line.strip()) for line in lines]
    return split[0], split[1:]


def request(daemon: ProcessDaemon, *args: str) -> dict:
    done = daemon.cli("request", *args, "--json")
    return json.loads(done.stdout)


def daemon_now(daemon: ProcessDaemon) -> datetime:
    text = daemon.client.call("GET", "/v1/health")["time"]
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    config = write_config(tmp_path_factory.mktemp("cli"), resources=SITE, speedup=SPEEDUP)
    daemon = ProcessDaemon(config)
    yield daemon
    if daemon.proc.poll() is None:
        assert daemon.terminate() == 0


# ---------------------------------------------------------------------------- request
def test_request_kinds_human_and_json(daemon):
    done = daemon.cli("request", "-t", "best_effort", "-d", "10:00:00", "-n", "2",
                      "--name", "be-cli")
    assert done.stdout.startswith("lease ") and ": active" in done.stdout, done.stdout
    be_id = int(done.stdout.split()[1].rstrip(":"))
    be = daemon.client.lease(be_id)
    assert be["type"] == "best-effort" and be["request"]["nodes"] == 2
    assert be["request"]["duration"] == 36000 and be["name"] == "be-cli"

    now = request(daemon, "-t", "now", "-d", "3600", "--cpu", "1", "--mem", "256",
                  "--command", "echo hi")
    assert now["type"] == "immediate" and now["state"] == "active"
    assert now["request"]["resources"] == {"CPU": 1.0, "Memory": 256.0}
    assert now["request"]["command"] == "echo hi"

    before = daemon_now(daemon)
    ar = request(daemon, "-t", "+00:30:00", "-d", "01:00:00")
    assert ar["type"] == "advance-reservation" and ar["state"] == "scheduled"
    start = datetime.fromisoformat(ar["request"]["start"].replace("Z", "+00:00"))
    assert before + timedelta(minutes=30) <= start <= daemon_now(daemon) + timedelta(minutes=30)

    at = (before + timedelta(hours=6)).replace(microsecond=0)
    for text in (at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                 at.astimezone(timezone(timedelta(hours=2))).isoformat()):
        iso = request(daemon, "-t", text, "-d", "00:05:00", "--max-price", "1e6")
        assert iso["type"] == "advance-reservation", iso
        assert iso["request"]["start"] == at.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert iso["request"]["max_price"] == 1e6

    deadline = request(daemon, "-d", "01:00:00", "--deadline", "+05:00:00")
    assert deadline["type"] == "deadline"
    assert deadline["state"] in ("active", "scheduled")


def test_request_from_lwf_file(daemon, tmp_path):
    path = tmp_path / "lease.xml"
    path.write_text(LWF)
    done = daemon.cli("request", "-f", str(path))
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("lease ") for line in lines), done.stdout
    views = json.loads(daemon.cli("request", "-f", str(path), "--json").stdout)
    assert [v["name"] for v in views] == ["from-xml-ar", "from-xml-be"]
    assert [v["type"] for v in views] == ["advance-reservation", "best-effort"]
    assert views[0]["request"]["resources"] == {"CPU": 1.0, "Memory": 128.0}


def test_request_takes_haizea_request_leases_options(daemon, tmp_path):
    """``haizea-request-lease``'s options where they do not clash: -n/--numnodes, -m/--mem,
    -i/--vmimage, -z/--vmimagesize, --non-preemptible/--preemptible, -s/--server, a Haizea
    ``<lease>`` file for -f, and ``cancel -l`` (Haizea's -c, CPU, is our --config: --cpu)."""
    view = request(daemon, "-s", daemon.url, "-t", "best_effort", "-d", "00:10:00.00",
                   "--numnodes", "1", "--cpu", "1", "-m", "128", "-i", "foo.img",
                   "-z", "1024", "--non-preemptible")
    assert view["request"]["nodes"] == 1
    assert view["request"]["resources"] == {"CPU": 1.0, "Memory": 128.0}
    assert view["request"]["extra"] == {"disk-image": "foo.img", "disk-image-size": 1024,
                                        "preemptible": False}
    done = daemon.cli("cancel", "-l", str(view["id"]))
    assert done.stdout.strip() == f"lease {view['id']}: cancelled"
    assert request(daemon, "-d", "60", "--preemptible")["request"]["extra"] == \
        {"preemptible": True}

    haizea = tmp_path / "haizea-lease.xml"     # what haizea-request-lease -f reads
    haizea.write_text('<?xml version="1.0"?>\n<lease preemptible="True"><nodes>'
                      '<node-set numnodes="2"><res type="CPU" amount="1"/>'
                      '<res type="Memory" amount="256"/></node-set></nodes>'
                      '<start><exact time="+02:00:00"/></start>'
                      '<duration time="00:30:00.00"/><software><none/></software></lease>')
    before = daemon_now(daemon)
    ar = json.loads(daemon.cli("request", "-f", str(haizea), "--json").stdout)
    assert (ar["type"], ar["state"], ar["request"]["nodes"]) == \
        ("advance-reservation", "scheduled", 2)
    start = datetime.fromisoformat(ar["request"]["start"].replace("Z", "+00:00"))
    assert before + timedelta(hours=2) <= start <= daemon_now(daemon) + timedelta(hours=2)
    assert ar["request"]["duration"] == 1800
    assert ar["request"]["extra"] == {"preemptible": True}
    daemon.cli("cancel", str(ar["id"]))

    haizea.write_text("<lease><nodes/></lease>")
    done = daemon.cli("request", "-f", str(haizea), check=False)
    assert done.returncode != 0
    assert f"{haizea}: <nodes>: 0 <node-set> elements" in done.stderr
    done = daemon.cli("cancel", "1", "-l", "1", check=False)
    assert done.returncode != 0 and "give the lease id once" in done.stderr


def test_request_errors(daemon, tmp_path):
    bad = daemon.cli("request", "-d", "-5", check=False)
    assert bad.returncode == 2
    assert "duration" in bad.stderr and "Traceback" not in bad.stderr
    bad = daemon.cli("request", "-d", "60", "-t", "tomorrow", check=False)
    assert bad.returncode == 2 and "start" in bad.stderr and "HTTP 400" in bad.stderr
    missing = daemon.cli("request", check=False)
    assert missing.returncode == 2 and "--duration" in missing.stderr
    no_file = daemon.cli("request", "-f", str(tmp_path / "nope.xml"), check=False)
    assert no_file.returncode == 2 and "nope.xml" in no_file.stderr
    broken = tmp_path / "broken.xml"
    broken.write_text("<lease-workload>\n<oops>\n</lease-workload>\n")
    bad_xml = daemon.cli("request", "-f", str(broken), check=False)
    assert bad_xml.returncode == 2 and "request body:3" in bad_xml.stderr, bad_xml.stderr
    # a lease the site cannot hold is rejected: exit status 1, with the reason
    rejected = daemon.cli("request", "-t", "now", "-d", "60", "-n", "5", check=False)
    assert rejected.returncode == 1, rejected
    assert "rejected" in rejected.stdout and "larger than the site" in rejected.stdout


# ---------------------------------------------------------------------- list and show
def test_list_leases_table_and_json(daemon):
    views = json.loads(daemon.cli("list-leases", "--json").stdout)
    assert isinstance(views, list) and views
    header, rows = table(daemon.cli("list-leases").stdout)
    assert header == LEASE_HEADER
    assert len(rows) == len(views)
    assert [int(r[0]) for r in rows] == [v["id"] for v in views]
    for row, view in zip(rows, views):
        assert row[1:4] == [view["type"], view["state"], str(view["request"]["nodes"])]
    active = json.loads(daemon.cli("list-leases", "--state", "active", "--json").stdout)
    assert active and all(v["state"] == "active" for v in active)
    header, rows = table(daemon.cli("list-leases", "--state", "active").stdout)
    assert header == LEASE_HEADER and len(rows) == len(active)
    empty = daemon.cli("list-leases", "--state", "failed")
    assert empty.stdout.split() == LEASE_HEADER              # just the header
    bad = daemon.cli("list-leases", "--state", "running", check=False)
    assert bad.returncode == 2 and "unknown state" in bad.stderr


def test_show_lease(daemon):
    lease = request(daemon, "-t", "+30:00:00", "-d", "02:00:00", "--command", "sleep 7200",
                    "--name", "shown")
    out = daemon.cli("show-lease", str(lease["id"])).stdout
    lines = out.splitlines()
    assert lines[0] == f"lease {lease['id']} (advance-reservation): scheduled"
    assert "for 02:00:00" in out and ", start " in out
    assert "command:   sleep 7200" in out
    plan = [line.split() for line in lines if line.strip().startswith("plan:")]
    assert len(plan) == 1 and plan[0][1] == "vm", out
    assert plan[0][-1] == ",".join(lease["plan"][0]["nodes"])
    history = [line.split() for line in lines if "->" in line and "plan:" not in line]
    assert history[0][-2:] == ["new", "submitted"]          # the history, from submission
    assert history[-1][-1] == "scheduled"
    shown = json.loads(daemon.cli("show-lease", str(lease["id"]), "--json").stdout)
    assert shown["id"] == lease["id"] and shown["name"] == "shown"
    assert shown["history"][0]["to"] == "new"
    missing = daemon.cli("show-lease", "999999", check=False)
    assert missing.returncode == 2 and "no lease 999999" in missing.stderr


def test_show_queue(daemon):
    # fill the site for hours, then queue two more (set up through the API: faster)
    for _ in range(2):
        daemon.client.submit({"duration": "20:00:00", "nodes": 4})
    waiting = [daemon.client.submit({"duration": 3600, "nodes": 4})["id"] for _ in range(2)]
    views = json.loads(daemon.cli("show-queue", "--json").stdout)
    assert [v["position"] for v in views] == list(range(1, len(views) + 1))
    queued = [v["id"] for v in views]
    assert queued == sorted(queued) and waiting[-1] in queued
    header, rows = table(daemon.cli("show-queue").stdout)
    assert header == ["POS"] + LEASE_HEADER
    assert [[int(r[0]), int(r[1])] for r in rows] == [[v["position"], v["id"]] for v in views]


def test_list_hosts(daemon):
    hosts = json.loads(daemon.cli("list-hosts", "--json").stdout)
    assert [h["name"] for h in hosts] == ["node-1", "node-2", "node-3", "node-4"]
    header, rows = table(daemon.cli("list-hosts").stdout)
    assert header == ["HOST", "CAPACITY", "FREE", "LEASES"]
    assert [r[0] for r in rows] == ["node-1", "node-2", "node-3", "node-4"]
    assert all(r[1] == "CPU:1 Memory:1024" for r in rows)
    running = {x["lease"] for h in hosts for x in h["leases"]}
    assert running, hosts                     # the site is busy (see the tests above)
    listed = {int(n) for r in rows if r[3] != "-" for n in r[3].split(",")}
    assert listed == running
    assert all(daemon.client.lease(i)["state"] == "active" for i in listed)


def test_cancel(daemon):
    lease = daemon.client.submit({"start": "+10:00:00", "duration": 3600})
    done = daemon.cli("cancel", str(lease["id"]))
    assert done.stdout.strip() == f"lease {lease['id']}: cancelled"
    assert daemon.client.lease(lease["id"])["state"] == "cancelled"
    again = daemon.cli("cancel", str(lease["id"]), check=False)
    assert again.returncode == 2
    assert "already cancelled" in again.stderr and "HTTP 409" in again.stderr
    assert "Traceback" not in again.stderr
    as_json = daemon.cli("cancel", str(daemon.client.submit({"duration": 3600})["id"]), "--json")
    assert json.loads(as_json.stdout)["state"] == "cancelled"


# ------------------------------------------------------------------ finding the daemon
def test_no_server_configured(tmp_path):
    done = lm("list-leases", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("lease-manager: error: no daemon given")
    assert "--server" in done.stderr and "Traceback" not in done.stderr
    done = lm("list-leases", env=clean_env(LEASE_MANAGER_URL="http://127.0.0.1:1"),
              cwd=tmp_path)
    assert done.returncode == 2 and "no token given" in done.stderr
    done = lm("list-leases", "--server", "127.0.0.1:8642", "--token-file", "/dev/null")
    assert done.returncode == 2 and "not a daemon URL" in done.stderr
    done = lm("list-leases", "--server", "http://127.0.0.1:1",
              "--token-file", str(tmp_path / "missing"))
    assert done.returncode == 2 and "cannot read the token file" in done.stderr


def test_unreachable_daemon(tmp_path):
    token = tmp_path / "token"
    token.write_text("x\n")
    done = lm("show-queue", "--server", "http://127.0.0.1:1", "--token-file", str(token))
    assert done.returncode == 2
    assert "cannot reach the daemon at http://127.0.0.1:1" in done.stderr
    assert "waited 5 s for a daemon to start listening there" in done.stderr
    assert "Traceback" not in done.stderr


def test_wrong_token(daemon, tmp_path):
    env = clean_env(LEASE_MANAGER_URL=daemon.url, LEASE_MANAGER_TOKEN="not-the-token")
    done = lm("list-leases", env=env)
    assert done.returncode == 2
    assert "the token is wrong" in done.stderr and "HTTP 401" in done.stderr
    assert "Traceback" not in done.stderr
    wrong = tmp_path / "token"
    wrong.write_text("also-wrong\n")
    done = lm("list-hosts", "--server", daemon.url, "--token-file", str(wrong))
    assert done.returncode == 2 and "the token is wrong" in done.stderr
    # the right token from the environment works
    right = lm("list-leases", "--json", env=clean_env(LEASE_MANAGER_URL=daemon.url,
                                                      LEASE_MANAGER_TOKEN=daemon.token))
    assert right.returncode == 0 and isinstance(json.loads(right.stdout), list)


def test_config_finds_the_daemon(daemon, tmp_path):
    """-c CONFIG: the URL from the state folder's daemon.json, the token from its token file
    (from any working directory)."""
    done = lm("list-leases", "--json", "-c", str(daemon.config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [v["id"] for v in json.loads(done.stdout)] == \
        [v["id"] for v in daemon.client.leases()]
    lease = json.loads(lm("request", "-d", "3600", "--json", "-c", str(daemon.config),
                          cwd=tmp_path).stdout)
    assert lease["id"] > 0
    info = json.loads((daemon.state / "daemon.json").read_text())
    assert info["url"] == daemon.url and Path(info["token_file"]) == \
        (daemon.state / "token").resolve()


# --------------------------------------------------------------------- stop and restart
def test_sigterm_and_restart_keep_the_leases(tmp_path):
    config = write_config(tmp_path, resources=SITE, speedup=SPEEDUP)
    first = ProcessDaemon(config)
    try:
        submit = first.client.submit
        submit({"duration": "20:00:00", "nodes": 2, "name": "kept"})
        submit({"start": "+10:00:00", "duration": 3600})
        submit({"duration": "20:00:00", "nodes": 4})
        first.client.cancel(submit({"start": "+12:00:00", "duration": 3600})["id"])
        before = json.loads(first.cli("list-leases", "--json").stdout)
        table_before = table(first.cli("list-leases").stdout)
    finally:
        code = first.terminate()
    assert code == 0, (tmp_path / "daemon.log").read_text()[-2000:]
    assert not (tmp_path / "state" / "daemon.json").exists()
    # the client now says the daemon is not there, cleanly
    gone = lm("list-leases", "-c", str(config), cwd=tmp_path)
    assert gone.returncode == 2 and "cannot reach the daemon" in gone.stderr

    second = ProcessDaemon(config)
    try:
        after = json.loads(second.cli("list-leases", "--json").stdout)
        assert [(v["id"], v["type"], v["state"], v["name"]) for v in after] == \
            [(v["id"], v["type"], v["state"], v["name"]) for v in before]
        assert [v["request"] for v in after] == [v["request"] for v in before]
        assert [v["submitted"] for v in after] == [v["submitted"] for v in before]
        header, rows = table(second.cli("list-leases").stdout)
        assert header == table_before[0]
        assert [r[:4] for r in rows] == [r[:4] for r in table_before[1]]
        assert second.token == first.token          # the same token file
        # and it goes on: new leases get the next ids
        assert request(second, "-d", "3600")["id"] == before[-1]["id"] + 1
    finally:
        assert second.terminate() == 0


SAMPLE = "/nonexistent/lm.ini"     # never read: the numbers are refused first (no daemon)


@pytest.mark.parametrize("args", [
    ("request", "-n", "٣", "-d", "60"), ("request", "-n", "1_0", "-d", "60"),
    ("request", "--cpu", "١", "-d", "60"), ("request", "--mem", "inf", "-d", "60"),
    ("request", "--max-price", "nan", "-d", "60"), ("cancel", "٣"), ("show-lease", "1_0"),
    ("serve", SAMPLE, "--speedup", "٣"),
    ("serve", SAMPLE, "--speedup", "1_000"),
    ("serve", SAMPLE, "--port", "٨٠"),
    ("sweep", SAMPLE, "-j", "٢"), ("report", "x", "--gantt-hours", "inf"),
])
def test_command_line_numbers_are_ascii_and_finite(args):
    """argparse's ``type=int/float`` read Unicode digits and underscores (``-n ٣`` was 3 VMs,
    ``serve --speedup 1_000`` started a daemon): every number goes through the strict parser."""
    done = lm(*args, "--server", "http://127.0.0.1:1", "--token-file", "/dev/null"
              ) if args[0] in ("request", "cancel", "show-lease") else lm(*args)
    assert done.returncode == 2, done.stderr
    assert ("ASCII digits only" in done.stderr or "not a finite number" in done.stderr
            ), done.stderr
    assert "Traceback" not in done.stderr


def test_a_duration_in_seconds_is_ascii_digits_only():
    from lease_manager.daemon.client import _duration, _retry_after

    assert _duration("30") == 30.0 and _duration("1.5") == 1.5
    assert _duration("٣٠") == "٣٠"          # sent as text: the daemon refuses it
    assert _duration("00:01:00") == "00:01:00" and _duration("unlimited") == "unlimited"
    assert _retry_after({"Retry-After": "٣"}) is None
    assert _retry_after({"Retry-After": "3"}) == 3.0


class FakeTime:
    """``time.monotonic`` and ``time.sleep`` of the client module, on a clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def refusing_then_answering(refusals: int):
    """A ``Client._call_once`` refused ``refusals`` times, then answering ``{"ok": True}``."""
    from lease_manager.daemon.client import DaemonUnavailable

    calls = []

    def call_once(self, *args):
        calls.append(args)
        if len(calls) <= refusals:
            raise DaemonUnavailable("cannot reach the daemon at http://x: [Errno 111] "
                                    "Connection refused", refused=True)
        return {"ok": True}
    return call_once, calls


def test_a_refused_connection_is_tried_again_while_the_daemon_starts(monkeypatch):
    """``serve ... &`` then a client command at once: the port is not bound yet. The client
    tries again every 0.1 s (of the client's clock, here the test's) for 5 s."""
    from lease_manager.daemon import client as client_module

    fake = FakeTime()
    monkeypatch.setattr(client_module, "time", fake)
    call_once, calls = refusing_then_answering(refusals=3)
    monkeypatch.setattr(client_module.Client, "_call_once", call_once)
    answer = client_module.Client("http://127.0.0.1:8642", "t").call("GET", "/v1/health")
    assert answer == {"ok": True} and len(calls) == 4
    assert fake.sleeps == [0.1, 0.1, 0.1]


def test_a_daemon_still_refusing_after_5_s_is_reported_with_the_wait(monkeypatch):
    from lease_manager.daemon import client as client_module

    fake = FakeTime()
    monkeypatch.setattr(client_module, "time", fake)
    call_once, calls = refusing_then_answering(refusals=10**6)
    monkeypatch.setattr(client_module.Client, "_call_once", call_once)
    with pytest.raises(client_module.DaemonUnavailable) as caught:
        client_module.Client("http://127.0.0.1:8642", "t").call("GET", "/v1/health")
    assert str(caught.value) == ("cannot reach the daemon at http://x: [Errno 111] Connection "
                                 "refused (waited 5 s for a daemon to start listening there)")
    assert 4.9 <= fake.now <= 5.0 and len(calls) == len(fake.sleeps) + 1
