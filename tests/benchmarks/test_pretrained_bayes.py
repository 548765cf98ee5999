"""benchmarks/pretrained_bayes.py: the Bayes-average reference is scored on the zoo cards' own
test tasks, paired with the oracle, and splits a card's gap into its two parts."""

from __future__ import annotations

import json

import pytest
import torch

from benchmarks import pretrained_bayes as bayes
from benchmarks.pretrained_eval import KERNELS, single_kernel_sampler
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.gp_average import HyperGrid, average_log_likelihood
from tnpx.models import build_model

TINY = {"n_lengthscale": 2, "n_period": 3, "n_noise": 2, "refinements": 1}


@pytest.fixture
def tiny_grids(monkeypatch):
    monkeypatch.setattr(bayes, "GRID", TINY)
    monkeypatch.setattr(bayes, "FINE", {**TINY, "refinements": 2})
    monkeypatch.setattr(bayes, "FINE_BATCHES", 1)


def test_reference_on_the_cards_tasks(tiny_grids, tmp_path):
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    card = {"eval": {"n_tasks": 16, "gap": 0.5, "gap_se": 0.05}}
    (zoo / "gp1d-fake.json").write_text(json.dumps(card))
    (zoo / "gp1d-other.json").write_text(json.dumps({"eval": {"n_tasks": 1024, "gap": 0.4}}))
    out = tmp_path / "out"
    assert (
        bayes.main(["--batches", "1", "--out", str(out), "--zoo", str(zoo), "--no-progress"]) == 0
    )
    result = json.loads((out / "bayes-reference.json").read_text())
    assert result["eval"]["n_tasks"] == 16
    assert set(result["per_kernel"]) == set(KERNELS)
    # the first row re-derived: the cards' first test batch, oracle minus average, paired
    cfg = load_config(bayes.CONFIG)
    batch = batch_at(single_kernel_sampler(cfg), 0, split="test")
    oracle = build_model("gp-oracle", 1, 1).log_likelihood(batch).double()
    prior = single_kernel_sampler(cfg).config
    average = average_log_likelihood(batch, HyperGrid.from_config(prior, **TINY))
    assert result["eval"]["gap"] == pytest.approx((oracle - average).mean().item(), abs=1e-9)
    assert result["eval"]["average_ll"] == pytest.approx(average.mean().item(), abs=1e-9)
    report = (out / "bayes-reference.md").read_text()
    shortfall = 0.5 - result["eval"]["gap"]
    assert f"| `gp1d-fake` | 0.500 ± 0.050 | {result['eval']['gap']:.3f} |" in report
    assert f"{shortfall:.3f}" in report
    assert "gp1d-other" not in report  # scored on other tasks: not split
    assert "**Command**: `" in report and "**Reading**: " in report


def test_average_is_paired_with_the_oracle_per_kernel(tiny_grids):
    result = bayes.run(4, progress=False)
    for k in KERNELS:
        entry = result["per_kernel"][k]
        assert entry["n_tasks"] == 16
        assert entry["gap"] == pytest.approx(entry["oracle_ll"] - entry["average_ll"], abs=1e-9)
    assert torch.isfinite(torch.tensor(result["convergence"]["fine"]["average_ll"]))
