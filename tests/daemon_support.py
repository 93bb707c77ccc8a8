"""Starting lease daemons for tests: in a thread (fast, inspectable) or as a real process
(``lease-manager serve``, for signals and crashes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lease_manager.daemon.client import Client


def write_config(dir: Path, *, resources: str = "2 CPU:1 Memory:1024",
                 enactment: str = "simulated", speedup: float = 1.0,
                 extra: str = "", vm: str = "CPU:1 Memory:512") -> Path:
    """A daemon configuration in ``dir`` with its state in ``dir/state`` and any free port."""
    path = dir / "daemon.ini"
    path.write_text(f"""
[simulation]
resources = {resources}
speedup = {speedup}
[tracefile]
vm-resources = {vm}
[scheduling]
suspend-rate = 1000
resume-rate = 1000
[daemon]
enactment = {enactment}
state-dir = state
port = 0
reconcile-interval = 0.05
sync = normal
{extra}
""")
    return path


def lwf(*requests: str) -> str:
    """An LWF document of these ``<lease-request>`` elements (see :func:`lwf_request`)."""
    return ('<?xml version="1.0"?>\n<lease-workload name="test">\n  <lease-requests>\n'
            + "".join(requests) + "  </lease-requests>\n</lease-workload>\n")


def lwf_request(lease_id: str, start: str = "<start/>", duration: str = "00:10:00",
                numnodes: int = 1, extra: str = "", memory: float = 256) -> str:
    """One ``<lease-request>`` arriving at 0: ``numnodes`` VMs of 1 CPU and ``memory`` MB."""
    return f"""    <lease-request arrival="00:00:00">
      <lease id="{lease_id}">
        <nodes>
          <node-set numnodes="{numnodes}">
            <res type="CPU" amount="1"/>
            <res type="Memory" amount="{memory}"/>
          </node-set>
        </nodes>
        {start}
        <duration time="{duration}"/>
        <software><none/></software>{extra}
      </lease>
    </lease-request>
"""


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "a condition",
             every: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something true (returned) or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


class ThreadDaemon:
    """A :class:`~lease_manager.daemon.service.Daemon` serving from a thread of the test."""

    def __init__(self, config: Path, *overrides: str, plugins: Any = None) -> None:
        from lease_manager.daemon.service import Daemon

        self.daemon = Daemon(config, tuple(overrides), plugins=plugins)
        ready = threading.Event()
        self.thread = threading.Thread(target=self.daemon.serve_forever,
                                       kwargs={"ready": lambda d: ready.set(),
                                               "install_signals": False}, daemon=True)
        self.thread.start()
        if not ready.wait(20):
            raise AssertionError("the daemon did not start")
        self.client = Client(self.daemon.url, self.daemon.token)

    def stop(self) -> None:
        self.daemon.stop()
        self.thread.join(20)
        assert not self.thread.is_alive(), "the daemon did not stop"
        assert self.daemon.violation is None, self.daemon.violation

    def __enter__(self) -> ThreadDaemon:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class ProcessDaemon:
    """``lease-manager serve CONFIG`` as a child process, run from the config's folder."""

    def __init__(self, config: Path, *args: str, max_files: int | None = None) -> None:
        """``max_files``: the daemon's limit of open file descriptors (RLIMIT_NOFILE)."""
        self.config = config
        self.state = config.parent / "state"
        (self.state / "daemon.json").unlink(missing_ok=True)
        self.log = open(config.parent / "daemon.log", "ab")

        def limit_files() -> None:
            import resource

            if max_files is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (max_files, max_files))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lease_manager.cli", "serve", str(config), *args],
            cwd=config.parent, stdout=self.log, stderr=subprocess.STDOUT,
            preexec_fn=limit_files if max_files is not None else None)
        info = wait_for(self._info, 30, what="the daemon to write daemon.json")
        self.url = info["url"]
        self.token = (self.state / "token").read_text().strip()
        self.client = Client(self.url, self.token)

    def _info(self) -> dict | None:
        if self.proc.poll() is not None:
            raise AssertionError(f"the daemon exited with {self.proc.returncode}: "
                                 f"{(self.config.parent / 'daemon.log').read_text()[-2000:]}")
        try:
            info = json.loads((self.state / "daemon.json").read_text())
        except (OSError, ValueError):
            return None
        return info if info.get("ready") else None    # written again once restored

    def cli(self, *args: str, check: bool = True,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        """Run a client command against this daemon, as a user would (from ``cwd``)."""
        env = {**os.environ, "LEASE_MANAGER_URL": self.url,
               "LEASE_MANAGER_TOKEN_FILE": str(self.state / "token")}
        done = subprocess.run([sys.executable, "-m", "lease_manager.cli", *args], env=env,
                              capture_output=True, text=True, timeout=60, cwd=cwd)
        if check and done.returncode != 0:
            raise AssertionError(f"lease-manager {' '.join(args)} exited with "
                                 f"{done.returncode}: {done.stderr}")
        return done

    def terminate(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self.log.close()
        return code

    def terminate_and_clean(self) -> int:
        """SIGTERM the daemon, then stop the work its backend leaves running; its exit code."""
        code = self.terminate()
        kill_leftover_processes(self.config)
        return code

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(20)
        self.log.close()


def kill_leftover_processes(config: Path, plugins: Any = None) -> None:
    """Stop the work the ``process`` backend still holds under ``config``'s state folder (its
    work outlives the daemon by design; a test must not leave it behind, frozen or not).
    ``plugins``: those the daemon ran with, if its configuration names their options."""
    import types

    from lease_manager.config.schema import load_config
    from lease_manager.enactment.process_backend import ProcessBackend
    from lease_manager.kernel.resources import parse_site
    from lease_manager.plugins import Plugins

    # its state-dir is relative to the file
    cfg = load_config(config, (plugins or Plugins()).schema)
    ctx = types.SimpleNamespace(config=cfg, site=parse_site(cfg.get("simulation", "resources")))
    backend = ProcessBackend(ctx)
    for lease_id in backend.known_leases():
        backend.stop(lease_id)
    backend.close()
