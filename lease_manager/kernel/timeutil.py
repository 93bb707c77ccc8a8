"""Durations and time offsets as users write them: seconds, HH:MM:SS or D:HH:MM:SS."""

from __future__ import annotations

import math
from datetime import UTC

#: the longest finite duration or latest time offset accepted, in seconds (about 317 years)
MAX_SECONDS = 1e10
#: the shortest positive duration a lease may have, in seconds (shorter ones are empty in
#: floating point next to a real clock's times)
MIN_DURATION = 1e-3


def parse_duration(text: str) -> float:
    """Parse ``"90"``, ``"90.5"``, ``"01:30:00"``, ``"5:02:14:30"`` (days first) or ``"unlimited"``.

    Raises ValueError with a message fit for a user when the text is not a duration.
    """
    s = text.strip()
    if s.lower() in ("unlimited", "inf", "infinity"):
        return math.inf
    if s.startswith(("-", "+")):
        raise ValueError(f"{text!r} is not a duration: it must not have a sign")
    if not s.isascii() or "_" in s:    # float() would read '٣' and '1_000'
        raise ValueError(f"{text!r} is not a duration (ASCII digits only)")
    parts = s.split(":")
    if len(parts) > 4 or any(p.strip() == "" for p in parts):
        raise ValueError(f"{text!r} is not a duration (seconds, HH:MM:SS or D:HH:MM:SS)")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{text!r} is not a duration (seconds, HH:MM:SS or D:HH:MM:SS)") from None
    if any(n < 0 or not math.isfinite(n) for n in numbers):
        raise ValueError(f"{text!r} is not a duration: parts must be finite and non-negative")
    if len(parts) > 1 and any(n >= 60 for n in numbers[-2:]):
        raise ValueError(f"{text!r} is not a duration: minutes and seconds must be below 60")
    if len(parts) == 4 and numbers[1] >= 24:
        raise ValueError(f"{text!r} is not a duration: hours must be below 24 when days are given")
    weights = [1, 60, 3600, 86400][: len(parts)][::-1]
    total = sum(n * w for n, w in zip(numbers, weights))
    if total > MAX_SECONDS:
        raise ValueError(f"{text!r} is too long (at most {MAX_SECONDS:g} s, about 317 years; "
                         f"'unlimited' for no limit)")
    return int(total) if float(total).is_integer() else total


def format_duration(seconds: float) -> str:
    """Format seconds as ``[D:]HH:MM:SS`` (fractions dropped); ``unlimited`` for infinity."""
    if math.isinf(seconds):
        return "unlimited"
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    text = f"{hours:02d}:{minutes:02d}:{s:02d}"
    return f"{days}:{text}" if days else text


def parse_instant(text: str, now: float) -> float:
    """Parse a point in time as users write it at the daemon's edges: ISO-8601
    (``2026-11-22T14:30:00Z``, an offset, or no zone = UTC) or ``+HH:MM:SS`` / ``+SECONDS``
    from ``now``. Returns seconds since the Unix epoch."""
    s = text.strip()
    if s.startswith("+"):
        return now + parse_duration(s[1:])
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
    except ValueError:
        raise ValueError(f"{text!r} is not a time (ISO-8601 such as 2026-11-22T14:30:00Z, "
                         f"or +HH:MM:SS from now)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


#: the first and last instants a date can show: 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z
FIRST_INSTANT = -62135596800.0
LAST_INSTANT = 253402300799.0


def format_instant(seconds: float | None) -> str | None:
    """ISO-8601 in UTC with a ``Z`` (milliseconds kept when there are any); None stays None
    (and so does NaN). It never raises: an instant outside years 1-9999 (a real clock sped up
    past 9999-12-31 answered HTTP 500 with 'year 10000 is out of range') is shown as the
    first or last instant there is."""
    if seconds is None or math.isinf(seconds) or math.isnan(seconds):
        return None
    from datetime import datetime

    seconds = min(max(seconds, FIRST_INSTANT), LAST_INSTANT)
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    spec = "milliseconds" if moment.microsecond else "seconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")
