"""The files a configuration is read from: ini files (with the line of every section and
option, for messages) and the CSV file of sites (``[simulation] sites-file``)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from lease_manager.config.options import Schema
from lease_manager.config.values import SITE_PREFIX, site_option
from lease_manager.errors import ConfigError
from lease_manager.input_files import csv_rows, input_problem, long_line, long_line_message


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


def _file_text(path: Path, what: str, cannot_read: str) -> str:
    """The text of input file ``path`` (``what`` names its kind in messages), or a
    :class:`ConfigError` naming the file: not a regular readable file, not found, or not
    readable (``cannot_read``, then the reason)."""
    problem = input_problem(path)
    if problem:
        raise ConfigError(f"the {what} {problem}", file=str(path))
    try:
        return path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{what} not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{cannot_read}: {exc}", file=str(path)) from None


def read_ini(path: Path, what: str) -> tuple[configparser.ConfigParser,
                                             dict[tuple[str, str], int]]:
    """Parse an ini file; return the parser and the line of every ``[section]`` and option.

    Syntax errors are :class:`ConfigError` naming the file and line (``what`` names the kind
    of file in messages: "configuration file", "sweep file")."""
    text = _file_text(path, what, f"cannot read {what}")
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


def read_sites_file(path: Path, schema: Schema) -> dict[tuple[str, str], tuple[str, str]]:
    """A CSV file of sites (``[simulation] sites-file``): a header ``name,OPTION,...`` naming
    options a ``[site:NAME]`` section may set, then one row per site. Returns the raw
    ``(section, option) -> (text, "FILE:LINE")`` entries (empty cells set nothing)."""
    text = _file_text(path, "sites file", "cannot read the sites file")
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
