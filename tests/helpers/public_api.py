"""tnpx's drawn public API (issue 49, item 3), read from the sources: what may be imported from
where. A name is public when it is in the ``__all__`` of ``tnpx``, of a sub-package, or of a
top-level primitive module (``tnpx.provenance``, ``tnpx.batch``, ...); a module inside a
sub-package (``tnpx.training.loop``) is the package's business, not a user's. Sources are
parsed, not imported (``tnpx.bo`` needs BoTorch to import): ``__all__`` is read from its
literal, a list or ``sorted(_HOMES)`` over a dict literal.

Used by the lab's boundary test (``experiments/``, ``benchmarks/``, ``examples/``) and the docs'
(fenced ``python`` blocks)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tnpx"


def _literal_names(tree: ast.Module) -> set[str] | None:
    """``__all__`` of a module's syntax tree, or None when it defines none."""
    values: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            values[node.target.id] = node.value
    value = values.get("__all__")
    if value is None:
        return None
    if isinstance(value, ast.Call) and value.args:  # sorted(_HOMES)
        value = value.args[0]
        if isinstance(value, ast.Name):
            value = values[value.id]
    if isinstance(value, ast.Dict):
        return {key.value for key in value.keys if isinstance(key, ast.Constant)}
    return {elt.value for elt in value.elts if isinstance(elt, ast.Constant)}


def importable_from(module: str, package: Path = PACKAGE) -> tuple[str, set[str] | None]:
    """What ``module`` (``tnpx`` or ``tnpx.X...``) offers: ``("api", names)`` for ``tnpx``, a
    sub-package or a top-level primitive module (``names`` None when it has no ``__all__``);
    ``("inner", None)`` for a module inside a sub-package; ``("missing", None)`` otherwise."""
    parts = module.split(".")[1:]
    folder = package.joinpath(*parts)
    if (folder / "__init__.py").is_file():
        source = folder / "__init__.py"
    elif len(parts) == 1 and folder.with_suffix(".py").is_file():
        source = folder.with_suffix(".py")
    elif folder.with_suffix(".py").is_file():
        return "inner", None
    else:
        return "missing", None
    return "api", _literal_names(ast.parse(source.read_text()))


def _where(module: str, package: Path) -> str | None:
    """Why ``module`` may not be imported from, or None when it may."""
    kind, names = importable_from(module, package)
    if kind == "inner":
        return f"{module} is a module inside a package: import from the package"
    if kind == "missing":
        return f"{module} is no tnpx module"
    if names is None:
        return f"{module} defines no __all__"
    return None


def api_problems(
    source: str, allowed: frozenset[str] = frozenset(), package: Path = PACKAGE
) -> list[str]:
    """Imports of ``source`` past tnpx's public API, as ``line: what``. ``allowed`` holds
    modules this source may import whole, however deep (each with its reason where it is
    given)."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = node.module
            if module.split(".")[0] != "tnpx" or module in allowed:
                continue
            if why := _where(module, package):
                problems.append(f"{node.lineno}: {why}")
                continue
            _, names = importable_from(module, package)
            problems += [
                f"{node.lineno}: {alias.name} is not in {module}.__all__"
                for alias in node.names
                if alias.name not in (names or set())
            ]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module = alias.name
                if module.split(".")[0] != "tnpx" or module == "tnpx" or module in allowed:
                    continue
                if why := _where(module, package):
                    problems.append(f"{node.lineno}: {why}")
    return problems
