"""Lease ``extra`` attributes that the core or a plugin interprets, checked where they enter.

A lease's ``extra`` is free-form, but some names mean something: the core reads
``disk-image-size`` as megabytes to transfer, a plugin may read ``watts`` as a task's power.
Each such name is declared once, as an :class:`ExtraAttribute` with its kind and bounds (the
core's below, a plugin's through the ``register_extra_attributes`` hook), and every value from
outside (an LWF document, an API request, a row the daemon stored) is checked against it before
anything is stored or planned: a bad value is refused in one line naming the attribute, where
``disk-image-size = "x"`` once surfaced as a ``ValueError`` deep in planning (and stopped a
daemon at every restart).
Names nobody declared stay free-form (strings, finite numbers, booleans).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from lease_manager.numbers import parse_float

#: Haizea 1.1's lease attribute: the user's rate per CPU-hour (a price above the lease's price
#: at that rate is rejected by the user; policies/pricing.py)
USER_RATE = "simul_userrate"
#: the kinds an attribute can be
KINDS = ("number", "integer", "text", "boolean", "choice")
TRUE_WORDS = ("yes", "true", "1", "on")
FALSE_WORDS = ("no", "false", "0", "off")


@attrs.frozen
class ExtraAttribute:
    """One interpreted ``extra`` attribute: its name, what it means, and what values it takes.

    ``number`` and ``integer`` take numbers (or their text) from ``minimum`` to ``maximum``;
    ``text`` takes a non-empty string of at most ``maximum`` characters; ``boolean`` takes
    true/false (or yes/no, 1/0, on/off); ``choice`` one of ``choices``."""

    name: str
    doc: str
    kind: str = attrs.field(default="number",
                            validator=attrs.validators.in_(KINDS))
    minimum: float = 0.0
    maximum: float = 1e15
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        """The values it takes, in words (for messages and the reference)."""
        if self.kind in ("number", "integer"):
            return f"{'a whole number' if self.kind == 'integer' else 'a number'} from " \
                   f"{self.minimum:g} to {self.maximum:g}"
        if self.kind == "text":
            return f"a non-empty text of at most {self.maximum:g} characters"
        if self.kind == "boolean":
            return "true or false"
        return "one of " + ", ".join(self.choices)

    def parse(self, value: Any) -> str | float | int | bool:
        """The value, checked and normalised; ValueError with a message fit for a user."""
        if self.kind in ("number", "integer"):
            return self._number(value)
        if self.kind == "boolean":
            if isinstance(value, bool):
                return value
            word = str(value).strip().lower() if isinstance(value, (str, int)) else None
            if word in TRUE_WORDS or word in FALSE_WORDS:
                return word in TRUE_WORDS
            raise ValueError(f"{value!r} is not {self.describe()}")
        if not isinstance(value, str) or not value or len(value) > self.maximum \
                or "\x00" in value:
            raise ValueError(f"{value!r} is not {self.describe()}")
        if self.kind == "choice" and value not in self.choices:
            raise ValueError(f"{value!r} is not {self.describe()}")
        return value

    def _number(self, value: Any) -> float | int:
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not {self.describe()}")
        if isinstance(value, str):
            number = parse_float(value)         # ASCII digits, finite: its message otherwise
        elif isinstance(value, (int, float)):
            try:
                number = float(value)
            except OverflowError:
                number = math.inf
        else:
            raise ValueError(f"{value!r} is not {self.describe()}")
        shown = repr(value) if isinstance(value, str) else f"{number:g}"
        if not math.isfinite(number) or not self.minimum <= number <= self.maximum:
            raise ValueError(f"{shown} is out of range: {self.describe()}")
        if self.kind == "integer":
            if not number.is_integer():
                raise ValueError(f"{shown} is not {self.describe()}")
            return int(number)
        return number


#: the attributes the core interprets
CORE_EXTRA_ATTRIBUTES = (
    ExtraAttribute("disk-image", "the disk image a lease's VMs boot (image transfers, caches)",
                   kind="text", maximum=1024),
    ExtraAttribute("disk-image-size", "the disk image's size in MB (image transfers; 0 to a "
                   "petabyte)", maximum=1e9),
    ExtraAttribute("preemptible", "whether the lease may be preempted", kind="boolean"),
    ExtraAttribute("watts", "each VM's own dynamic power in W (energy/lease_power.py)",
                   maximum=1e9),
    ExtraAttribute(USER_RATE, "Haizea 1.1's user rate per CPU-hour: a price above the "
                   "lease's price at this rate is rejected by the user", maximum=1e12),
)


class ExtraAttributeError(ValueError):
    """An interpreted attribute with a value it does not take; names the attribute."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        self.detail = message
        super().__init__(f"extra attribute {name!r}: {message}")


def registry(declared: Iterable[ExtraAttribute] = ()) -> dict[str, ExtraAttribute]:
    """The core's attributes and ``declared`` ones by name; ValueError when one name is
    declared twice in different ways."""
    found: dict[str, ExtraAttribute] = {}
    for attribute in (*CORE_EXTRA_ATTRIBUTES, *declared):
        if not isinstance(attribute, ExtraAttribute):
            raise ValueError(f"an extra attribute declaration is a {type(attribute).__name__},"
                             " not an ExtraAttribute")
        known = found.setdefault(attribute.name, attribute)
        if known != attribute:
            raise ValueError(f"extra attribute {attribute.name!r} is declared twice, "
                             f"differently ({known.describe()}; {attribute.describe()})")
    return found


def check_extra(extra: Mapping[str, Any],
                attributes: Mapping[str, ExtraAttribute] | None = None) -> None:
    """Check every interpreted attribute of ``extra`` (the core's when ``attributes`` is None);
    :class:`ExtraAttributeError` for the first bad one. The values are kept as given (the
    readers convert them: ``float("5")`` and ``float(5)`` alike), so a valid input's outputs
    do not change."""
    known = attributes if attributes is not None else CORE_BY_NAME
    for name, value in extra.items():
        attribute = known.get(name)
        if attribute is not None:
            try:
                attribute.parse(value)
            except ValueError as exc:
                raise ExtraAttributeError(name, str(exc)) from None


CORE_BY_NAME = registry()
