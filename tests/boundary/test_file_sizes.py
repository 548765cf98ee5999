"""Sizes a reader takes in at once: no module of the library over 350 lines, and the
training loop's ``_fit`` under 60 (its parts live in the modules of ``tnpx.training``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tnpx"
MAX_LINES = 350
MAX_FIT_LINES = 60


def test_no_library_module_is_over_350_lines():
    over = {
        path.relative_to(SRC).as_posix(): n
        for path in sorted(SRC.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not over, f"modules over {MAX_LINES} lines (split them by job): {over}"


def test_the_training_loop_fit_is_under_60_lines():
    tree = ast.parse((SRC / "training" / "loop.py").read_text(encoding="utf-8"))
    fit = next(
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "_fit"
    )
    lines = fit.end_lineno - fit.lineno + 1
    assert lines < MAX_FIT_LINES, f"training/loop.py:_fit is {lines} lines"
