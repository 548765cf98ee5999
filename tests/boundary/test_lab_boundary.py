"""The library and its lab apart (issue 36, item 1). ``src/tnpx`` holds what a user imports and
has no experiment tooling: no ``experiments`` subpackage and no import of the lab. The lab
(``experiments/``, ``benchmarks/``) uses tnpx as an installed package: no ``sys.path`` edits, no
imports from ``tests/``, and only tnpx's public API (no module or name that starts with ``_``).
The lab and ``examples/`` import from tnpx only names in an ``__all__``: of ``tnpx``, of a
sub-package or of a top-level primitive module (issue 49, item 3; :mod:`tests.helpers.public_api`).
Sources are parsed, not imported; the last test runs every lab command's ``--help``."""

from __future__ import annotations

import ast
import runpy
import sys
from pathlib import Path

import pytest

from tests.helpers.public_api import api_problems

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "tnpx"
LAB = ("experiments", "benchmarks")
# What tests/ offers to import: the package itself (its helpers are ``tests.helpers.*``) and the
# top-level modules pytest puts on the path (``conftest``).
TEST_MODULES = {"tests"} | {path.stem for path in (ROOT / "tests").glob("*.py")} - {"__init__"}
# Lab modules run as `python -m NAME` by other lab code, not by a person: no --help.
WORKERS = {"benchmarks.bench"}
# Deep modules a lab module may import whole, and why: none may import their names.
DEEP_MODULES = {
    # times tnpx.gp.kernels' kernel_matrix against its old form by swapping it in the module
    "benchmarks.gp_sampling": frozenset({"tnpx.gp.kernels"}),
}


def module_name(path: Path, root: Path) -> str:
    """``tnpx.bo.loop`` for ``src/tnpx/bo/loop.py`` with ``root`` = ``src``; a package's
    ``__init__`` is the package itself."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(module: str | None, level: int, name: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in module
    ``name`` (a package's ``__init__`` resolves against the package itself)."""
    if level == 0:
        return module or ""
    package = name.split(".") if is_package else name.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imports(source: str, name: str, is_package: bool = False) -> list[tuple[int, list[str]]]:
    """Each import in ``source`` (module ``name``) as ``(line, dotted names)``: ``import a.b``
    gives ``a.b``; ``from a import b`` gives ``a`` and ``a.b``; relative imports are resolved;
    ``import_module("a")`` and ``__import__("a")`` with a literal name count too."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node.module, node.level, name, is_package)
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            target = node.args[0]
            if called in ("import_module", "__import__") and isinstance(target, ast.Constant):
                text = str(target.value)
                level = len(text) - len(text.lstrip("."))
                names = [resolve(text[level:] or None, level, name, is_package)]
        if names:
            found.append((node.lineno, names))
    return found


def sys_path_edits(source: str) -> list[int]:
    """Lines that touch ``sys.path`` (``sys.path.insert``, ``sys.path = ...``, ``from sys
    import path``): the lab is run with ``-m`` from the repository root and needs none."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "sys":
            lines += [node.lineno for alias in node.names if alias.name == "path"]
    return lines


def lab_problems(source: str, name: str, is_package: bool = False) -> list[str]:
    """What module ``name`` of the lab must not do, as ``line: what``."""
    problems = [f"{line}: edits sys.path" for line in sys_path_edits(source)]
    for line, names in imports(source, name, is_package):
        from_tests = [n for n in names if n.split(".")[0] in TEST_MODULES]
        private = [n for n in names if n.split(".")[0] == "tnpx" and "._" in n]
        if from_tests:
            problems.append(f"{line}: imports {from_tests[0]} from tests/")
        elif private:
            problems.append(f"{line}: imports {private[0]}, not tnpx's public API")
    return problems


def library_problems(source: str, name: str, is_package: bool = False) -> list[str]:
    """Imports of the lab in module ``name`` of the library, as ``line: imported name``."""
    lab = {*LAB, "tnpx.experiments"}
    return [
        f"{line}: imports {names[0]}"
        for line, names in imports(source, name, is_package)
        if any(n == top or n.startswith(top + ".") for n in names for top in lab)
    ]


def modules(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*.py") if "__pycache__" not in path.parts)


def lab_modules() -> list[Path]:
    return [path for folder in LAB for path in modules(ROOT / folder)]


def offenders(paths: list[Path], root: Path, check) -> dict[str, list[str]]:
    found = {}
    for path in paths:
        name = module_name(path, root)
        if hits := check(path.read_text(), name, is_package=path.name == "__init__.py"):
            found[path.relative_to(ROOT).as_posix()] = hits
    return found


def test_the_library_holds_no_experiment_tooling():
    library = modules(PACKAGE)
    # The listing found the package (a wrong root would make this test pass vacuously).
    assert len(library) > 50 and PACKAGE / "bo" / "__init__.py" in library
    assert not (PACKAGE / "experiments").exists(), "experiment tooling belongs in experiments/"
    found = offenders(library, PACKAGE.parent, library_problems)
    assert not found, f"library modules import the lab: {found}"


def test_the_lab_uses_tnpx_as_an_installed_package():
    lab = lab_modules()
    assert {
        ROOT / "experiments" / "paper_tables" / "build.py",
        ROOT / "benchmarks" / "bench.py",
    } <= set(lab)
    found = offenders(lab, ROOT, lab_problems)
    assert not found, f"the lab reaches past tnpx's public API: {found}"


@pytest.mark.parametrize(
    "source, problem",
    [
        ("import sys\nsys.path.insert(0, 'x')", "sys.path"),
        ("import sys\nsys.path = ['x']", "sys.path"),
        ("from sys import path\npath.append('x')", "sys.path"),
        ("from conftest import SMALL_SIZES", "tests/"),
        ("import tests.tiny", "tests/"),
        ("from tests.helpers.tiny import write_tiny", "tests/"),
        ("from tnpx.training.loop import _clip", "tnpx.training.loop._clip"),
        ("import tnpx._version", "tnpx._version"),
        ("from tnpx._version import __version__", "tnpx._version"),
        ("def f():\n    from tnpx.models._x import y\n", "tnpx.models._x"),
        ("import importlib\nimportlib.import_module('tnpx._version')", "tnpx._version"),
    ],
)
def test_the_lab_check_sees_every_form(source, problem):
    (found,) = lab_problems(source, "experiments.paper_tables.build")
    assert problem in found


def test_the_lab_check_allows_the_public_api_and_the_lab_itself():
    source = (
        "import tnpx\nfrom tnpx.models import options_taken\nfrom tnpx import gp\n"
        "from experiments.paper_tables.cells import Cell\nfrom . import specs\n"
        "from benchmarks.bench import measure\nimport os\nos.path.join('a', 'b')\n"
    )
    assert lab_problems(source, "experiments.paper_tables.report") == []


@pytest.mark.parametrize(
    "source, name",
    [
        ("import experiments.paper_tables.build", "tnpx.apply.sample"),
        ("from experiments.long_runs import driver", "tnpx.training.runs"),
        ("from benchmarks.bench import measure", "tnpx.cli"),
        ("def f():\n    import benchmarks.scaling\n", "tnpx.cli.tools"),
        ("import tnpx.experiments", "tnpx.apply.sample"),
        ("from . import experiments", "tnpx.plot"),
        ("from .. import experiments", "tnpx.models.base"),
        ("import importlib\nimportlib.import_module('experiments.bo.benchmark')", "tnpx.cli.bo"),
    ],
)
def test_the_library_check_sees_every_form(source, name):
    assert library_problems(source, name)


def test_the_library_check_ignores_look_alikes():
    assert not library_problems(
        "from .experimental import x\nimport tnpx.plot", "tnpx.apply.sample"
    )
    assert not library_problems("from ..bo import loop\nfrom . import models", "tnpx.data.gp")
    assert not library_problems("from .experiments import bench", "tnpx.bo.loop")  # tnpx.bo.*


def api_users() -> list[Path]:
    """The lab's modules and the examples: code that uses tnpx as a user would."""
    return lab_modules() + modules(ROOT / "examples")


def test_the_lab_and_examples_import_only_public_names():
    users = api_users()
    assert ROOT / "examples" / "runner.py" in users and ROOT / "benchmarks" / "bench.py" in users
    found = {}
    for path in users:
        allowed = DEEP_MODULES.get(module_name(path, ROOT), frozenset())
        if hits := api_problems(path.read_text(), allowed):
            found[path.relative_to(ROOT).as_posix()] = hits
    assert not found, f"the lab imports names outside an __all__: {found}"


@pytest.mark.parametrize(
    "source, problem",
    [
        ("from tnpx.training.loop import fit", "tnpx.training.loop is a module inside a package"),
        ("import tnpx.plot.grid", "tnpx.plot.grid is a module inside a package"),
        ("def f():\n    from tnpx.bo.loop import run_bo\n", "tnpx.bo.loop is a module inside"),
        ("from tnpx.training import claim_run_folder", "claim_run_folder is not in tnpx.training"),
        ("from tnpx.gp import average", "average is not in tnpx.gp.__all__"),
        ("from tnpx import gp_average", "gp_average is not in tnpx.__all__"),
        ("from tnpx.provenance import NOT_CODE", "NOT_CODE is not in tnpx.provenance.__all__"),
        ("from tnpx.nowhere import x", "tnpx.nowhere is no tnpx module"),
        ("import tnpx.gp.kernels as k", "tnpx.gp.kernels is a module inside a package"),
    ],
)
def test_the_api_check_sees_every_form(source, problem):
    (found,) = api_problems(source)
    assert problem in found


def test_the_api_check_needs_an_all(tmp_path):
    (tmp_path / "room").mkdir()
    (tmp_path / "room" / "__init__.py").write_text('"""A room."""\n')
    (tmp_path / "drawn.py").write_text('_HOMES = {"a": "m"}\n__all__ = sorted(_HOMES)\n')
    (found,) = api_problems("from tnpx.room import x", package=tmp_path)
    assert "tnpx.room defines no __all__" in found
    assert api_problems("from tnpx.drawn import a\nimport tnpx.drawn", package=tmp_path) == []
    assert "b is not in" in api_problems("from tnpx.drawn import b", package=tmp_path)[0]


def test_the_api_check_allows_public_names_and_named_deep_modules():
    source = (
        "import tnpx\nimport tnpx.training\nfrom tnpx import load, train\n"
        "from tnpx.training import fit\nfrom tnpx.bo import run_bo\n"
        "from tnpx.provenance import git_commit\nfrom tnpx.data.synthetic import GPConfig\n"
        "from . import specs\nfrom experiments.bo import run\nimport os\n"
    )
    assert api_problems(source) == []
    assert api_problems("import tnpx.gp.kernels", frozenset({"tnpx.gp.kernels"})) == []


def lab_commands() -> list[str]:
    """Every lab module a person runs: those with a ``__main__`` block, less the workers."""
    return [
        module_name(path, ROOT)
        for path in lab_modules()
        if 'if __name__ == "__main__":' in path.read_text()
        and module_name(path, ROOT) not in WORKERS
    ]


def test_every_lab_command_is_found():
    commands = lab_commands()
    assert {"experiments.paper_tables.build", "experiments.bo.run", "benchmarks.scaling"} <= set(
        commands
    )


@pytest.mark.parametrize("command", lab_commands())
def test_every_lab_command_runs_from_the_repository_root(command, monkeypatch, capsys):
    """``python -m NAME --help`` (run in this process: the imports are what can break)."""
    monkeypatch.setattr(sys, "argv", [command, "--help"])
    monkeypatch.delitem(sys.modules, command, raising=False)  # imported by a sibling: run afresh
    with pytest.raises(SystemExit) as done:
        runpy.run_module(command, run_name="__main__", alter_sys=True)
    assert done.value.code == 0
    assert "usage:" in capsys.readouterr().out
