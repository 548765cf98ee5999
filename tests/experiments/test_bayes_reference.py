"""experiments/bayes/reference.py: the Bayes-average reference is scored on the zoo cards' own
test tasks, paired with the oracle and with each model, and splits a model's gap into the
irreducible part and the model's shortfall."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from experiments.bayes import cache as bayes_cache
from experiments.bayes import reference as bayes
from experiments.zoo.score import KERNELS, single_kernel_sampler
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.gp.average import HyperGrid, average_log_likelihood
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
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)  # main() pins one thread


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
    # another rule, prior or task is another key; a prior field the rule never reads is not
    cfg = load_config(bayes.CONFIG)
    sampler = single_kernel_sampler(cfg)
    batch, prior = batch_at(sampler, 0, split="test"), sampler.config

    def key(grid=TINY, prior=prior):
        return bayes.AverageCache.key(batch, HyperGrid.from_config(prior, **grid))

    assert key() == key(dict(reversed(TINY.items())))
    assert key() != key({**TINY, "n_noise": 3})
    assert key() != key({**TINY, "tolerance": 1e-4})
    assert key() != key(prior=dataclasses.replace(prior, lengthscale_b=prior.lengthscale_b * 2))
    # how tasks are drawn is in the tasks' tensors: a new sampler option keeps every key
    assert key() == key(prior=dataclasses.replace(prior, context_scaling=0.5, min_ctx=7))
    before = key()
    batch.yt = batch.yt + 1e-6
    assert key() != before


def _figures(out) -> dict:
    result = json.loads((out / "bayes-reference.json").read_text())
    return {k: result[k] for k in ("eval", "per_kernel", "convergence")}


def test_a_stopped_run_resumes_to_the_same_figures(tiny_grids, tmp_path, monkeypatch, capsys):
    argv = ["--batches", "2", "--models", "gp1d-tnp", "--no-progress"]
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert bayes.main([*argv, "--out", str(whole)]) == 0
    fresh = json.loads((whole / "bayes-reference.json").read_text())["average_cache"]
    computed = fresh["computed_batches"]
    calls = []

    def stop_at_second(batch, grid, **options):
        if calls:
            raise KeyboardInterrupt  # a run stopped while computing its second batch
        calls.append(1)
        return average_log_likelihood(batch, grid, **options)

    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(bayes_cache, "average_log_likelihood", stop_at_second)
        bayes.main([*argv, "--out", str(parts)])
    assert len(torch.load(parts / bayes.CACHE, weights_only=True)) == 1  # written at once
    assert not (parts / "bayes-reference.json").exists()
    capsys.readouterr()
    assert bayes.main([*argv, "--out", str(parts), "--dry-run"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith(f"Bayes average: {computed - 1} of ")
    assert bayes.main([*argv, "--out", str(parts)]) == 0
    assert _figures(parts) == _figures(whole)  # exactly: every float of the report
    resumed = json.loads((parts / "bayes-reference.json").read_text())["average_cache"]
    assert resumed["computed_batches"] == computed - 1
    # the stopped run's one batch, met again by the convergence check
    assert sum(resumed["reused_batches"].values()) == 2
    kept = [torch.load(o / bayes.CACHE, weights_only=True) for o in (whole, parts)]
    assert kept[0].keys() == kept[1].keys()
    assert all(torch.equal(kept[0][k]["average"], kept[1][k]["average"]) for k in kept[0])


def test_dry_run_and_cached_only_compute_nothing(tiny_grids, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--batches", "1", "--out", str(out), "--models", "--no-progress"]
    assert bayes.main([*argv, "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    parts = bayes.parts(load_config(bayes.CONFIG), 1)
    total = sum(p.batches for p in parts.values())  # the coarse check meets batch 0 again
    assert lines[0].startswith(f"Bayes average: {total - 1} of {total} batches to compute (~")
    assert len(lines) == 1 + len(parts) and lines[-1].endswith(", 1 to compute")
    with pytest.raises(SystemExit, match=f"--cached-only: .* lacks the average of {total - 1} "):
        bayes.main([*argv, "--cached-only"])
    assert not out.exists()  # neither refused command wrote anything
    assert bayes.main(argv) == 0
    capsys.readouterr()
    assert bayes.main([*argv, "--cached-only", "--models", "gp1d-tnp"]) == 0
    result = json.loads((out / "bayes-reference.json").read_text())
    assert result["average_cache"]["computed_batches"] == 0
    assert "gp1d-tnp" in result["eval"]["models"]
    assert capsys.readouterr().out.startswith(f"Bayes average: 0 of {total} batches")
    with pytest.raises(SystemExit):
        bayes.main([*argv, "--batches", "0"])
