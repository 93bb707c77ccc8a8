"""The API's indented JSON is exactly ``json.dumps(value, indent=1)``: same text, same errors."""

from __future__ import annotations

import enum
import json
import math
import random
from typing import Any

import pytest

from lease_manager.daemon.json_text import MAX_DEPTH, indented

STRINGS = ["", "a", "é", "日本", "\n\t\"\\", "\x00\x1f", "😀", "a\u2028b", "{\n}", "[1, 2]"]
FLOATS = [0.0, -0.0, 1.5, 1e100, -1e-300, 3.141592653589793, math.inf, -math.inf, math.nan,
          1e16, 123456789.0]
INTS = [0, -1, 7, 2 ** 70, -(2 ** 64)]


class Colour(enum.IntEnum):
    RED = 1


class Text(str):
    pass


def _scalar(rng: random.Random) -> Any:
    return rng.choice([None, True, False, rng.choice(STRINGS), rng.choice(FLOATS),
                       rng.choice(INTS), Colour.RED, Text("sub")])


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.4:
        return _scalar(rng)
    size = rng.randrange(0, 5)
    if roll < 0.7:
        keys = [rng.choice(STRINGS + ["k", "id"]) for _ in range(size)]
        if rng.random() < 0.1:        # keys the standard library converts
            keys.append(rng.choice([1, 2.5, True, None]))
        return {k: _value(rng, depth + 1) for k in keys}
    items = [_value(rng, depth + 1) for _ in range(size)]
    return tuple(items) if rng.random() < 0.2 else items


def test_random_values_give_the_standard_librarys_text():
    rng = random.Random(44)
    for _ in range(3000):
        value = _value(rng, 0)
        assert indented(value) == json.dumps(value, indent=1)


def test_a_lease_view_gives_the_standard_librarys_text():
    view = {"id": 12, "name": None, "type": "best-effort", "state": "queued", "reason": "",
            "submitted": "2026-11-28T18:00:00Z", "start": None, "end": None,
            "request": {"start": None, "deadline": None, "duration": 3600, "nodes": 1,
                        "resources": {"CPU": 1.0, "Memory": 1024.0}, "command": "",
                        "workdir": None, "groups": [{"nodes": 1, "resources": {"CPU": 1.0}}],
                        "max_price": None, "extra": {}},
            "price": None, "work_done": 0.0, "preemptions": 0, "suspensions": 0,
            "time_suspended": 0.0,
            "plan": [{"kind": "run", "start": "2026-11-28T18:00:00Z", "end": None,
                      "nodes": ["node1", "node2"]}]}
    assert indented(view) == json.dumps(view, indent=1)
    assert indented([view, view]) == json.dumps([view, view], indent=1)


def test_deep_values_and_the_errors_are_the_standard_librarys():
    deep: Any = "leaf"
    for i in range(MAX_DEPTH + 20):
        deep = [deep] if i % 2 else {"k": deep}
    assert indented(deep) == json.dumps(deep, indent=1)
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        indented(loop)
    for bad in ({"a": {1, 2}}, [object()], {"a": b"bytes"}):
        with pytest.raises(TypeError) as ours:
            indented(bad)
        with pytest.raises(TypeError) as theirs:
            json.dumps(bad, indent=1)
        assert str(ours.value) == str(theirs.value)
