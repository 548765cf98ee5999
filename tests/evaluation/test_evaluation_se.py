"""The evaluation's standard errors over test batches (``Metrics.ll_se_batches``,
``gap_se_batches``): the cluster-robust s.e. with each batch as the independent unit, against a
float64 re-derivation, and what ``evaluate`` and ``cached_evaluate`` make of it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import tnpx
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.evaluation.protocol import (
    build_test_sampler,
    cached_evaluate,
    clustered_mean_se,
    evaluate,
    mean_se,
)

# the KR-1 RBF protocol's test data at 6 batches of 8
KR1 = ("configs/kr1-rbf.yaml", ["eval.n_batches=6", "eval.batch_size=8"])


def _rederived(groups: list[np.ndarray]) -> tuple[float, float]:
    """The cluster-robust s.e. of the overall mean, written out in float64 numpy."""
    everything = np.concatenate(groups)
    n, g, mean = everything.size, len(groups), everything.mean()
    resid = np.array([x.sum() - x.size * mean for x in groups])
    return mean, math.sqrt(g / (g - 1) * (resid**2).sum()) / n


def test_equal_groups_give_the_standard_error_of_the_group_means():
    gen = torch.Generator().manual_seed(0)
    groups = [torch.randn(32, generator=gen) + torch.randn(1, generator=gen) for _ in range(50)]
    mean, se = clustered_mean_se(groups)
    means = torch.stack([g.double().mean() for g in groups])
    assert mean == pytest.approx(torch.cat(groups).double().mean().item(), abs=1e-12)
    assert se == pytest.approx(means.std(unbiased=True).item() / math.sqrt(50), rel=1e-10)
    # a shared offset per batch makes its tasks correlated: the s.e. over tasks understates it
    assert se > 2 * mean_se(torch.cat(groups))[1]


def test_unequal_groups_match_a_float64_rederivation():
    rng = np.random.default_rng(1)
    groups = [rng.normal(size=k) + rng.normal() for k in (3, 17, 8, 40, 1, 25)]
    mean, se = clustered_mean_se([torch.tensor(x, dtype=torch.float32) for x in groups])
    want_mean, want_se = _rederived(groups)
    assert mean == pytest.approx(want_mean, abs=1e-6) and se == pytest.approx(want_se, rel=1e-5)


def test_one_group_has_no_standard_error():
    mean, se = clustered_mean_se([torch.tensor([1.0, 2.0, 3.0])])
    assert mean == pytest.approx(2.0) and math.isnan(se)


@pytest.fixture(scope="module")
def scored():
    """An untrained TNP scored on 6 batches of the KR-1 RBF protocol's data (batches whose tasks
    share a context size and input locations)."""
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", 1, 1, dim_model=16, n_layers=1, n_heads=2)
    sampler = build_test_sampler(load_config(*KR1))
    return model, sampler, evaluate(model, sampler, 6)


def test_evaluate_reports_the_batch_level_errors_of_its_own_tasks(scored):
    model, sampler, metrics = scored
    oracle = tnpx.build_model("gp-oracle", 1, 1)
    lls, gaps = [], []
    with torch.no_grad():
        for i in range(6):
            batch = batch_at(sampler, i, split="test")
            ll = model.log_likelihood(batch, model.predict_batch(batch)).double().numpy()
            lls.append(ll)
            gaps.append(oracle.log_likelihood(batch).double().numpy() - ll)
    assert metrics.ll_se_batches == pytest.approx(_rederived(lls)[1], rel=1e-5)
    assert metrics.gap_se_batches == pytest.approx(_rederived(gaps)[1], rel=1e-5)
    assert metrics.ll == pytest.approx(_rederived(lls)[0], abs=1e-6)


def test_a_cell_stored_before_the_batch_errors_is_computed_again_when_needed(scored, tmp_path):
    model, _, metrics = scored
    cfg = load_config(*KR1)
    cell = tmp_path / "old.json"
    old = {k: v for k, v in metrics.as_dict().items() if not k.endswith("_batches")}
    cell.write_text(json.dumps({**old, "ll": 99.0}))  # an older cell, marked so reuse shows
    assert cached_evaluate(model, cfg, cell).ll == 99.0  # read back: nothing asks for more
    again = cached_evaluate(model, cfg, cell, needs=("ll_se_batches",))
    assert again.ll != 99.0 and again.ll_se_batches is not None and again.ll_se_batches > 0
    assert json.loads(cell.read_text())["ll_se_batches"] == again.ll_se_batches  # overwritten
    assert cached_evaluate(model, cfg, cell, needs=("ll_se_batches",)).ll == again.ll
