"""The installed distributions' entry points of one group, read as ``importlib.metadata``
reads them, without loading it where the search path is plain folders.

Loading ``importlib.metadata`` (its email, zip and csv modules) costs about a tenth of a
one-lease replay's start-up, for a scan that lists a few folders and reads a few small files.
This reader follows Python 3.11's ``entry_points(group=...)``: the folders of ``sys.path``
in order, each one's ``*.dist-info`` and ``*.egg-info`` entries (grouped by normalized name, in
the order the folder lists them), the first distribution of each normalized name only, every
``entry_points.txt`` parsed, and the group's entry points in that order. Where anything is
outside what it handles (a finder other than the path finder that provides distributions, a
path entry that is a zip archive or an egg, a name it cannot take from the folder's name, a file
it cannot read or parse, metadata headers it does not read the same way), it asks
``importlib.metadata``, so the answer (or the error) is always the standard library's.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from importlib import import_module
from typing import Any

#: ``importlib.metadata.EntryPoint.pattern``
_PATTERN = re.compile(r"(?P<module>[\w.]+)\s*"
                      r"(:\s*(?P<attr>[\w.]+)\s*)?"
                      r"((?P<extras>\[.*\])\s*)?$")
#: a header line as the email parser reads one (a name of printable characters but ':')
_HEADER = re.compile(r"([\041-\071\073-\176]+):(.*)")
_METADATA_FILES = ("METADATA", "PKG-INFO")
#: what ``PathDistribution.read_text`` treats as "no such file"
_ABSENT = (FileNotFoundError, IsADirectoryError, KeyError, NotADirectoryError,
           PermissionError)


class _Unsupported(Exception):
    """Something the reader leaves to ``importlib.metadata``."""


class Distribution:
    """The distribution that provides an entry point: its name and version on demand."""

    def __init__(self, path: str | None, standard: Any = None) -> None:
        self.path = path
        self._standard = standard   # importlib.metadata's Distribution, once needed

    def name_and_version(self) -> tuple[str, str]:
        """``metadata["Name"]`` and ``version``, as importlib.metadata gives them."""
        if self._standard is None and self.path is not None:
            try:
                return _name_and_version(self.path)
            except _Unsupported:
                from importlib import metadata

                self._standard = metadata.PathDistribution(_as_path(self.path))
        if not self._standard:   # (an entry point of no distribution)
            return "?", "?"
        return self._standard.metadata["Name"], self._standard.version


class EntryPoint:
    """One entry point: ``name = value`` in ``group``, from ``dist``."""

    def __init__(self, name: str, value: str, group: str, dist: Distribution) -> None:
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def load(self) -> Any:
        """The object named by ``value`` (``importlib.metadata.EntryPoint.load``)."""
        match = _PATTERN.match(self.value)
        module = import_module(match.group("module"))   # type: ignore[union-attr]
        attrs = filter(None, (match.group("attr") or "").split("."))   # type: ignore[union-attr]
        return functools.reduce(getattr, attrs, module)


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, in the order ``importlib.metadata.entry_points`` gives
    them."""
    try:
        return _scan(group, list(sys.path))
    except Exception:   # _Unsupported, or an error: the standard library's answer, or error
        from importlib import metadata

        return [EntryPoint(ep.name, ep.value, ep.group, Distribution(None, ep.dist))
                for ep in metadata.entry_points(group=group)]


def _scan(group: str, path: list[Any]) -> list[EntryPoint]:
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if (getattr(finder, "find_distributions", None) is not None
                and finder is not PathFinder):
            raise _Unsupported("a finder that provides its own distributions")
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for root in path:
        for info in _infos(root):
            name = _normalize(_name_from_stem(os.path.basename(info)))
            if name in seen:
                continue
            seen.add(name)
            text = _read(info, "entry_points.txt")
            dist = Distribution(info)
            for section, line in _pairs(text or ""):
                key, value = _pair(line)
                if section == group:
                    found.append(EntryPoint(key, value, section, dist))
    return found


def _infos(root: Any) -> list[str]:
    """A path entry's metadata entries, as ``FastPath``/``Lookup`` order them."""
    if not isinstance(root, str):
        raise _Unsupported("a path entry that is not text")
    if os.path.basename(root).lower().endswith(".egg"):
        raise _Unsupported("an egg")
    try:
        children = os.listdir(root or ".")
    except Exception:   # noqa: BLE001
        if os.path.isfile(root):
            raise _Unsupported("a zip archive") from None
        return []
    groups: dict[str, list[str]] = {}
    for child in children:
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            if os.path.splitext(child)[1] not in (".dist-info", ".egg-info"):
                raise _Unsupported("a metadata folder in capitals")
            key = _normalize(low.rpartition(".")[0].partition("-")[0])
            groups.setdefault(key, []).append(os.path.join(root, child))
    return [info for infos in groups.values() for info in infos]


def _name_from_stem(stem: str) -> str:
    name = os.path.splitext(stem)[0].partition("-")[0]
    if not name:
        raise _Unsupported("a distribution named only in its metadata")
    return name


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _read(info: str, filename: str) -> str | None:
    try:
        with open(os.path.join(info, filename), encoding="utf-8") as fh:
            return fh.read()
    except _ABSENT:
        return None


def _pairs(text: str) -> list[tuple[str, str]]:
    """``Sectioned.section_pairs``: (section, line) for each entry under a section."""
    out, section = [], None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is not None:
            out.append((section, line))
    return out


def _pair(line: str) -> tuple[str, str]:
    key, value = map(str.strip, line.split("=", 1))   # (no "=": the library's error)
    return key, value


def _name_and_version(info: str) -> tuple[str, str]:
    """The first ``Name`` and ``Version`` headers of a plain metadata file (its header block
    only: the description after it can be long)."""
    for filename in _METADATA_FILES:
        try:
            with open(os.path.join(info, filename), encoding="utf-8") as fh:
                lines = _header_block(fh)
        except _ABSENT:
            continue
        if lines is not None:   # (an empty file: the next one, as ``read_text() or``)
            return _name_version_headers(lines)
    raise _Unsupported("no metadata file")


def _header_block(fh: Any) -> list[str] | None:
    """The lines up to the first empty one (read with universal newlines, as the email parser
    splits them); None for an empty file."""
    lines: list[str] = []
    for line in fh:
        line = line[:-1] if line.endswith("\n") else line
        if not line:
            return lines
        lines.append(line)
    return lines or None


def _name_version_headers(lines: list[str]) -> tuple[str, str]:
    headers: dict[str, str] = {}
    last = None
    for line in lines:
        if line[0] in " \t":   # a folded header
            if last is None or last in ("name", "version"):
                raise _Unsupported("a folded name or version, or a fold first")
            continue
        match = _HEADER.fullmatch(line)
        if match is None:
            raise _Unsupported("a line that is not a header")
        last = match[1].lower()
        if last in ("name", "version") and last not in headers:
            headers[last] = match[2].lstrip(" \t")
        elif last in ("name", "version"):
            last = ""   # (a later repeat: only the first counts, folded or not)
    if "name" not in headers or "version" not in headers:
        raise _Unsupported("no name or version")
    return headers["name"], headers["version"]


def _as_path(info: str) -> Any:
    from pathlib import Path

    return Path(info)
