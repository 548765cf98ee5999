"""The library does not depend on its experiment tooling: no module of the core package imports
``tnpx.experiments`` (at module level or inside a function, absolutely or relatively). Only the
command-line entry modules may reach it. Sources are parsed, not imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tnpx"
TOOLING = "tnpx.experiments"
# The command-line entry modules: they reach the tooling through imports inside functions.
ENTRY_MODULES = {"cli.py", "cli_tools.py", "cli_predict.py", "cli_bo.py"}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``tnpx.bo.loop`` for ``src/tnpx/bo/loop.py``, ``tnpx.bo`` for its ``__init__.py``."""
    parts = ["tnpx", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(module: str | None, level: int, name: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in module
    ``name`` (a package's ``__init__`` resolves against the package itself)."""
    if level == 0:
        return module or ""
    package = name.split(".") if is_package else name.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, module] if module else base)


def is_tooling(name: str) -> bool:
    return name == TOOLING or name.startswith(TOOLING + ".")


def tooling_imports(source: str, name: str, is_package: bool = False) -> list[str]:
    """Every import of the tooling in ``source`` (the text of module ``name``), as
    ``line: imported name``."""
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
        found += [f"{node.lineno}: {n}" for n in names if is_tooling(n)]
    return found


def core_modules() -> list[Path]:
    """Every module of the package except the tooling and the entry modules."""
    return sorted(
        path
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] != "experiments"
        and path.relative_to(PACKAGE).as_posix() not in ENTRY_MODULES
    )


def test_the_core_never_imports_the_experiment_tooling():
    modules = core_modules()
    # The listing found the package (a wrong root would make this test pass vacuously).
    assert len(modules) > 50 and PACKAGE / "bo" / "__init__.py" in modules
    assert all((PACKAGE / entry).exists() for entry in ENTRY_MODULES), "entry module renamed?"
    offenders = {
        path.relative_to(PACKAGE).as_posix(): hits
        for path in modules
        if (
            hits := tooling_imports(
                path.read_text(), module_name(path), is_package=path.name == "__init__.py"
            )
        )
    }
    assert not offenders, f"core modules import {TOOLING}: {offenders}"


@pytest.mark.parametrize(
    "source, name",
    [
        ("import tnpx.experiments", "tnpx.sample"),
        ("import tnpx.experiments.bench as bench", "tnpx.sample"),
        ("from tnpx.experiments import bench", "tnpx.sample"),
        ("from tnpx import experiments", "tnpx.sample"),
        ("from .experiments.provenance import hardware", "tnpx.train"),
        ("from . import experiments", "tnpx.train"),
        ("def f():\n    from ..experiments import demo\n", "tnpx.bo.loop"),
        ("from .. import experiments", "tnpx.models.base"),
        ("import importlib\nimportlib.import_module('tnpx.experiments.bench')", "tnpx.plot"),
    ],
)
def test_the_check_sees_every_form_of_the_import(source, name):
    assert tooling_imports(source, name)


def test_the_check_resolves_packages_and_ignores_look_alikes():
    assert tooling_imports("from . import experiments", "tnpx", is_package=True)
    assert tooling_imports("from .experiments import bench", "tnpx", is_package=True)
    assert not tooling_imports("from .experiments import bench", "tnpx.bo", is_package=True)
    assert not tooling_imports("from .experimental import x\nimport tnpx.plot", "tnpx.sample")
    assert not tooling_imports("from ..bo import loop\nfrom . import models", "tnpx.data.gp")
