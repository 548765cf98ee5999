"""The package's layers (issue 49, item 2; docs/design-notes.md, "Rooms at the top level").

The top of ``src/tnpx/`` holds primitives, modules that import no sub-package of tnpx (only
one another), and the sub-packages ("rooms"). Arrows between rooms run one way: each room has a
rank in :data:`RANKS` and imports only rooms of a lower rank. Imports under ``if
TYPE_CHECKING:`` are not arrows (they run for the type checker only). Sources are parsed, not
imported; the made-up sources at the end show that each rule can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tnpx"
# The package's own files at the top that are no primitive: the public API and the version.
NOT_PRIMITIVE = {"__init__", "_version"}
# Primitives that grew into a package (one module per likelihood family): like a top-level
# module, they import no room, and every room may import them.
PRIMITIVE_PACKAGES = {"likelihoods"}
# Rooms bottom to top; a room imports only rooms of a lower rank (and primitives).
RANKS = {
    "nn": 0,  # layers: attention, set encoders, CNNs
    "gp": 0,  # kernels, prior draws, the Bayes average, the fitted GPs' GPyTorch half
    "data": 1,  # task sources (the GP priors use gp/)
    "models": 1,  # model families (on nn/ and gp/)
    "config": 2,  # experiment configs (name data sources and models)
    "checkpoint": 3,  # a model and its experiment as a file
    "zoo": 4,  # shipped checkpoints
    "apply": 5,  # predict, sample, stream, compiled inference
    "training": 5,  # fit (may start from the zoo)
    "evaluation": 6,  # protocol test sets, a user's held-out tasks (uses predict's units)
    "bo": 6,  # Bayesian optimisation on predict
    "plot": 6,  # figures (samples through apply)
    "demo": 7,  # `tnpx demo`
    "cli": 8,  # the command line
}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imported_rooms(source: str, module: tuple[str, ...], packages: set[str]) -> set[str]:
    """The tnpx sub-packages that ``source`` imports at run time; ``module`` is its dotted path
    as parts (``("tnpx", "plot", "grid")``; a package's ``__init__`` is the package itself plus
    ``"__init__"``)."""
    package = module[:-1]
    rooms = set()
    for node in _runtime_nodes(ast.parse(source)):
        names: list[list[str]] = []
        if isinstance(node, ast.Import):
            names = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            if node.module:
                names = [base + node.module.split(".")]
            else:
                names = [base + [alias.name] for alias in node.names]
        for name in names:
            if len(name) > 1 and name[0] == "tnpx" and name[1] in packages:
                rooms.add(name[1])
    return rooms - PRIMITIVE_PACKAGES


def layer_problems(sources: dict[str, str], packages: set[str]) -> list[str]:
    """The broken rules among ``sources`` (path under ``src/tnpx`` -> source), as messages."""
    problems = []
    for path, source in sorted(sources.items()):
        parts = Path(path).with_suffix("").parts
        rooms = imported_rooms(source, ("tnpx", *parts), packages)
        if len(parts) == 1:  # a module at the top
            if parts[0] not in NOT_PRIMITIVE and rooms:
                problems.append(f"{path}: a top-level module imports {sorted(rooms)}")
            continue
        if parts[0] in PRIMITIVE_PACKAGES:
            if rooms:
                problems.append(f"{path}: a primitive package imports {sorted(rooms)}")
            continue
        room = parts[0]
        if room not in RANKS:
            problems.append(f"{path}: room {room!r} has no rank in tests/boundary/test_layers.py")
            continue
        for other in sorted(rooms - {room}):
            if RANKS.get(other, len(RANKS)) >= RANKS[room]:
                problems.append(f"{path}: {room} (rank {RANKS[room]}) imports {other}")
    return problems


def test_primitives_at_the_top_and_arrows_one_way():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    sources = {
        str(path.relative_to(PACKAGE)): path.read_text(encoding="utf-8")
        for path in PACKAGE.rglob("*.py")
    }
    assert "batch.py" in sources and "plot/grid.py" in sources  # the tree was read
    assert packages <= set(RANKS) | PRIMITIVE_PACKAGES, sorted(packages - set(RANKS))
    assert layer_problems(sources, packages) == []


@pytest.mark.parametrize(
    ("path", "source", "problem"),
    [
        ("units.py", "from .models import build_model\n", "a top-level module imports"),
        ("units.py", "def f():\n    import tnpx.plot.grid\n", "a top-level module imports"),
        ("nn/mlp.py", "from ..models.base import NeuralProcess\n", "nn (rank 0) imports models"),
        ("data/gp.py", "from .. import apply\n", "data (rank 1) imports apply"),
        ("models/tnp.py", "from ..data import batch_at\n", "models (rank 1) imports data"),
        ("attic/old.py", "import torch\n", "room 'attic' has no rank"),
        ("likelihoods/beta.py", "from ..models import base\n", "a primitive package imports"),
    ],
)
def test_a_made_up_source_that_breaks_a_rule_is_found(path, source, problem):
    packages = set(RANKS) | {"attic"}
    (found,) = layer_problems({path: source}, packages)
    assert problem in found


def test_what_the_rules_allow():
    packages = set(RANKS)
    allowed = {
        "units.py": "from .distributions import JointGaussian\nimport torch\n",
        "__init__.py": "from .apply.predict import predict\n",
        "gp/hyper_grid.py": "if TYPE_CHECKING:\n    from ..data.gp import GPConfig\n",
        "plot/map.py": "from ..extras import pyplot\nfrom .figures import save_figure\n",
        "cli/commands.py": "from .. import __version__\nfrom ..training.loop import fit\n",
        "likelihoods/beta.py": "from ..user_files import DataError\nfrom .numerics import x\n",
        "nn/mlp.py": "from ..likelihoods import HeadHyper\n",
        "batch.py": "from .likelihoods import crps\n",
    }
    assert layer_problems(allowed, packages) == []
