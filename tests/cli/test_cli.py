"""The command line (tnpx.cli): --help for every command, a train -> eval -> plot smoke run,
clean errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.helpers.tiny import write_tiny
from tnpx.cli.commands import build_parser, main, moved_to_lab

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
COMMANDS = ["train", "runs", "eval", "plot", "predict", "models", "demo", "bo", "data"]


def _tnpx(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "tnpx.cli", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=240,
        **kw,
    )


def test_every_command_is_in_the_parser():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sorted(sub.choices) == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert "usage: tnpx " + command in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, replacement",
    [
        (["bench", "scaling", "--sizes", "1"], "python -m benchmarks.scaling"),
        (["--debug", "bench"], "python -m benchmarks.scaling"),
        (["bo", "run", "configs/kr2-budget.yaml"], "python -m experiments.bo.run"),
    ],
)
def test_a_command_moved_to_the_lab_says_where(argv, replacement, capsys):
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("tnpx ") and f"`{replacement} ...`" in line


def test_other_commands_are_not_taken_for_moved_ones():
    assert moved_to_lab(["bo", "suggest", "gp1d-tnp", "--observations", "obs.csv"]) is None
    assert moved_to_lab(["runs", "bench"]) is None  # a folder named bench
    assert moved_to_lab(["--debug"]) is None


def test_models_lists_every_registered_model(capsys):
    import tnpx

    assert main(["models", "--markdown"]) == 0
    out = capsys.readouterr().out
    for name in tnpx.list_models():
        assert f"`{name}`" in out


@pytest.mark.slow
def test_train_eval_plot_smoke(tmp_path):
    cfg = write_tiny(tmp_path)
    run = tmp_path / "run"
    out = _tnpx("train", str(cfg), f"train.out_dir={run}", "train.steps=20")
    assert out.returncode == 0, out.stderr
    assert (run / "model.pt").exists() and (run / "metrics.csv").exists()

    out = _tnpx("eval", str(run / "model.pt"), "--out", str(tmp_path / "eval.json"))
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "eval.json").read_text())
    assert result["n_tasks"] == 12 and result["oracle_ll"] > result["ll"]
    assert 0 <= result["coverage95"] <= 1
    assert "gp-oracle" in out.stdout
    assert result["ll_se_batches"] > 0 and "s.e. over test batches" in out.stdout

    shifted = _tnpx(
        "eval",
        str(run / "model.pt"),
        "--data",
        "shift=5.0",
        "--out",
        str(tmp_path / "shifted.json"),
    )
    assert shifted.returncode == 0, shifted.stderr
    assert json.loads((tmp_path / "shifted.json").read_text())["ll"] != result["ll"]

    out = _tnpx("plot", str(run / "model.pt"), "--out", str(tmp_path / "p.png"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"

    out = _tnpx("plot", str(run / "model.pt"), "--samples", "3", "--out", str(tmp_path / "s.png"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow  # each case is a subprocess (~3 s)
@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "missing.pt"], "no such checkpoint file"),
        (["train", "missing.yaml"], "config file missing.yaml not found"),
        (["eval", "{cfg}"], "not a readable tnpx checkpoint"),
    ],
)
def test_errors_are_one_line_without_traceback(tmp_path, args, message):
    cfg = write_tiny(tmp_path)
    out = _tnpx(*[a.format(cfg=cfg) for a in args], cwd=tmp_path)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_package_version_matches_pyproject():
    from pathlib import Path

    import tnpx

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', pyproject, re.MULTILINE).group(1)
    assert version == tnpx.__version__
