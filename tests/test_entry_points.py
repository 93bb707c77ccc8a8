"""The plugins' entry points are found as ``importlib.metadata`` finds them, without loading it.

Each check runs in a fresh process whose ``sys.path`` is made of folders written here (and the
standard library's), and
compares :func:`lease_manager.entry_points.entry_points` (names, values, order, the
distribution's name and version) with ``importlib.metadata.entry_points`` over the same path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PROGRAM = """
import json, sys
from lease_manager import entry_points as ours
# the folders, then the standard library's (which holds no distribution)
sys.path[:] = sys.argv[1:] + [p for p in sys.path if p and "-packages" not in p]
def read(find):
    try:
        return [[ep.name, ep.value, list(find(ep))] for ep in eps()]
    except Exception as exc:
        return type(exc).__name__
def eps():
    return ours.entry_points("lease_manager")
mine = read(lambda ep: ep.dist.name_and_version())
loaded = "importlib.metadata" in sys.modules
from importlib import metadata
def eps():
    return metadata.entry_points(group="lease_manager")
theirs = read(lambda ep: (ep.dist.metadata["Name"], ep.dist.version))
print(json.dumps({"ours": mine, "theirs": theirs, "loaded": loaded}))
"""


def dist(root: Path, folder: str, entry_points: str | None, metadata: str | None = None,
         metadata_file: str = "METADATA") -> None:
    info = root / folder
    info.mkdir(parents=True)
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)
    name, _, version = folder.rpartition(".")[0].partition("-")
    (info / metadata_file).write_text(metadata if metadata is not None else
                                      f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                      f"\nlong description: Name: not this one\n")


def compare(*roots: Path | str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROGRAM, *map(str, roots)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)


def test_the_installed_plugins_are_found_as_importlib_metadata_finds_them() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import json, sys\n"
         "from lease_manager import entry_points as ours\n"
         "mine = [[e.name, e.value, list(e.dist.name_and_version())] "
         "for e in ours.entry_points('lease_manager')]\n"
         "loaded = 'importlib.metadata' in sys.modules\n"
         "from importlib import metadata\n"
         "theirs = [[e.name, e.value, [e.dist.metadata['Name'], e.dist.version]] "
         "for e in metadata.entry_points(group='lease_manager')]\n"
         "print(json.dumps([mine, theirs, loaded]))"],
        capture_output=True, text=True, timeout=60, check=True).stdout
    mine, theirs, loaded = json.loads(out)
    assert mine == theirs
    assert not loaded   # a plain environment is read without importlib.metadata


def test_order_shadowing_and_sections_follow_importlib_metadata(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    dist(first, "zeta_pkg-1.0.dist-info", "[lease_manager]\nz = zeta.plugin\n")
    dist(first, "Alpha.Pkg-2.0.dist-info",
         "# a comment\n[console_scripts]\nalpha = alpha:main\n\n[lease_manager]\n"
         "  alpha = alpha.plugin:Plugin [extra]  \n; not a comment in this format = x\n")
    dist(first, "no_points-1.0.dist-info", None)
    dist(first, "old-0.5.egg-info", "[lease_manager]\nold = old_plugin\n",
         metadata_file="PKG-INFO")
    (first / "flat-1.0.egg-info").write_text("Metadata-Version: 1.0\nName: flat\nVersion: 1.0\n")
    # the same distribution again later on the path, and another version of it: shadowed
    dist(second, "alpha_pkg-3.0.dist-info", "[lease_manager]\nshadowed = nope\n")
    dist(second, "beta-1.0.dist-info", "[lease_manager]\nalpha = beta.plugin\n",
         "Metadata-Version: 2.1\nLicense: BSD\n        folded licence text\nname: Beta\n"
         "VERSION:   1.0 \nName: second\n")
    result = compare(first, tmp_path / "missing", second)
    assert result["ours"] == result["theirs"]
    # (the folders list their entries in the file system's order, which both follow)
    assert sorted((name, value) for name, value, _ in result["ours"]) == [
        ("; not a comment in this format", "x"), ("alpha", "alpha.plugin:Plugin [extra]"),
        ("alpha", "beta.plugin"), ("old", "old_plugin"), ("z", "zeta.plugin")]
    assert ["alpha", "beta.plugin", ["Beta", "1.0 "]] in result["ours"]
    assert not result["loaded"]


@pytest.mark.parametrize("case", ["capitals", "zip", "folded-name", "no-equals"])
def test_what_the_reader_does_not_handle_is_left_to_importlib_metadata(
        tmp_path: Path, case: str) -> None:
    root = tmp_path / "site"
    dist(root, "plain-1.0.dist-info", "[lease_manager]\nplain = plain.plugin\n")
    extra: list[Path] = []
    if case == "capitals":
        dist(root, "upper-1.0.DIST-INFO", "[lease_manager]\nupper = upper.plugin\n")
    elif case == "zip":
        archive = tmp_path / "bundle.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("zipped-1.0.dist-info/entry_points.txt",
                        "[lease_manager]\nzipped = zipped.plugin\n")
            zf.writestr("zipped-1.0.dist-info/METADATA", "Name: zipped\nVersion: 1.0\n")
        extra.append(archive)
    elif case == "folded-name":
        dist(root, "folded-1.0.dist-info", "[lease_manager]\nfolded = folded.plugin\n",
             "Metadata-Version: 2.1\nName: folded\n  more\nVersion: 1.0\n")
    else:
        dist(root, "broken-1.0.dist-info", "[lease_manager]\nbroken\n")
    result = compare(root, *extra)
    assert result["ours"] == result["theirs"]
    if case == "no-equals":
        assert result["ours"] == "TypeError"
    else:
        assert len(result["ours"]) == 2


def test_every_installed_distributions_name_and_version_read_as_the_email_parser_does() -> None:
    """The header reader on every distribution of this environment (each one it reads, and
    not fewer than the plugins'): the same name and version as importlib.metadata's."""
    from importlib import metadata

    from lease_manager import entry_points

    read = 0
    for dist in metadata.distributions():
        path = str(dist._path)   # type: ignore[attr-defined]
        try:
            mine = entry_points._name_and_version(path)
        except entry_points._Unsupported:
            continue
        read += 1
        assert mine == (dist.metadata["Name"], dist.version), path
    assert read >= 5
