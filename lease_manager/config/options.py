"""Declared options: :class:`Option` (one ini option, validated on conversion) and
:class:`Schema` (every option of a run: the core's and every plugin's), which documents
them (``lease-manager config-doc``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from lease_manager.config.option_types import DURATION, FLOAT, REQUIRED, OptionType


@attrs.frozen
class Option:
    """One ini option: where it lives, its type, its default and what it means."""

    section: str
    name: str
    type: OptionType
    default: Any = REQUIRED
    #: one paragraph; indentation and line breaks are collapsed
    doc: str = attrs.field(default="", converter=lambda text: " ".join(text.split()))
    choices: tuple[str, ...] | None = None
    #: inclusive lower bound for numbers
    minimum: float | None = None
    #: inclusive upper bound for numbers
    maximum: float | None = None
    #: whether ``inf``/``unlimited`` is a value of this number or duration (a run's length,
    #: say); elsewhere it is refused, however large the maximum
    unlimited: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def convert(self, text: str) -> Any:
        value = self.type.parse(text)
        if self.choices is not None and value not in self.choices:
            hint = _suggest(str(value), self.choices)
            raise ValueError(f"{text.strip()!r} is not one of {', '.join(self.choices)}{hint}")
        if (isinstance(value, float) and math.isinf(value) and not self.unlimited
                and self.type in (FLOAT, DURATION)):
            bound = f" (at most {self.maximum:g})" if self.maximum is not None else ""
            raise ValueError(f"{text.strip()!r}: this option must be finite{bound}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{text.strip()!r} is below the minimum {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{text.strip()!r} is above the maximum {self.maximum:g}")
        return value


def _suggest(word: str, candidates: Iterable[str]) -> str:
    import difflib  # (only for an error's hint: start-up)

    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Schema:
    """All options of a run: the core's plus every plugin's."""

    def __init__(self, options: Iterable[Option] = ()) -> None:
        self._options: dict[tuple[str, str], Option] = {}
        self.add(options)

    def add(self, options: Iterable[Option]) -> None:
        for opt in options:
            key = (opt.section, opt.name)
            if key in self._options and self._options[key] != opt:
                raise ValueError(f"option [{opt.section}] {opt.name} is declared twice")
            self._options[key] = opt

    def __iter__(self):
        return iter(self._options.values())

    @property
    def sections(self) -> list[str]:
        return list(dict.fromkeys(s for s, _ in self._options))

    def option(self, section: str, name: str) -> Option | None:
        return self._options.get((section, name))

    def options_in(self, section: str) -> list[Option]:
        return [o for (s, _), o in self._options.items() if s == section]

    def document(self) -> str:
        """The configuration reference, generated from the schema (Markdown)."""
        out = ["# lease_manager configuration reference", ""]
        for section in self.sections:
            out += [f"## [{section}]", ""]
            for opt in self.options_in(section):
                text = "" if opt.required or opt.default is None else opt.type.format(opt.default)
                default = ("*required*" if opt.required else f"`{text}`" if text else "*empty*")
                out.append(f"### `{opt.name}`")
                out.append("")
                out.append(f"- type: {opt.type.name}")
                if opt.choices:
                    out.append(f"- values: {', '.join(f'`{c}`' for c in opt.choices)}")
                out.append(f"- default: {default}")
                if opt.minimum is not None:
                    out.append(f"- minimum: {opt.minimum:g}")
                if opt.maximum is not None:
                    out.append(f"- maximum: {opt.maximum:g}")
                if opt.unlimited:
                    out.append("- `unlimited` (or `inf`) allowed")
                out.append("")
                out.append(opt.doc.strip())
                out.append("")
        return "\n".join(out).rstrip() + "\n"
