"""What a release is made of, checked without building it (``make wheel-smoke`` builds and
installs it): one version everywhere, and every module and data file of ``src/tnpx`` reachable
by the wheel's package discovery and package data."""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest
import yaml

import tnpx

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "tnpx"

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def package_files() -> list[str]:
    """The files of src/tnpx that git tracks (so local, ignored leftovers do not count), relative
    to it; every file there outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--", "."],
            cwd=PACKAGE, capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*") if p.is_file()]
    return out.splitlines()


def test_one_version_everywhere(pyproject):
    version = pyproject["project"]["version"]
    assert tnpx.__version__ == version
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(citation["version"]) == version
    # The changelog's newest released version (the first heading that is not "Unreleased").
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released = re.findall(r"^## \[?v?(\d+\.\d+\.\d+[^\]\s]*)", changelog, re.M)
    assert released and released[0] == version, f"CHANGELOG.md's newest version: {released[:1]}"


def test_the_license_ships(pyproject):
    project = pyproject["project"]
    assert project["license"] == "MIT"
    for name in project["license-files"]:
        assert (ROOT / name).is_file(), name
    assert "MIT License" in (ROOT / "LICENSE").read_text()


def test_citation_cites_the_package_and_its_papers():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["title"] and citation["authors"] and citation["message"]
    titles = [ref["title"] for ref in citation["references"]]
    assert len(titles) >= 3, titles


def test_every_module_folder_is_a_package():
    """setuptools' package discovery skips a folder without ``__init__.py``: its modules would
    be missing from the wheel while every test, run from the source tree, still passes."""
    missing = [
        str(folder.relative_to(PACKAGE.parent))
        for folder in [PACKAGE, *PACKAGE.rglob("*")]
        if folder.is_dir()
        and folder.name != "__pycache__"
        and any(folder.glob("*.py"))
        and not (folder / "__init__.py").exists()
    ]
    assert not missing, f"modules in folders without __init__.py (not in the wheel): {missing}"


def test_every_data_file_is_package_data(pyproject):
    """A file of src/tnpx that is not Python ships only if [tool.setuptools.package-data] names
    it: a new zoo model of another file type would otherwise be left out of the wheel."""
    patterns = pyproject["tool"]["setuptools"]["package-data"]["tnpx"]
    data = [
        name
        for name in package_files()
        if not name.endswith((".py", ".pyc")) and "__pycache__" not in name.split("/")
    ]
    assert data, "no package data found: the zoo should be there"
    left_out = [name for name in data if not any(fnmatch.fnmatch(name, p) for p in patterns)]
    assert not left_out, f"not in [tool.setuptools.package-data] (not in the wheel): {left_out}"
