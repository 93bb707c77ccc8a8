"""The documentation site (``mkdocs.yml``, ``docs/``): it builds in strict mode (a broken link,
a page missing from the navigation or a missing page fails), its generated reference pages equal
what the code writes, and the README's map names pages that exist."""

from __future__ import annotations

import re
import subprocess
import sys

from support import ROOT


def test_the_site_builds_in_strict_mode(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "site" / "reference" / "configuration.html").is_file()


def test_the_configuration_reference_is_what_config_doc_writes():
    done = subprocess.run([sys.executable, "-m", "lease_manager.cli", "config-doc"],
                          capture_output=True, text=True, timeout=60, check=True)
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text()
    assert page == done.stdout, ("docs/reference/configuration.md is stale: "
                                 "lease-manager config-doc > docs/reference/configuration.md")


def test_the_readmes_map_names_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)\)", readme)
    assert len(links) >= 10
    for link in links:
        assert (ROOT / link).is_file(), link


def test_the_readme_lists_exactly_the_features_that_keep_a_run_when_planned():
    """Issue 38: ``config-doc`` and the README list exactly the set ``auto`` keeps pinned."""
    from lease_manager.placement import NEEDS_WHEN_PLANNED

    readme = (ROOT / "README.md").read_text()
    found = re.search(r"if it has one of\s+these features \([^)]*\):\s+(.*?)\.\s+`summary",
                      readme, re.S)
    assert found, "README.md: the Placement paragraph's list of features is missing"
    listed = [" ".join(name.split()) for name in found.group(1).split(",")]
    assert listed == list(NEEDS_WHEN_PLANNED)
