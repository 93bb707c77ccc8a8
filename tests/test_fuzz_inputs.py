"""Fuzzing the readers of user input: SWF traces, LWF workloads and ini configurations.

A seeded mutation corpus: each case takes a valid file, changes a few of its values, tokens,
lines or bytes (with values known to have broken readers before: Unicode digits, underscores,
1e16, 1e-320, 2^31, inf, nan...) and reads it. Every case must either be read, giving leases
whose numbers are finite and within the documented bounds, or be refused with a
:class:`LeaseManagerError` of one line (a configuration file's errors: one line each, naming
the file); any other exception, or a case taking more than 10 s, fails. A configuration that
is read also replays a few leases, which must all end and give a summary of finite numbers.
The cases are the same on every run (seeded), so a failure reproduces.

The quick profile (the default) runs 300 cases per format, the long one (``LM_LONG=1``, as in CI)
3,000; ``LM_FUZZ_CASES=N`` runs any number of cases.
"""

from __future__ import annotations

import math
import random
import re
import time
from pathlib import Path

import numpy as np
import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import LeaseManagerError
from lease_manager.kernel.lease import TERMINAL_STATES, Lease, LeaseType, VMRequest
from lease_manager.kernel.resources import ResourceTypes
from lease_manager.kernel.timeutil import MAX_SECONDS, MIN_DURATION
from lease_manager.plugins import Plugins
from lease_manager.run import Run
from lease_manager.workload.lwf import read_lwf
from lease_manager.workload.swf import SWFConversion, SWFReader, swf_leases

from support import FUZZ_CASES, ROOT

CASES = FUZZ_CASES
#: the longest one case may take, seconds
HANG = 10.0
NASTY = ["-1", "0", "1", "1e-320", "1e-9", "0.0001", "1e16", "1e400", "-1e16", "nan", "inf",
         "-inf", "\u0663", "1_000", "2147483648", "1" + "0" * 30, "", "x", "0x10", "1e", "+1",
         "99999999999999999999", "00:00:00", "25:61:61", "unlimited", "\u0661\u0660:00:00",
         " ", "1.5", "-0", "3" * 400]
SWF_SEED = "\n".join(
    ["; Version: 2.2", "; MaxNodes: 8", "; MaxProcs: 8"]
    + [f"{i} {i * 10} 0 {30 + i} {1 + i % 4} -1 -1 {1 + i % 4} {60 + i} -1 1 7 -1 -1 1 -1 -1 -1"
       for i in range(1, 9)]) + "\n"
LWF_SEED = (ROOT / "tests" / "lwf" / "example.lwf").read_text()
INI_SEED = """\
[simulation]
resources = 8 CPU:2 Memory:1024; 4 CPU:4 Memory:2048
seed = 3
[tracefile]
vm-resources = CPU:1 Memory:256
procs-per-vm = 1
window-length = 10:00:00
max-jobs = 100
[scheduling]
backfilling = intermediate
backfilling-reservations = 2
suspend-rate = 32
shutdown-time = 5
[pricing]
rate = 1.5
[power]
pstates = 1.2:80:150 2.4:100:200; 2.0:90:300
off-watts = 5
switch-on = 60:150
switch-off = 30:120
policy-node-power = switch-off-idle
idle-timeout = 00:05:00
cop = 2
electricity-price = 0.1
"""


def mutate(text: str, rng: random.Random) -> str:
    """A few random changes to ``text``: values, tokens, lines, bytes."""
    for _ in range(rng.randint(1, 3)):
        choice = rng.random()
        numbers = list(re.finditer(r"[0-9][0-9.:e+-]*", text))
        if choice < 0.45 and numbers:        # a number becomes a nasty value
            m = rng.choice(numbers)
            text = text[:m.start()] + rng.choice(NASTY) + text[m.end():]
        elif choice < 0.6:                   # a token goes
            tokens = list(re.finditer(r"\S+", text))
            if tokens:
                m = rng.choice(tokens)
                text = text[:m.start()] + text[m.end():]
        elif choice < 0.7:                   # a line is repeated or dropped
            lines = text.splitlines(keepends=True)
            if lines:
                i = rng.randrange(len(lines))
                lines[i:i + 1] = [lines[i]] * rng.choice([0, 2])
                text = "".join(lines)
        elif choice < 0.8:                   # the file is cut short
            text = text[:rng.randrange(len(text) + 1)]
        elif choice < 0.9:                   # a few random characters go in
            i = rng.randrange(len(text) + 1)
            junk = "".join(rng.choice("<>&;=:[]\"' \n\t\x00\u0663_x9") for _ in range(3))
            text = text[:i] + junk + text[i:]
        else:                                # two lines swap
            lines = text.splitlines(keepends=True)
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
                text = "".join(lines)
    return text


def check_leases(leases) -> list[str]:
    """What is out of bounds in leases a reader accepted."""
    bad = []
    for lease in leases:
        for name in ("submit", "requested_duration", "actual_duration", "start_request",
                     "deadline"):
            value = getattr(lease, name)
            if value is None or (name == "requested_duration" and value == math.inf):
                continue
            if not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
                bad.append(f"lease {lease.id}: {name} = {value!r}")
        if not lease.requested_duration >= MIN_DURATION:
            bad.append(f"lease {lease.id}: requested {lease.requested_duration!r}")
        if not (1 <= lease.vms.count <= 10_000_000):
            bad.append(f"lease {lease.id}: {lease.vms.count} VMs")
        if not (np.isfinite(lease.vms.vectors).all() and (lease.vms.vectors >= 0).all()):
            bad.append(f"lease {lease.id}: VM amounts {lease.vms.vectors.tolist()}")
    return bad


def run_cases(name: str, seed_text: str, suffix: str, read, tmp_path: Path) -> None:
    failures: list[str] = []
    outcomes = {"read": 0, "refused": 0}
    for case in range(CASES):
        rng = random.Random(f"{name}-{case}")
        text = mutate(seed_text, rng)
        path = tmp_path / f"case{suffix}"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        began = time.perf_counter()
        try:
            problems = read(path)
            outcomes["read"] += 1
        except LeaseManagerError as exc:
            outcomes["refused"] += 1
            # one line per error (a configuration file's errors are reported together)
            each = getattr(exc, "errors", [exc])
            problems = ["a multi-line error: " + str(exc)] if any(
                "\n" in str(e) or not str(e).startswith(str(path)) and len(each) > 1
                for e in each) else []
        except Exception as exc:    # noqa: BLE001 - any other exception is the finding
            problems = [f"{type(exc).__name__}: {exc}"]
        took = time.perf_counter() - began
        if took > HANG:
            problems.append(f"took {took:.1f} s")
        if problems:
            failures.append(f"case {case}: {'; '.join(problems)[:300]}")
    print(f"{name}: {CASES} cases, {outcomes['read']} read, {outcomes['refused']} refused, "
          f"{len(failures)} failed")
    assert not failures, f"{len(failures)} of {CASES} {name} cases failed:\n" + "\n".join(
        failures[:10])
    assert outcomes["read"] and outcomes["refused"], outcomes   # the corpus exercises both


def test_fuzz_swf(tmp_path):
    conv = SWFConversion(vm_vector=np.array([1.0, 256.0]))

    def read(path: Path) -> list[str]:
        return check_leases(list(swf_leases(SWFReader(path), conv)))

    run_cases("swf", SWF_SEED, ".swf", read, tmp_path)


def test_fuzz_lwf(tmp_path):
    types = ResourceTypes(("CPU", "Memory"))

    def read(path: Path) -> list[str]:
        return check_leases(read_lwf(path, types).leases)

    run_cases("lwf", LWF_SEED, ".lwf", read, tmp_path)


@pytest.fixture(scope="module")
def plugins():
    return Plugins(entry_points=False)


def replay_leases(n_types: int) -> list[Lease]:
    """A few leases of each kind, 1 of every resource type per VM, for a configuration to
    replay: what it accepted must also run (``shutdown-time = inf`` was accepted and the run
    ended in 'internal error: invariant violated')."""
    def vms(count: int) -> VMRequest:
        return VMRequest.uniform(count, [1.0] * n_types)

    return [Lease(1, LeaseType.BEST_EFFORT, 0, vms(2), 600, 500),
            Lease(2, LeaseType.BEST_EFFORT, 30, vms(1), 3600, 3600),
            Lease(3, LeaseType.ADVANCE_RESERVATION, 60, vms(1), 900, 900, start_request=1800),
            Lease(4, LeaseType.IMMEDIATE, 90, vms(1), 300, 300),
            Lease(5, LeaseType.BEST_EFFORT, 120, vms(100), 60, 60)]


def check_replay(run: Run, leases: list[Lease]) -> list[str]:
    """What is wrong after a configuration's replay: a lease left unfinished, or a number of
    the summary that is not finite."""
    bad = [f"lease {lease.id} ended {lease.state.value}" for lease in leases
           if lease.state not in TERMINAL_STATES]
    for key, value in run.summary.items():
        if isinstance(value, float) and not math.isfinite(value):
            bad.append(f"summary {key} = {value!r}")
    return bad


def test_fuzz_ini(tmp_path, plugins):
    def read(path: Path) -> list[str]:
        config = load_config(path, plugins.schema)
        with Run(config, plugins, leases=[]) as run:   # the run's own checks (power model...)
            run.run()
        leases = replay_leases(len(run.nodes.types.names))
        with Run(config, plugins, leases=leases) as run:
            run.run()
            run.table.check()
            return check_replay(run, leases)

    run_cases("ini", INI_SEED, ".ini", read, tmp_path)


def test_the_long_fuzz_command_runs_every_fuzz_module():
    """CONTRIBUTING's long-fuzz command named only this module, not the API's fuzz."""
    line, = [line for line in (ROOT / "CONTRIBUTING.md").read_text().splitlines()
             if line.startswith("LM_FUZZ_CASES=")]
    modules = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_fuzz*.py"))
    assert len(modules) >= 2
    for module in modules:
        assert module in line.split(), module
