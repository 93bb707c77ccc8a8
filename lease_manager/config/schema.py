"""Configuration: a declarative schema of ini options, validated on load.

Every option is declared once as an :class:`Option` (section, name, type, default, allowed
values, doc). The schema validates files and ``--set section.option=value`` overrides, reports
unknown sections and options with a suggestion, and generates the reference
(``lease-manager config-doc``).
"""

from __future__ import annotations

import configparser
import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from lease_manager.errors import ConfigError, all_errors
from lease_manager.input_files import csv_rows, input_problem, long_line, long_line_message
from lease_manager.kernel.resources import MAX_NODES, parse_amounts, parse_site, site_node_count
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


#: ``[site:NAME]`` sections describe the sites of a run with several: each may set these
#: options of other sections (by option name), which then hold for that site only
SITE_PREFIX = "site:"
SITE_SECTIONS = ("power",)
SITE_OPTIONS = {"resources": "simulation", "backfilling": "scheduling",
                "backfilling-reservations": "scheduling"}


def site_option(schema: Schema, name: str) -> Option | None:
    """The option ``name`` stands for in a ``[site:NAME]`` section (None: not a site option)."""
    section = SITE_OPTIONS.get(name)
    if section is not None:
        return schema.option(section, name)
    for section in SITE_SECTIONS:
        opt = schema.option(section, name)
        if opt is not None:
            return opt
    return None


class Config:
    """Validated option values, read as ``config.get("scheduling", "backfilling")``."""

    def __init__(self, schema: Schema, values: Mapping[tuple[str, str], Any],
                 sources: Mapping[tuple[str, str], str], path: Path | None,
                 sites: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.schema = schema
        self._values = dict(values)
        self._sources = dict(sources)
        self.path = path
        #: the ``[site:NAME]`` sections, in order: their options by name
        self._sites = {name: dict(options) for name, options in (sites or {}).items()}
        #: the site this configuration is for (:meth:`for_site`; None: the run's own)
        self.site_name: str | None = None
        #: whether it was read from a Haizea configuration file (a ``[general]`` section)
        self.haizea = False

    @property
    def sites(self) -> list[str]:
        """The names of the run's sites (empty: one site, described by the usual sections)."""
        return list(self._sites)

    def for_site(self, name: str) -> Config:
        """The configuration as site ``name`` sees it: its ``[site:NAME]`` options in place of
        the sections' (the rest shared)."""
        values = dict(self._values)
        sources = dict(self._sources)
        for option, value in self._sites[name].items():
            opt = site_option(self.schema, option)
            assert opt is not None
            values[(opt.section, opt.name)] = value
            sources[(opt.section, opt.name)] = self._sources.get(
                (SITE_PREFIX + name, option), "default")
        site = Config(self.schema, values, sources, self.path)
        site.site_name = name
        site.haizea = self.haizea
        return site

    def get(self, section: str, name: str) -> Any:
        try:
            return self._values[(section, name)]
        except KeyError:
            raise KeyError(f"option [{section}] {name} is not in the schema") from None

    __getitem__ = lambda self, key: self.get(*key)  # noqa: E731

    def source(self, section: str, name: str) -> str:
        """Where a value came from: ``file:line``, ``--set`` or ``default``."""
        return self._sources.get((section, name), "default")

    def error(self, section: str, name: str, message: str) -> ConfigError:
        """A :class:`ConfigError` about an option's value, naming where it was set."""
        field = f"[{section}] {name}"
        src = self.source(section, name)
        if src == "default":   # not set anywhere: name the configuration file, if any
            return ConfigError(message, file=str(self.path) if self.path else None, field=field)
        file, _, line = src.rpartition(":")
        if file and line.isdigit():
            return ConfigError(message, file=file, line=int(line), field=field)
        return ConfigError(message, file=src, field=field)

    def items(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for (section, name), value in self._values.items():
            out.setdefault(section, {})[name] = value
        return out


def _locate(text: str) -> dict[tuple[str, str], int]:
    """Line numbers of ``[section]`` headers and ``option = value`` lines."""
    lines: dict[tuple[str, str], int] = {}
    section = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        m = re.match(r"\[([^\]]+)\]", stripped)
        if m:
            section = m.group(1).strip()
            lines.setdefault((section, ""), number)
            continue
        if section is not None and not line[:1].isspace():
            m = re.match(r"([^=:]+?)\s*[=:]", stripped)
            if m:
                lines.setdefault((section, m.group(1).strip().lower()), number)
    return lines


def read_ini(path: Path, what: str) -> tuple[configparser.ConfigParser,
                                             dict[tuple[str, str], int]]:
    """Parse an ini file; return the parser and the line of every ``[section]`` and option.

    Syntax errors are :class:`ConfigError` naming the file and line (``what`` names the kind
    of file in messages: "configuration file", "sweep file")."""
    problem = input_problem(path)
    if problem:
        raise ConfigError(f"the {what} {problem}", file=str(path))
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{what} not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what}: {exc}", file=str(path)) from None
    too_long = long_line(text.splitlines())
    if too_long:
        raise ConfigError(long_line_message(), file=str(path), line=too_long)
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#",),
                                       strict=True)
    try:
        parser.read_string(text, source=str(path))
    except configparser.DuplicateOptionError as exc:
        raise ConfigError(f"option {exc.option!r} is given twice in [{exc.section}]",
                          file=str(path), line=exc.lineno) from None
    except configparser.DuplicateSectionError as exc:
        raise ConfigError(f"section [{exc.section}] is given twice",
                          file=str(path), line=exc.lineno) from None
    except configparser.MissingSectionHeaderError as exc:
        raise ConfigError("expected a [section] header first", file=str(path),
                          line=exc.lineno) from None
    except configparser.ParsingError as exc:
        line = exc.errors[0][0] if exc.errors else None
        raise ConfigError("cannot parse this line (expected 'option = value')",
                          file=str(path), line=line) from None
    return parser, _locate(text)


# Longer than ~50 lines on purpose: reads the file, then the overrides, then converts and
# completes: one pass a reader follows top to bottom.
def _refuse_too_many_nodes(sites: dict[str, dict[str, Any]], sources: dict[tuple[str, str], str]
                           ) -> None:
    """Refuse sites whose nodes add up to more than a site may have: a 1.5 KB sites file of
    50 sites of a million nodes each ran out of memory (3 GB, then numpy's traceback)."""
    total = 0
    for site, options in sites.items():
        total += site_node_count(str(options.get("resources", "")))
        if total > MAX_NODES:
            source = sources.get((SITE_PREFIX + site, "resources"), "")
            file, _, line = source.rpartition(":")
            where: dict[str, Any] = (dict(file=file, line=int(line)) if line.isdigit()
                                     else dict(file=source or None))
            raise ConfigError(f"the sites have more than {MAX_NODES:,} nodes in all (up to "
                              f"this one: {total:,})", field=f"[{SITE_PREFIX}{site}] resources",
                              **where)


def read_sites_file(path: Path, schema: Schema) -> dict[tuple[str, str], tuple[str, str]]:
    """A CSV file of sites (``[simulation] sites-file``): a header ``name,OPTION,...`` naming
    options a ``[site:NAME]`` section may set, then one row per site. Returns the raw
    ``(section, option) -> (text, "FILE:LINE")`` entries (empty cells set nothing)."""

    problem = input_problem(path)
    if problem:
        raise ConfigError(f"the sites file {problem}", file=str(path))
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError("sites file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the sites file: {exc}", file=str(path)) from None
    rows = list(csv_rows(text.splitlines(),
                         lambda message, line: ConfigError(message, file=str(path), line=line)))
    if not rows or not rows[0] or rows[0][0].strip().lower() != "name":
        raise ConfigError("the first line must be a header starting with 'name'",
                          file=str(path), line=1)
    header = [h.strip().lower() for h in rows[0]]
    for column in header[1:]:
        if site_option(schema, column) is None:
            raise ConfigError(f"column {column!r} is not an option a site may set",
                              file=str(path), line=1, field=column)
    if len(set(header)) != len(header):
        raise ConfigError("a column is named twice", file=str(path), line=1)
    out: dict[tuple[str, str], tuple[str, str]] = {}
    seen: set[str] = set()
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue
        if len(row) != len(header):
            raise ConfigError(f"{len(row)} fields where the header has {len(header)}",
                              file=str(path), line=line)
        name = row[0].strip()
        if not name or name in seen:
            raise ConfigError("a site needs a name of its own" if not name
                              else f"site {name!r} is named twice",
                              file=str(path), line=line, field="name")
        seen.add(name)
        for column, cell in zip(header[1:], row[1:]):
            if cell.strip():
                out[(SITE_PREFIX + name, column)] = (cell.strip(), f"{path}:{line}")
    if not seen:
        raise ConfigError("the sites file names no site", file=str(path))
    return out


def _haizea_settings(path: Path, parser: configparser.ConfigParser,
                     where: dict[tuple[str, str], int], schema: Schema
                     ) -> dict[tuple[str, str], tuple[str, str]]:
    """A Haizea configuration file's settings in lease_manager's options; every error of the
    file at once (:class:`~lease_manager.config.haizea.ConfigErrors`)."""
    from lease_manager.config.haizea import translate

    raw, errors = translate(path, parser, where, schema.sections)
    for (section, name), (text, source) in raw.items():
        opt = schema.option(section, name)
        file, _, line = source.rpartition(":")
        if opt is None:
            errors.append(ConfigError("unknown option", file=file, line=int(line),
                                      field=f"[{section}] {name}"))
            continue
        try:
            opt.convert(text)
        except ValueError as exc:
            errors.append(ConfigError(str(exc), file=file, line=int(line),
                                      field=f"[{section}] {name}"))
    if errors:
        raise all_errors(errors)
    return raw


def load_config(path: str | Path | None, schema: Schema,
                overrides: Iterable[str] = ()) -> Config:
    """Read, validate and complete a configuration file; apply ``section.option=value``
    overrides."""
    raw: dict[tuple[str, str], tuple[str, str]] = {}
    site_sections: dict[str, int | None] = {}
    #: every error of the file, reported together
    errors: list[ConfigError] = []
    base = Path.cwd()
    cfg_path = None
    haizea = False
    if path is not None:
        cfg_path = Path(path)
        base = cfg_path.resolve().parent
        parser, where = read_ini(cfg_path, "configuration file")
        if "general" not in schema.sections and parser.has_section("general"):
            raw = _haizea_settings(cfg_path, parser, where, schema)   # a Haizea file
            haizea = True
            parser = configparser.ConfigParser()
        for section in parser.sections():
            sec_line = where.get((section, ""))
            if section.startswith(SITE_PREFIX):
                if not section[len(SITE_PREFIX):].strip():
                    errors.append(ConfigError("a site section needs a name: [site:NAME]",
                                              file=str(path), line=sec_line))
                    continue
                site_sections.setdefault(section, sec_line)
            elif section == "multi" or section.startswith("common:"):
                raise ConfigError("a Haizea multi-configuration file ([multi]) or a sweep "
                                  "file is run with `lease-manager sweep`", file=str(path),
                                  line=sec_line, field=f"[{section}]")
            elif section not in schema.sections:
                hint = _suggest(section, schema.sections)
                errors.append(ConfigError(f"unknown section [{section}]{hint}", file=str(path),
                                          line=sec_line))
                continue
            for name, value in parser.items(section):
                line = where.get((section, name), sec_line)
                raw[(section, name)] = (value, f"{path}:{line}")
    override_sites: list[str] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        section, dot, name = key.strip().rpartition(".")
        if not sep or not dot or not section or not name:
            raise ConfigError(f"{item!r} is not section.option=value", file="--set")
        name = name.strip().lower()
        if haizea and schema.option(section, name) is None:
            from lease_manager.config.haizea import translate_override

            translated = translate_override(section, name, value)    # Haizea's own name
            if translated is not None:
                for our_section, our_name, text in translated:
                    raw[(our_section, our_name)] = (text, "--set")
                continue
        if section.startswith(SITE_PREFIX):
            override_sites.append(section)
        elif section not in schema.sections:
            raise ConfigError(f"unknown section [{section}]{_suggest(section, schema.sections)}",
                              file="--set")
        raw[(section, name)] = (value, "--set")
    #: where a value's relative file names are resolved from, when not from ``base``
    bases: dict[tuple[str, str], Path] = {}
    if raw.get(("simulation", "sites-file"), ("", ""))[0].strip():   # "": no sites file
        text, source = raw[("simulation", "sites-file")]
        csv_path = (Path.cwd() if source == "--set" else base) / text.strip()
        problem = path_problem(str(csv_path))
        if problem:
            file, _, line_text = source.rpartition(":")
            raise ConfigError(problem, field="[simulation] sites-file",
                              **(dict(file=file, line=int(line_text)) if line_text.isdigit()
                                 else dict(file=source)))
        for (section, name), entry in read_sites_file(csv_path, schema).items():
            site_sections.setdefault(section, None)
            if (section, name) not in raw:   # the ini file and --set win over the table
                raw[(section, name)] = entry
                bases[(section, name)] = csv_path.resolve().parent
    for section in override_sites:
        site_sections.setdefault(section, None)

    values: dict[tuple[str, str], Any] = {}
    sources: dict[tuple[str, str], str] = {}
    sites: dict[str, dict[str, Any]] = {s[len(SITE_PREFIX):].strip(): {} for s in site_sections}
    for (section, name), (text, source) in raw.items():
        is_site = section.startswith(SITE_PREFIX)
        opt = site_option(schema, name) if is_site else schema.option(section, name)
        file, _, line_text = source.rpartition(":")
        loc: dict[str, Any] = (dict(file=file, line=int(line_text)) if line_text.isdigit()
                               else dict(file=source))
        if opt is None and is_site:
            names = list(SITE_OPTIONS) + [o.name for s in SITE_SECTIONS
                                          for o in schema.options_in(s)]
            errors.append(ConfigError(f"not an option a site may set{_suggest(name, names)} (a "
                                      f"site sets: resources, backfilling, "
                                      f"backfilling-reservations and the [power] options)",
                                      field=f"[{section}] {name}", **loc))
            continue
        if opt is None:
            names = [o.name for o in schema.options_in(section)]
            errors.append(ConfigError(f"unknown option{_suggest(name, names)}",
                                      field=f"[{section}] {name}", **loc))
            continue
        try:
            value = opt.convert(text)
        except ValueError as exc:
            errors.append(ConfigError(str(exc), field=f"[{section}] {name}", **loc))
            continue
        if opt.type.is_path(value):
            origin = bases.get((section, name), base if source != "--set" else Path.cwd())
            value = str(origin / value)
            problem = path_problem(value)
            if problem:
                errors.append(ConfigError(problem, field=f"[{section}] {name}", **loc))
                continue
        if is_site:
            sites[section[len(SITE_PREFIX):].strip()][name] = value
        else:
            values[(section, name)] = value
        sources[(section, name)] = source
    if errors:
        raise all_errors(errors)
    for opt in schema:
        option_key = (opt.section, opt.name)
        if option_key in values:
            continue
        first_site = next(iter(sites.values()), {})
        if opt.required and option_key[1] in first_site and \
                site_option(schema, option_key[1]) is opt:
            values[option_key] = first_site[option_key[1]]   # several sites: the first one's
            continue
        if opt.required:
            raise ConfigError(f"required option is missing (add it to [{opt.section}])",
                              file=str(path) if path else "--set",
                              field=f"[{opt.section}] {opt.name}")
        values[option_key] = opt.default
    for site, options in sites.items():
        if "resources" not in options:
            raise ConfigError("every site needs its nodes (add resources = ...)",
                              file=str(path) if path else "--set",
                              line=site_sections.get(SITE_PREFIX + site),
                              field=f"[{SITE_PREFIX}{site}] resources")
    _refuse_too_many_nodes(sites, sources)
    config = Config(schema, values, sources, cfg_path, sites)
    config.haizea = haizea
    return config
