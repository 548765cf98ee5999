"""The compiled-step benchmark (``benchmarks/compile_step.py``): its quick mode runs every case
and writes the table; the real measurement is the lead's, on quiet cores."""

from __future__ import annotations

import json

import pytest

from benchmarks import compile_step
from tnpx.config import load_config


def test_the_sizes_are_the_defaults_and_the_configs_preset(tmp_path):
    name, config = compile_step.CASES[1]
    default = load_config(config, compile_step.overrides(name, "default", False, str(tmp_path)))
    paper = load_config(config, compile_step.overrides(name, "paper", False, str(tmp_path)))
    assert default.model.get("preset") is None and paper.model["preset"] == "kr-code"
    quick = load_config(config, compile_step.overrides(name, "paper", True, str(tmp_path)))
    assert quick.model["dim_model"] == 16 and quick.data["batch_size"] == 4


@pytest.mark.slow
def test_quick_mode_prints_the_table(tmp_path, capsys):
    """Every case runs (on dynamo's eager backend, so no kernels are built) and the report
    has the table's header and one row per case."""
    assert compile_step.main(["--quick", "--backend", "eager", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert compile_step.HEADER in printed
    rows = json.loads((tmp_path / "compile-step.json").read_text())["rows"]
    assert len(rows) == len(compile_step.CASES) * len(compile_step.SIZES)
    for r in rows:
        assert f"| {r['model']} | `{r['config']}` | {r['size']} |" in printed
        assert r["fell_back"] is None and r["max_loss_gap"] < 1e-3
    report = (tmp_path / "compile-step.md").read_text()
    assert "**Command**" in report and "**Hardware**" in report and "**Reading**" in report
