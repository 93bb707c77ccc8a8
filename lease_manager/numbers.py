"""Numbers as users write them: ASCII digits only.

Python's ``float`` and ``int`` also read Unicode digits (``'٣'`` is 3) and underscores
(``'1_000'``); in configuration files and traces those are typing accidents, not numbers.
"""

from __future__ import annotations

import math


def is_plain(text: str) -> bool:
    """Whether ``text`` has only ASCII characters and no underscore."""
    return text.isascii() and "_" not in text


def parse_float(text: str) -> float:
    """A finite number in ASCII (``'1.5'``, ``'-2'``, ``'1e3'``); raise ValueError, with a
    message fit for a user, otherwise."""
    stripped = text.strip()
    if not is_plain(stripped):
        raise ValueError(f"{stripped!r} is not a number (ASCII digits only)")
    try:
        value = float(stripped)
    except ValueError:
        raise ValueError(f"{stripped!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{stripped!r} is not a finite number")
    return value


def parse_int(text: str) -> int:
    """An integer in ASCII digits (``'42'``, ``'-1'``); raise ValueError otherwise."""
    stripped = text.strip()
    if not is_plain(stripped):
        raise ValueError(f"{stripped!r} is not an integer (ASCII digits only)")
    try:
        return int(stripped)
    except ValueError:
        raise ValueError(f"{stripped!r} is not an integer") from None


def arg_int(text: str) -> int:
    """An ``argparse`` type: :func:`parse_int` (``-n ٣`` and ``-n 1_0`` are refused, where
    ``type=int`` read them as 3 and 10)."""
    import argparse

    try:
        return parse_int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def arg_float(text: str) -> float:
    """An ``argparse`` type: :func:`parse_float` (ASCII digits, finite)."""
    import argparse

    try:
        return parse_float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
