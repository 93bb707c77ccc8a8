"""``json.dumps(value, indent=1)``, the same text, in about half the time.

With an indent the standard library encodes in pure Python (its C encoder only writes compact
JSON): a lease's view took ~70 us, the largest part of an API thread's work on a submission.
Here each container is laid out by one ``str.join``, and its scalars are encoded by the C
functions the standard library itself uses (``encode_basestring_ascii``, ``int.__repr__``,
``float.__repr__``). Anything but plain ``dict``/``list``/``tuple``/``str``/``int``/``float``/
``bool``/``None``, or a key that is not a ``str``, is handed to ``json.dumps`` itself, so every
error and every corner case stays the standard library's.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

INDENT = 1
#: containers nested deeper than this are handed to ``json.dumps`` (which reports a cycle)
MAX_DEPTH = 64
_INFINITY = float("inf")


def _float(value: float) -> str:
    """As the standard library writes a float (``allow_nan``: NaN and the infinities)."""
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _scalar(value: Any) -> str | None:
    """A scalar's JSON text; None when ``value`` is not a plain scalar."""
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return _float(value)
    return None


def _value(value: Any, level: int) -> str:
    """``value``'s text as it appears at nesting ``level`` (its first line not indented)."""
    text = _scalar(value)
    return text if text is not None else _container(value, level)


def _container(value: Any, level: int) -> str:
    """A container's text at nesting ``level``: its items one a line, one level deeper."""
    kind = type(value)
    if level > MAX_DEPTH or not (kind is dict or kind is list or kind is tuple):
        return _fallback(value, level)
    if not value:
        return "{}" if kind is dict else "[]"
    pad = "\n" + " " * (INDENT * (level + 1))
    scalar, deeper = _scalar, level + 1
    texts = []
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:      # the standard library's key conversions
                return _fallback(value, level)
            text = scalar(item)
            texts.append(encode_basestring_ascii(key) + ": "
                         + (text if text is not None else _container(item, deeper)))
        opening, closing = "{", "}"
    else:
        for item in value:
            text = scalar(item)
            texts.append(text if text is not None else _container(item, deeper))
        opening, closing = "[", "]"
    return opening + pad + ("," + pad).join(texts) + "\n" + " " * (INDENT * level) + closing


def _fallback(value: Any, level: int) -> str:
    """The standard library's text for ``value``, moved to ``level`` (JSON text has a line
    break only between items: strings escape theirs)."""
    return json.dumps(value, indent=INDENT).replace("\n", "\n" + " " * (INDENT * level))


def indented(value: Any) -> str:
    """Exactly ``json.dumps(value, indent=1)`` (same text, same errors)."""
    return _value(value, 0)
