"""models/presets/: every preset is registered by the module of its source repository, names
only options its model takes, and no preset module imports a model (read from the source)."""

from __future__ import annotations

import ast
from dataclasses import asdict, fields
from pathlib import Path

import pytest

import tnpx
from tnpx.models.registry import PRESETS, REGISTRY, resolve_hyper

MODELS = Path(tnpx.models.__file__).parent
PRESET_DIR = MODELS / "presets"
# preset name -> the module of its source (docs/fidelity.md's sections)
SOURCE = {
    "kr-code": "kr_code",  # MLGlobalHealth/dl4bi
    "tnpd-code": "tnpd_code",  # tung-nd/TNP-pytorch
    "bnp-code": "bnp_code",  # juho-lee/bnp
    "te-code": "te_code",  # cambridge-mlg/tnp
    "tnp-kr-yml": "te_code",
    "released-code": "te_code",  # cambridge-mlg/tetnp
    "no-input-adjustment": "te_paper",  # the TE paper's Table 7 ablation
}


def _registrations(path: Path) -> list[tuple[str, str]]:
    """``(model, preset)`` of every ``register_preset("model", "preset", ...)`` call in ``path``."""
    calls = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register_preset":
            model, preset = (arg.value for arg in node.args[:2])
            calls.append((model, preset))
    return calls


def _imported_modules(path: Path) -> set[str]:
    """What ``path`` imports relative to its package, as ``..base`` / ``.kr_code`` names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            names = [node.module] if node.module else [a.name for a in node.names]
            found |= {"." * node.level + name for name in names}
    return found


def test_each_preset_is_registered_once_by_the_module_of_its_source():
    where: dict[tuple[str, str], list[str]] = {}
    for path in [*MODELS.glob("*.py"), *PRESET_DIR.glob("*.py")]:
        for pair in _registrations(path):
            where.setdefault(pair, []).append(path.relative_to(MODELS).as_posix())
    registered = {(m, p) for m, presets in PRESETS.items() for p in presets}
    assert set(where) == registered  # the parser sees every registration
    wrong = {
        pair: paths for pair, paths in where.items() if paths != [f"presets/{SOURCE[pair[1]]}.py"]
    }
    assert wrong == {}


def test_preset_modules_import_no_model_module():
    allowed = {"..registry"} | {f".{p.stem}" for p in PRESET_DIR.glob("*.py")} | {"."}
    imports = {p.name: _imported_modules(p) - allowed for p in PRESET_DIR.glob("*.py")}
    assert {name: found for name, found in imports.items() if found} == {}


def test_the_parsers_see_a_registration_and_an_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ..tnp import TNP\nfrom ..base import register_preset\n"
        'register_preset("tnp", "te-code", n_layers=2)\n'
    )
    assert _registrations(probe) == [("tnp", "te-code")]
    assert _imported_modules(probe) == {"..tnp", "..base"}


@pytest.mark.parametrize(
    "name, preset", [(m, p) for m in sorted(PRESETS) for p in sorted(PRESETS[m])]
)
def test_a_preset_resolves_to_its_options(name, preset):
    """Every option a preset names is an option of its model, and the resolved hyper holds
    it (``dim_head=None`` is resolved to ``dim_model // n_heads``)."""
    options = PRESETS[name][preset]
    taken = {f.name for f in fields(REGISTRY[name].Hyper)}
    assert set(options) <= taken
    hyper = asdict(resolve_hyper(name, preset))
    expected = dict(options)
    if expected.get("dim_head", 0) is None:
        expected["dim_head"] = hyper["dim_model"] // hyper["n_heads"]
    assert {k: hyper[k] for k in expected} == expected
