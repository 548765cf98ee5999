"""Tests mirror the package (issue 49, item 7): every sub-package of ``src/tnpx`` has its test
folder ``tests/<sub-package>/`` with at least one test file, the top-level primitive modules
have theirs (``tests/primitives/``), and no test imports ``conftest`` (shared helpers live in
``tests.helpers``). Sources are parsed, not imported; the checks also run on a made-up layout,
so that they can be seen to fail."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRIMITIVES = "primitives"  # the test folder of the top-level modules of src/tnpx


def sub_packages(package: Path) -> list[str]:
    """The names of ``package``'s sub-packages (folders with an ``__init__.py``)."""
    return sorted(p.parent.name for p in package.glob("*/__init__.py"))


def has_primitives(package: Path) -> bool:
    """Whether ``package`` has top-level modules of its own (beyond ``__init__`` and private
    ones such as ``_version``)."""
    return any(not p.name.startswith("_") for p in package.glob("*.py"))


def has_test_file(folder: Path) -> bool:
    return any(folder.rglob("test_*.py"))


def missing_homes(package: Path, tests: Path) -> list[str]:
    """The test folders ``tests`` lacks for ``package``, each as ``tests/<name>/``: one per
    sub-package, and ``tests/primitives/`` for the top-level modules."""
    homes = sub_packages(package) + ([PRIMITIVES] if has_primitives(package) else [])
    return [f"tests/{name}/" for name in homes if not has_test_file(tests / name)]


def imports_conftest(source: str) -> list[int]:
    """Lines of ``source`` that import ``conftest`` (``import conftest``, ``from conftest
    import x``, ``from tests.conftest import x``), anywhere in the module."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(name.split(".")[-1] == "conftest" for name in names):
            lines.append(node.lineno)
    return lines


def conftest_importers(tests: Path) -> dict[str, list[int]]:
    """Every file under ``tests`` that imports ``conftest``, with the lines."""
    found = {}
    for path in sorted(tests.rglob("*.py")):
        if lines := imports_conftest(path.read_text(encoding="utf-8")):
            found[path.relative_to(tests).as_posix()] = lines
    return found


def test_every_sub_package_and_the_primitives_have_a_test_home():
    package = ROOT / "src" / "tnpx"
    # The listing found the package (a wrong root would make this test pass vacuously).
    assert {"apply", "data", "models", "nn", "zoo"} <= set(sub_packages(package))
    assert has_primitives(package)
    assert missing_homes(package, ROOT / "tests") == []


def test_no_test_imports_conftest():
    assert conftest_importers(ROOT / "tests") == {}


def make_layout(root: Path, files: list[str] | dict[str, str]) -> None:
    """Write ``files`` under ``root``: names (empty files) or names with their sources."""
    for name, source in (files if isinstance(files, dict) else dict.fromkeys(files, "")).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


def test_the_home_check_fails_on_a_made_up_layout(tmp_path):
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    make_layout(
        package,
        ["__init__.py", "_version.py", "units.py", "bo/__init__.py", "gp/__init__.py"]
        + ["cli/__init__.py", "data/__init__.py", "data/table/__init__.py"],
    )
    # bo has its home; gp's folder holds only a helper; cli has none; data's test is one deeper.
    make_layout(tests, ["bo/test_loop.py", "gp/kernels_helper.py", "data/table/test_table.py"])
    assert missing_homes(package, tests) == ["tests/cli/", "tests/gp/", "tests/primitives/"]
    make_layout(tests, ["cli/test_cli.py", "gp/test_kernels.py", "primitives/test_units.py"])
    assert missing_homes(package, tests) == []
    (package / "units.py").unlink()  # only private top-level modules: no primitives to test
    assert missing_homes(package, tmp_path / "empty") == [
        "tests/bo/",
        "tests/cli/",
        "tests/data/",
        "tests/gp/",
    ]


def test_the_conftest_check_sees_every_form(tmp_path):
    make_layout(
        tmp_path,
        {
            "a/test_a.py": "from conftest import small_model\n",
            "b/test_b.py": "import os\nimport conftest\n",
            "c/test_c.py": "def f():\n    from tests.conftest import make_task\n",
            "d/test_d.py": "from tests.helpers.small_models import small_model\nimport confte\n",
        },
    )
    assert conftest_importers(tmp_path) == {
        "a/test_a.py": [1],
        "b/test_b.py": [2],
        "c/test_c.py": [2],
    }
