"""Option types: how an ini option's text becomes a value (and a value text again), and the
types the options of lease_manager and its plugins are declared with."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import attrs

from lease_manager.kernel.resources import parse_amounts, parse_site
from lease_manager.kernel.timeutil import format_duration, parse_duration
from lease_manager.numbers import is_plain, parse_float, parse_int


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@attrs.frozen
class OptionType:
    """How an option's text becomes a value: ``parse`` raises ValueError with a user message."""

    name: str
    parse: Callable[[str], Any]
    format: Callable[[Any], str] = str
    relative_to_config: bool = False
    #: words that are values of their own, never file names (with ``relative_to_config``)
    keywords: tuple[str, ...] = ()

    def is_path(self, value: Any) -> bool:
        """Is ``value`` (parsed) a file name to resolve relative to the configuration?"""
        return (self.relative_to_config and isinstance(value, str) and bool(value)
                and value not in self.keywords)


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("yes", "true", "on", "1"):
        return True
    if low in ("no", "false", "off", "0"):
        return False
    raise ValueError(f"{text!r} is not yes/no")


def _parse_int(text: str) -> int:
    return parse_int(text)


def _parse_float(text: str) -> float:
    """A number; ``inf`` is allowed (options bound it where it makes no sense)."""
    if text.strip().lower() in ("inf", "infinity"):
        return math.inf
    return parse_float(text)


def _parse_list(text: str) -> tuple[str, ...]:
    return tuple(p for p in re.split(r"[,\s]+", text.strip()) if p)


def _parse_names(text: str) -> tuple[str, ...]:
    names = _parse_list(text)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{twice[0]!r} is named twice")
    return names


#: the longest path and file name the kernel takes (Linux's PATH_MAX and NAME_MAX, in bytes)
MAX_PATH_BYTES = 4095
MAX_NAME_BYTES = 255


def path_problem(path: str) -> str:
    """Why ``path`` can name no file (a NUL character, a name or a path too long), or ""."""
    if "\x00" in path:
        return "a path cannot hold a NUL character"
    encoded = path.encode("utf-8", "surrogateescape")
    if len(encoded) > MAX_PATH_BYTES:
        return f"the path is {len(encoded)} bytes long (at most {MAX_PATH_BYTES})"
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > MAX_NAME_BYTES:
        start = longest[:24].decode(errors="replace")
        return f"the path has a name of {len(longest)} bytes ({start}...; at most " \
               f"{MAX_NAME_BYTES})"
    return ""


def _parse_int_list(text: str) -> tuple[int, ...]:
    out = []
    for part in _parse_list(text):
        try:
            out.append(parse_int(part))
        except ValueError:
            raise ValueError(f"{part!r} in {text!r} is not an integer") from None
    return tuple(out)


def _parse_site(text: str) -> str:
    word = text.strip()
    if word == "in-tracefile" or word.startswith("file:"):
        return word   # the LWF trace's <site>, or a site file (workload/site_source.py)
    parse_site(text)   # validate; the site is built from the text later
    return word


def _parse_amounts(text: str) -> str:
    parse_amounts(text)
    return text.strip()


STRING = OptionType("string", lambda s: s.strip())
BOOLEAN = OptionType("boolean (yes/no)", _parse_bool, lambda v: "yes" if v else "no")
INTEGER = OptionType("integer", _parse_int)
FLOAT = OptionType("number", _parse_float)
DURATION = OptionType("duration (seconds, HH:MM:SS or D:HH:MM:SS)", parse_duration,
                      format_duration)
PATH = OptionType("path (relative to the configuration file)", lambda s: s.strip(),
                  relative_to_config=True)


def parse_draw(word: str, low_bound: float, high_bound: float
               ) -> tuple[str, float, float] | None:
    """``uniform:LOW:HIGH``, ``normal:MEAN:SD`` or ``redrawn-normal:MEAN:SD`` (a value drawn
    per site from the run's seed), or None if ``word`` is none of them."""
    kind = word.split(":", 1)[0].lower()
    if kind not in ("uniform", "normal", "redrawn-normal"):
        return None
    parts = word.split(":")
    if len(parts) != 3:
        raise ValueError(f"{word!r} is not {kind}:{'LOW:HIGH' if kind == 'uniform' else 'MEAN:SD'}")
    a, b = parse_float(parts[1]), parse_float(parts[2])
    if kind == "uniform" and not (math.isfinite(a) and math.isfinite(b)
                                  and low_bound <= a <= b <= high_bound):
        raise ValueError(f"{word!r}: need {low_bound:g} <= LOW <= HIGH <= {high_bound:g}")
    if kind != "uniform" and not (math.isfinite(a) and math.isfinite(b)
                                  and low_bound <= a <= high_bound and 0 <= b <= high_bound):
        raise ValueError(f"{word!r}: need {low_bound:g} <= MEAN <= {high_bound:g} and "
                         f"0 <= SD <= {high_bound:g}")
    return (kind, a, b)


def _parse_number_or_file(text: str) -> float | str | tuple[str, float, float]:
    text = text.strip()
    drawn = parse_draw(text, 0.0, 1e6)
    if drawn is not None:
        return drawn
    try:
        value = float(text) if is_plain(text) else math.nan
    except ValueError:
        if not text:
            raise ValueError("expected a number or a file name") from None
        return text   # a file, resolved relative to the configuration file
    if math.isnan(value):
        return text   # not a number (or not in ASCII): a file name
    if not math.isfinite(value) or not 0 <= value <= 1e6:
        raise ValueError(f"{text!r} is not in [0, 1e6]")
    return value


def _format_value(value: Any) -> str:
    return f"{value[0]}:{value[1]:g}:{value[2]:g}" if isinstance(value, tuple) else str(value)


NUMBER_OR_FILE = OptionType("number in [0, 1e6], uniform:LOW:HIGH, normal:MEAN:SD or "
                            "redrawn-normal:MEAN:SD (drawn per site from the run's seed; a "
                            "normal draw below 0 is cut to 0, a redrawn-normal one drawn again), "
                            "or a CSV file of time,value rows (relative to the configuration "
                            "file)",
                            _parse_number_or_file, _format_value, relative_to_config=True)


def _parse_power_cap(text: str) -> float | str:
    word = text.strip()
    if word.lower() in ("none", "green"):
        return word.lower()
    try:
        value = parse_float(word) if is_plain(word) else math.nan
    except ValueError:
        value = math.nan
    if math.isnan(value):
        if not word:
            raise ValueError("expected none, green, a number of watts or a file name")
        return word   # a file, resolved relative to the configuration file
    if not math.isfinite(value) or not 0 <= value <= 1e12:
        raise ValueError(f"{word!r} is not in [0, 1e12] watts")
    return value


#: ``none``, ``green`` (the green production), watts, or a CSV file of ``time,watts`` rows
POWER_CAP = OptionType("none, green, watts in [0, 1e12], or a CSV file of time,watts rows "
                       "(relative to the configuration file)", _parse_power_cap,
                       relative_to_config=True, keywords=("none", "green"))


def _parse_cop(text: str) -> float | tuple[str, float, float]:
    word = text.strip()
    drawn = parse_draw(word, 1e-9, 1e6)
    if drawn is not None:
        return drawn
    value = parse_float(word)
    if not (value >= 1e-9):
        raise ValueError(f"{word!r} is below the minimum 1e-09")
    return value


COP = OptionType("number above 0 (inf: no cooling), or uniform:LOW:HIGH, normal:MEAN:SD or "
                 "redrawn-normal:MEAN:SD (drawn per site from the run's seed; a normal draw is "
                 "cut at 1e-9, a redrawn-normal one drawn again)",
                 _parse_cop, _format_value)
NAMES = OptionType("list of names", _parse_names, lambda v: ", ".join(v))
INTEGERS = OptionType("list of integers", _parse_int_list, lambda v: ", ".join(map(str, v)))
SITE = OptionType("nodes (e.g. '144 CPU:8 Memory:16384'; groups separated by ';'), "
                  "in-tracefile (the LWF trace's <site>) or file:PATH (an XML <site> file)",
                  _parse_site)
AMOUNTS = OptionType("resource amounts (e.g. 'CPU:1 Memory:1024')", _parse_amounts)
