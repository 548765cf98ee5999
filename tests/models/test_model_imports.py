"""The package's layering, read from the source (no import): no model module imports another;
and in ``models/`` and ``nn/`` no option is read with a fallback and no override changes its
base's signature.

A *model module* registers models (``@register``); the shared bases that register nothing
(``base.py``, ``transformer.py``, ``cnp_family.py``) are what model modules build on, besides
``tnpx.nn``."""

from __future__ import annotations

import ast
from pathlib import Path

MODELS = Path(__file__).parents[2] / "src" / "tnpx" / "models"
NN = MODELS.parent / "nn"


def _registers(path: Path) -> bool:
    return "@register(" in path.read_text()


def _model_modules_imported(path: Path, model_modules: set[str]) -> set[str]:
    """Names of model modules that ``path`` imports (relative or absolute, any depth)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1:  # from .x import ... / from . import x
                names = [module.split(".")[0]] if module else [a.name for a in node.names]
            elif module.startswith("tnpx.models."):
                names = [module.split(".")[2]]
            elif module == "tnpx.models":
                names = [a.name for a in node.names]
            else:
                names = []
            found |= set(names) & model_modules
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[:2] == ["tnpx", "models"] and len(parts) > 2:
                    found |= {parts[2]} & model_modules
    return found


def test_model_modules_are_found():
    model_modules = {p.stem for p in MODELS.glob("*.py") if _registers(p)}
    assert {"tnp", "tnp_kr", "te_tnp", "pseudo_token", "cnp", "latent"} <= model_modules
    assert not {"base", "transformer", "cnp_family"} & model_modules


def test_no_model_module_imports_another_model_module():
    model_modules = {p.stem for p in MODELS.glob("*.py") if _registers(p)}
    offenders = {
        p.stem: sorted(_model_modules_imported(p, model_modules - {p.stem}))
        for p in MODELS.glob("*.py")
        if p.stem != "__init__"
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_check_sees_an_import(tmp_path):
    """The parser does detect a model-to-model import (so the test above can fail)."""
    probe = tmp_path / "probe.py"
    probe.write_text("from .tnp import TNP\nfrom ..nn import MLP\nimport tnpx.models.cnp\n")
    assert _model_modules_imported(probe, {"tnp", "cnp", "latent"}) == {"tnp", "cnp"}


def _shortcuts(path: Path) -> list[str]:
    """``getattr(obj, name, default)`` calls (an option read with a fallback) and
    ``type: ignore[override]`` comments (an override with another signature) in ``path``."""
    text = path.read_text()
    found = [
        f"{path.name}:{node.lineno} getattr with a default"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr"
        if len(node.args) == 3
    ]
    lines = text.splitlines()
    return found + [
        f"{path.name}:{i} ignores an override" for i, line in enumerate(lines, 1)
        if "type: ignore[override]" in line
    ]  # fmt: skip


def test_no_option_fallback_nor_signature_override_in_models_and_nn():
    paths = [*MODELS.rglob("*.py"), *NN.rglob("*.py")]
    assert [hit for path in paths for hit in _shortcuts(path)] == []


def test_the_shortcut_check_sees_both(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        'n = getattr(hyper, "n_paths", 1)\nm = getattr(hyper, field)\n'
        "def forward(self, x):  # type: ignore[override]\n    pass\n"
    )
    assert _shortcuts(probe) == [
        "probe.py:1 getattr with a default",
        "probe.py:3 ignores an override",
    ]
