"""Fuzzing the daemon's API (hypothesis): random, plausible and hostile lease requests.

Every answer is 201 or 400 (never a 5xx, never a dead daemon); a 400 names what is wrong;
an accepted lease's numbers are finite and within the documented bounds. The quick profile
(the default) runs 300 cases, the long one (``LM_LONG=1``) 3,000, and ``LM_FUZZ_CASES=N`` any
number, as for the readers' fuzz in ``tests/test_fuzz_inputs.py``.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta, timezone

import pytest
from test_api import SITE, assert_serving, call, submit

from lease_manager.daemon.lease_requests import FIELDS, MAX_SECONDS

from daemon_support import ThreadDaemon, write_config
from support import FUZZ_CASES

CASES = FUZZ_CASES
#: the site of SITE: 4 nodes, and [daemon] max-vms-per-node's default
MAX_VMS_PER_LEASE = 4 * 64


def assert_within_bounds(view: dict) -> None:
    """An accepted lease's request holds only finite numbers within the API's bounds."""
    req = view["request"]
    assert 1 <= req["nodes"] <= MAX_VMS_PER_LEASE, view
    assert req["duration"] == "unlimited" or 0 < req["duration"] <= MAX_SECONDS, view
    for group in req["groups"]:
        assert all(math.isfinite(a) and 0 <= a <= 1e12 for a in group["resources"].values())
    assert req["max_price"] is None or 0 <= req["max_price"] <= 1e15, view
    assert view["price"] is None or math.isfinite(view["price"]), view


try:
    from hypothesis import HealthCheck, event, given, settings
    from hypothesis import strategies as st
except ImportError:                     # the rest of the file runs without it
    st = None


@pytest.fixture(scope="module")
def fuzz_daemon(tmp_path_factory):
    config = write_config(tmp_path_factory.mktemp("fuzz"), resources=SITE)
    with ThreadDaemon(config) as daemon:
        yield daemon


if st is None:
    def test_random_requests_never_5xx():
        pytest.skip("the property-based fuzz needs hypothesis")
else:
    _scalars = (st.none() | st.booleans()
                | st.integers(min_value=-10 ** 6, max_value=10 ** 4)
                | st.sampled_from([10 ** 30, -(10 ** 30), 2 ** 63, 10 ** 400])
                | st.floats(allow_nan=True, allow_infinity=True)
                | st.text(max_size=20))
    _json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)
    _offsets = st.builds(lambda n: f"+{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}",
                         st.integers(min_value=0, max_value=10 ** 6))
    _times = (_offsets
              | st.sampled_from(["now", "best_effort", "best-effort", "", "+1:00:00:00", "+-1",
                                 "+unlimited", "2026-11-22T14:30:00Z", "x", "+1e9"])
              | st.builds(lambda d, minutes: d.replace(tzinfo=timezone(timedelta(minutes=minutes)))
                          .isoformat(), st.datetimes(), st.integers(min_value=-900, max_value=900))
              | st.builds(lambda n: f"+{n}", st.integers(min_value=-10, max_value=10 ** 10)))
    _durations = (st.sampled_from(["00:10:00", "unlimited", "inf", "1:00:00:00", "-5", "59:59",
                                   "0", "1e3", "nan", "-0"])
                  | st.integers(min_value=-10, max_value=10 ** 10)
                  | st.floats(min_value=-1.0, max_value=1e10, allow_nan=False))
    FIELD_VALUES = {
        "type": st.sampled_from(["best-effort", "advance-reservation", "immediate", "deadline",
                                 "BEST-EFFORT", "ar"]),
        "start": _times,
        "deadline": _offsets | _times,
        "duration": _durations,
        "nodes": st.integers(min_value=-2, max_value=8),
        "cpu": st.floats(min_value=-1, max_value=4, allow_nan=False),
        "memory": st.floats(min_value=-1, max_value=4096, allow_nan=False),
        "resources": st.dictionaries(st.sampled_from(["CPU", "Memory", "GPU", ""]),
                                     st.floats(min_value=-1, max_value=2, allow_nan=False),
                                     max_size=3),
        "command": st.text(max_size=30),
        "max_price": st.floats(min_value=-1, max_value=1e16, allow_nan=False),
        "name": st.text(max_size=30),
        "extra": st.dictionaries(st.text(max_size=8), _scalars, max_size=3),
        "workdir": st.sampled_from(["/tmp", "/", "tmp", "/nonexistent", "", "/tmp/../tmp"])
        | st.text(max_size=20),
    }
    assert set(FIELD_VALUES) == set(FIELDS)
    # plausible requests (many valid), plausible ones with one field given any JSON value
    # at all (or a field of no use), and any JSON at all
    _plausible = st.fixed_dictionaries(
        {"duration": _durations},
        optional={name: values for name, values in FIELD_VALUES.items() if name != "duration"})
    _one_hostile = st.builds(lambda body, name, value: {**body, name: value}, _plausible,
                             st.sampled_from([*FIELDS, "bogus", ""]), _json)
    _bodies = _plausible | _one_hostile | st.lists(_plausible, max_size=3) | _json

    @settings(max_examples=CASES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(body=_bodies)
    def test_random_requests_never_5xx(fuzz_daemon, body):
        answer = submit(fuzz_daemon, json.dumps(body))     # NaN and Infinity get through too
        assert fuzz_daemon.thread.is_alive(), "the daemon died"
        event(f"HTTP {answer.status}")
        assert answer.status in (201, 400), answer
        if answer.status == 400:
            assert answer.error
        else:
            views = answer.json if isinstance(answer.json, list) else [answer.json]
            assert all(v["state"] in ("active", "scheduled", "queued", "rejected", "done")
                       for v in views), views
            for view in views:
                assert_within_bounds(view)


def test_daemon_serves_after_random_requests(fuzz_daemon):
    assert_serving(fuzz_daemon)
    for path in ("/v1/leases", "/v1/queue", "/v1/hosts"):
        assert call(fuzz_daemon, "GET", path).status == 200
