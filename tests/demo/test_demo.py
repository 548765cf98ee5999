"""``tnpx demo`` (what ``make demo`` runs): its three parts write under the output folder only,
its default folder is ignored by git (so a fresh clone stays clean), and the CNP it trains
uses its context."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tnpx.cli.commands import build_parser
from tnpx.config import load_config
from tnpx.demo.report import REFERENCE_MODEL, follows_context
from tnpx.demo.run import CNP_OVERRIDES, CNP_STEPS, demo_config, gp_mean_share
from tnpx.demo.settings import DEFAULT_OUT, DemoSettings
from tnpx.evaluation.protocol import build_test_sampler
from tnpx.models import build_model
from tnpx.training.loop import fit

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "kr1-rbf-tnpx-budget.yaml"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
FIGURES = ("zero_shot.png", "predictions.png", "validation.png")
# What a copy of the repository needs to run the demo from its own sources.
NEEDED = (".gitignore", "Makefile", "pyproject.toml", "configs/", "src/")
CNP_CHECK_STEPS = 2000


def _demo(cwd: Path, *args: str, pythonpath: Path = ROOT / "src"):
    return subprocess.run(
        [sys.executable, "-m", "tnpx.cli", "demo", "--quick", *args],
        cwd=cwd,
        env={**ENV, "PYTHONPATH": str(pythonpath)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def _needs_git_checkout() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if _git(ROOT, "rev-parse", "--show-toplevel").returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout")


@pytest.mark.slow
def test_quick_demo_writes_every_part_under_its_out_folder_only(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = cwd / "demo-out"
    done = _demo(cwd, "--config", str(CONFIG), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in cwd.iterdir()) == ["demo-out"]  # nothing beside it
    for name in (*FIGURES, "metrics.json", "README.md"):
        assert (out / name).stat().st_size > 0, name
    for model in ("tnp", "cnp"):  # the training runs default to OUT/train
        assert (out / "train" / model / "model.pt").is_file()
    for heading in ("== 1/3  Zero-shot", "== 2/3  Train tnp", "== 3/3  Train cnp", "== Results"):
        assert heading in done.stdout
    for row in ("| tnp |", "| cnp |", f"| {REFERENCE_MODEL} (reference) |", "| exact GP |"):
        assert row in done.stdout
    record = json.loads((out / "metrics.json").read_text())
    zero_shot = record["zero_shot"]["metrics"]
    assert record["zero_shot"]["model"] == "gp1d-v2-te-tnp-rope" and zero_shot["n_tasks"] == 16
    assert zero_shot["ll"] < zero_shot["oracle_ll"]  # the exact GP is the best possible
    assert sorted(record["models"]) == ["cnp", "tnp"]
    readme = (out / "README.md").read_text()
    for section in ("**What**", "**Command**", "**Protocol or budget**", "**Hardware", "**Reading"):
        assert section in readme
    assert "make demo-results" in readme and "--quick" in readme


def test_default_output_folder_is_ignored_by_git():
    _needs_git_checkout()
    args = build_parser().parse_args(["demo"])
    assert args.out == DEFAULT_OUT == "runs/demo" and args.runs is None
    recipe = re.search(r"^demo: .*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe and recipe.group(1).strip() == "$(BIN)/tnpx demo"  # the default folder
    for path in (f"{DEFAULT_OUT}/zero_shot.png", f"{DEFAULT_OUT}/train/cnp/model.pt"):
        assert _git(ROOT, "check-ignore", "-q", path).returncode == 0, path
    assert _git(ROOT, "check-ignore", "-q", "results/demo/README.md").returncode == 1


def test_results_demo_names_the_one_command_that_rebuilds_it():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^demo-results: .*\n\t(.*)$", makefile, re.MULTILINE)
    assert recipe and "tnpx demo --out results/demo --runs runs/" in recipe.group(1)
    readme = (ROOT / "results" / "demo" / "README.md").read_text()
    assert "`make demo-results`" in readme and "--out results/demo" in readme


@pytest.mark.slow
def test_demo_in_a_copy_of_the_repository_leaves_git_status_clean(tmp_path):
    _needs_git_checkout()
    listed = _git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard").stdout
    repo = tmp_path / "repo"
    for name in listed.splitlines():
        if name.startswith(NEEDED) and (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    identity = ["-c", "user.name=test", "-c", "user.email=test@example.com"]
    for step in (["init", "-q"], ["add", "-A"], [*identity, "commit", "-q", "-m", "copy"]):
        assert _git(repo, *step).returncode == 0, step
    done = _demo(repo, pythonpath=repo / "src")  # the default folder, as `make demo` runs it
    assert done.returncode == 0, done.stderr
    assert (repo / DEFAULT_OUT / "zero_shot.png").is_file()
    status = _git(repo, "status", "--porcelain", "--untracked-files=all")
    assert status.returncode == 0 and status.stdout == ""


def test_gp_mean_share_ranks_the_exact_gp_the_context_average_and_an_untrained_model():
    sampler = build_test_sampler(load_config(CONFIG))
    assert gp_mean_share(build_model("gp-oracle"), sampler, 2) == pytest.approx(1.0)
    torch.manual_seed(0)
    untrained = build_model("cnp", dim_model=64).eval()
    assert gp_mean_share(untrained, sampler, 2) < 0.1
    # Shifting to the context's average explains some of the GP mean, far from all of it.
    assert 0.0 < gp_mean_share(build_model(REFERENCE_MODEL), sampler, 2) < 0.5


@pytest.mark.slow
def test_cnp_at_the_demo_settings_follows_its_context(tmp_path):
    # The demo's CNP config and schedule, stopped after its first CNP_CHECK_STEPS steps (the
    # plateau at the prior's flat line lasts ~1,100): its mean must already do more than shift
    # to the context's average, as it does by CNP_STEPS.
    settings = DemoSettings(config=str(CONFIG), out=tmp_path)
    cfg = demo_config(settings, "cnp", CNP_OVERRIDES)
    assert cfg.train.steps == CNP_STEPS and cfg.model["name"] == "cnp"
    cfg.train.progress = False
    result = fit(cfg, stop_at=CNP_CHECK_STEPS)
    assert result.steps_done == CNP_CHECK_STEPS
    sampler = build_test_sampler(cfg)
    share = gp_mean_share(result.model.eval(), sampler, 8)
    average = gp_mean_share(build_model(REFERENCE_MODEL), sampler, 8)
    print(f"CNP after {CNP_CHECK_STEPS} steps: share {share:.3f}; context average {average:.3f}")
    assert follows_context(share, average), (share, average)
