"""experiments/pretrained_bayes.py: the Bayes-average reference is scored on the zoo cards' own
test tasks, paired with the oracle and with each model, and splits a model's gap into the
irreducible part and the model's shortfall."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from experiments import pretrained_bayes as bayes
from experiments.pretrained_eval import KERNELS, single_kernel_sampler
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.gp_average import HyperGrid, average_log_likelihood
from tnpx.models import build_model
from tnpx.zoo import pretrained

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow

TINY = {"n_lengthscale": 2, "n_period": 3, "n_noise": 2, "refinements": 1, "tolerance": 1e-3}


@pytest.fixture
def tiny_grids(monkeypatch):
    monkeypatch.setattr(bayes, "GRID", TINY)
    monkeypatch.setattr(bayes, "FINE", {**TINY, "refinements": 2})
    monkeypatch.setattr(bayes, "FINE_BATCHES", 1)


def test_reference_on_the_cards_tasks(tiny_grids, tmp_path):
    out = tmp_path / "out"
    argv = ["--batches", "1", "--out", str(out), "--models", "gp1d-tnp", "--no-progress"]
    assert bayes.main(argv) == 0
    result = json.loads((out / "bayes-reference.json").read_text())
    assert result["eval"]["n_tasks"] == 16
    assert set(result["per_kernel"]) == set(KERNELS)
    # the first row re-derived: the cards' first test batch, paired differences
    cfg = load_config(bayes.CONFIG)
    sampler = single_kernel_sampler(cfg)
    batch = batch_at(sampler, 0, split="test")
    oracle = build_model("gp-oracle", 1, 1).log_likelihood(batch).double()
    average = average_log_likelihood(batch, HyperGrid.from_config(sampler.config, **TINY))
    with torch.no_grad():
        model = pretrained("gp1d-tnp").eval().log_likelihood(batch).double()
    e = result["eval"]
    assert e["gap"] == pytest.approx((oracle - average).mean().item(), abs=1e-6)
    m = e["models"]["gp1d-tnp"]
    assert m["gap"] == pytest.approx((oracle - model).mean().item(), abs=1e-6)
    assert m["shortfall"] == pytest.approx((average - model).mean().item(), abs=1e-6)
    assert m["gap"] == pytest.approx(e["gap"] + m["shortfall"], abs=1e-9)  # the split adds up
    # interpolation: each task's mean over its targets inside the context's range [-2, 2]
    inside = batch.xt[..., 0].abs() <= 2
    grid = HyperGrid.from_config(sampler.config, **TINY)
    oracle_t = build_model("gp-oracle", 1, 1).predict_batch(batch).log_prob(batch.yt)[..., 0]
    average_t = average_log_likelihood(batch, grid, per_target=True)
    per_task = ((oracle_t.double() - average_t) * inside).sum(-1) / inside.sum(-1)
    assert e["interpolation"]["gap"] == pytest.approx(per_task.mean().item(), abs=1e-6)
    assert e["interpolation"]["n_tasks"] <= 16 and e["extrapolation"]["n_tasks"] <= 16
    report = (out / "bayes-reference.md").read_text()
    assert "| all kernels, extrapolation (" in report and "| periodic, interpolation (" in report
    assert f"| {m['gap']:.3f} ({m['shortfall']:.3f} ± {m['shortfall_se']:.3f}) |" in report
    assert "**Command**: `" in report and "**Reading**: " in report


def test_per_kernel_rows_and_bad_checkpoint_spec(tiny_grids):
    result = bayes.run(4, {}, progress=False)
    for k in KERNELS:
        entry = result["per_kernel"][k]
        assert entry["n_tasks"] == 16
        assert entry["gap"] == pytest.approx(entry["oracle_ll"] - entry["average_ll"], abs=1e-9)
    assert torch.isfinite(torch.tensor(result["convergence"]["fine"]["average_ll"]))
    with pytest.raises(SystemExit, match="NAME=PATH"):
        bayes.load_models([], ["no-equals-sign"])


def test_average_cache_reused_only_for_same_task_and_rule(tiny_grids, tmp_path, monkeypatch):
    out = tmp_path / "out"
    argv = ["--batches", "1", "--out", str(out), "--models", "--no-progress"]
    assert bayes.main(argv) == 0
    first = json.loads((out / "bayes-reference.json").read_text())
    computed = first["average_cache"]["computed_batches"]
    assert computed > 0 and first["average_cache"]["reused_batches"] == {}
    assert bayes.main(argv) == 0  # again: every batch's average from the cache, same figures
    again = json.loads((out / "bayes-reference.json").read_text())
    assert again["average_cache"]["computed_batches"] == 0
    # every look-up is a reuse now: the convergence check's coarse batch is the first row's
    assert sum(again["average_cache"]["reused_batches"].values()) == computed + 1
    assert again["eval"]["average_ll"] == first["eval"]["average_ll"]
    assert len(torch.load(out / bayes.CACHE, weights_only=True)) == computed
    assert bayes.main([*argv, "--batches", "2"]) == 0  # one more batch: only it is computed
    more = json.loads((out / "bayes-reference.json").read_text())["average_cache"]
    assert more["computed_batches"] >= 1 and sum(more["reused_batches"].values()) >= computed
    assert bayes.main(argv) == 0  # back to one: the file keeps what this report used
    assert len(torch.load(out / bayes.CACHE, weights_only=True)) == computed
    assert "reused for" in (out / "bayes-reference.md").read_text()
    assert bayes.main([*argv, "--recompute"]) == 0
    assert json.loads((out / "bayes-reference.json").read_text())["average_cache"] == {
        "computed_batches": computed,
        "reused_batches": {},
    }
    # another rule, prior or task is another key
    cfg = load_config(bayes.CONFIG)
    sampler = single_kernel_sampler(cfg)
    batch, prior = batch_at(sampler, 0, split="test"), sampler.config
    key = bayes.AverageCache.key(batch, TINY, prior)
    assert key == bayes.AverageCache.key(batch, dict(reversed(TINY.items())), prior)
    assert key != bayes.AverageCache.key(batch, {**TINY, "n_noise": 3}, prior)
    wider = dataclasses.replace(prior, lengthscale_b=prior.lengthscale_b * 2)
    assert key != bayes.AverageCache.key(batch, TINY, wider)
    batch.yt = batch.yt + 1e-6
    assert key != bayes.AverageCache.key(batch, TINY, prior)
