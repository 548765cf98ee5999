"""Each data source keeps to its own room (issue 49, item 1): ``src/tnpx/data/`` holds one folder
per source family plus the shared protocol modules, and no module imports a private name
(leading ``_``) from another family or from the shared modules. Read with ``ast``; nothing is
imported."""

from __future__ import annotations

import ast
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "src" / "tnpx" / "data"
ROOMS = {"era5", "grid", "images", "kolmogorov", "stations", "synthetic", "table"}
SHARED = {"__init__.py", "base.py", "context_scaling.py", "custom.py", "field_arrays.py"}


def module_name(path: Path) -> str:
    """``src/tnpx/data/grid/files.py`` -> ``tnpx.data.grid.files`` (a package: its folder)."""
    parts = path.relative_to(DATA.parents[1]).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def family(module: str) -> str | None:
    """The room of a ``tnpx.data`` module (its first folder under ``data/``); None for the
    shared modules directly in ``data/`` and for modules outside ``tnpx.data``."""
    parts = module.split(".")
    if parts[:2] != ["tnpx", "data"] or len(parts) < 4 and parts[-1] not in ROOMS:
        return None
    return parts[2]


def imported_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ``from ... import`` names, relative ones resolved from ``module``."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private_imports_across_rooms(source: str, module: str, is_package: bool = False) -> list[str]:
    """Each private name ``source`` (the text of ``module``) imports from another room or from
    a shared module of ``data/``, as ``"module imports target._name"``."""
    own = family(module)
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        target = imported_from(node, module, is_package)
        if not target.startswith("tnpx.data"):
            continue
        if family(target) == own:
            continue  # the same room, or one shared module from another
        problems += [
            f"{module} imports {target}.{alias.name}"
            for alias in node.names
            if alias.name.startswith("_") and not alias.name.startswith("__")
        ]
    return problems


def test_no_module_imports_a_private_name_across_rooms():
    problems = []
    for path in sorted(DATA.rglob("*.py")):
        module = module_name(path)
        problems += private_imports_across_rooms(
            path.read_text(), module, path.name == "__init__.py"
        )
    assert not problems, "private names crossing a room (make them public in data/):\n" + (
        "\n".join(problems)
    )


def test_data_holds_only_rooms_and_shared_modules():
    present = {p.name for p in DATA.iterdir() if p.name != "__pycache__"}
    assert present == ROOMS | SHARED, (
        f"unexpected in data/: {sorted(present - ROOMS - SHARED)}; "
        f"missing: {sorted(ROOMS | SHARED - present)}"
    )
    assert all((DATA / room / "__init__.py").is_file() for room in ROOMS)


def test_the_check_finds_a_private_name_crossing_a_room():
    crossing = "from ..grid.windows import _scan, scan\nfrom ..base import _draw\n"
    assert private_imports_across_rooms(crossing, "tnpx.data.stations.grid") == [
        "tnpx.data.stations.grid imports tnpx.data.grid.windows._scan",
        "tnpx.data.stations.grid imports tnpx.data.base._draw",
    ]
    # a room's package __init__ resolves ``.`` to itself; shared modules reach into no room
    assert private_imports_across_rooms(
        "from ..era5.files import _EPS", "tnpx.data.grid", is_package=True
    ) == ["tnpx.data.grid imports tnpx.data.era5.files._EPS"]
    assert private_imports_across_rooms("from .grid import _x", "tnpx.data.base") == [
        "tnpx.data.base imports tnpx.data.grid._x"
    ]


def test_the_check_allows_private_names_inside_a_room():
    inside = "from .files import _check_choice\nfrom ...units import _x\n"
    assert not private_imports_across_rooms(inside, "tnpx.data.images.grid")
    assert not private_imports_across_rooms(
        "from .files import _EPS", "tnpx.data.era5", is_package=True
    )
    assert not private_imports_across_rooms("from .base import _y", "tnpx.data.custom")
