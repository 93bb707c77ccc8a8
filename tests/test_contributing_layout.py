"""``CONTRIBUTING.md``'s layout table describes every package and top-level module of
``lease_manager/``, each in a row of its own, and names nothing that is not there (issue 42)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def layout_rows() -> list[str]:
    """The first cell of each row of the "Layout" section's table."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert section, "CONTRIBUTING.md has no '## Layout' section"
    return re.findall(r"^\| (`[^|]+`) \|", section.group(1), re.M)


def described() -> set[str]:
    return {cell.strip("`") for cell in layout_rows() if cell.startswith("`lease_manager/")
            and "," not in cell}


def parts() -> set[str]:
    """``lease_manager/``'s packages (``NAME/``, namespace packages such as ``energy/``
    too) and top-level modules (``NAME.py``)."""
    package = ROOT / "lease_manager"
    return ({f"lease_manager/{p.name}/" for p in package.iterdir()
             if p.is_dir() and any(p.rglob("*.py"))}
            | {f"lease_manager/{p.name}" for p in package.glob("*.py")})


def test_every_package_and_module_has_a_row():
    assert parts() - described() == set()


def test_every_row_names_something_that_exists():
    assert described() - parts() == set()


def test_a_row_names_one_part_of_lease_manager():
    assert not [cell for cell in layout_rows() if cell.startswith("`lease_manager/")
                and "," in cell]
