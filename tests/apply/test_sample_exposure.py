"""``tnpx.sample`` with a count model's exposures (issue 52; tnpx.models.exposure): the context
is read as rates, each target's counts are drawn at its exposure, each draw joins its path's
context at its target's exposure; exposures of 1 give the plain rollout's draws; the methods
and models that take none refuse them in one line."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.small_models import make_task, small_model
from tnpx.models.exposure import predict_with_exposures


@pytest.fixture(scope="module", params=["poisson", "negative-binomial"])
def counts_model(request):
    return small_model("tnp", likelihood=request.param)


def counts_task(b: int = 2, n_ctx: int = 6, n_tgt: int = 4):
    xc, _, xt = make_task(b, n_ctx, n_tgt)
    g = torch.Generator().manual_seed(1)
    exposure_c = torch.rand(b, n_ctx, 1, generator=g) * 4 + 0.5
    exposure_t = torch.rand(b, n_tgt, 1, generator=g) * 4 + 0.5
    yc = torch.poisson(3 * exposure_c, generator=g)
    return xc, yc, xt, exposure_c, exposure_t


def test_exposures_of_one_give_the_plain_rollouts_draws(counts_model):
    xc, yc, xt, _, _ = counts_task()
    plain = tnpx.sample(counts_model, xc, yc, xt, 8, seed=3)
    ones = tnpx.sample(counts_model, xc, yc, xt, 8, seed=3,
                       exposure_c=torch.ones(2, 6, 1), exposure_t=torch.ones(2, 4, 1))  # fmt: skip
    assert torch.equal(plain, ones)


def test_the_context_is_read_as_rates(counts_model):
    xc, yc, xt, e_c, e_t = counts_task()
    once = tnpx.sample(counts_model, xc, yc, xt, 8, seed=3, exposure_c=e_c, exposure_t=e_t)
    doubled = tnpx.sample(counts_model, xc, 2 * yc, xt, 8, seed=3,
                          exposure_c=2 * e_c, exposure_t=e_t)  # fmt: skip
    assert torch.equal(once, doubled)


def test_a_targets_draws_follow_its_exposure(counts_model):
    """One target: the draws' mean is the model's predicted mean at that exposure (Monte Carlo,
    4 standard errors), and far from it at exposure 1."""
    xc, yc, xt, e_c, e_t = counts_task(n_tgt=1)
    e_t = torch.tensor([[[6.0]], [[0.5]]])
    draws = tnpx.sample(counts_model, xc, yc, xt, 4000, seed=0, exposure_c=e_c, exposure_t=e_t)
    with torch.no_grad():
        pred = predict_with_exposures(counts_model, xc, yc, xt, None, None, e_c, e_t)
    mean, se = draws.mean(0), draws.std(0) / 4000**0.5
    assert ((mean - pred.mean).abs() <= 4 * se + 1e-3).all(), (mean, pred.mean)
    with torch.no_grad():
        at_one = predict_with_exposures(counts_model, xc, yc, xt, None, None, e_c, None)
    assert ((mean - at_one.mean).abs() > 10 * se).all()


def test_each_draw_joins_the_context_at_its_targets_exposure(counts_model):
    xc, yc, xt, e_c, e_t = counts_task(b=1, n_tgt=3)
    seen = []
    hook = counts_model.register_forward_pre_hook(lambda _, args: seen.append(args[1].clone()))
    try:
        draws = tnpx.sample(counts_model, xc, yc, xt, 2, order="given", seed=0,
                            exposure_c=e_c, exposure_t=e_t)  # fmt: skip
    finally:
        hook.remove()
    assert len(seen) == 3  # one call per target
    torch.testing.assert_close(seen[0], (yc / e_c).expand(2, -1, -1))
    for k in (1, 2):  # the context of call k ends with the earlier draws, as rates
        rates = draws[:, 0, :k] / e_t[0, :k]  # [paths, k, 1]
        torch.testing.assert_close(seen[k][:, 6:], rates)


def test_what_takes_no_exposure_refuses_it(counts_model):
    xc, yc, xt, e_c, e_t = counts_task()
    with pytest.raises(ValueError, match="method='buffer' takes no exposures"):
        tnpx.sample(counts_model, xc, yc, xt, 2, method="buffer", exposure_t=e_t)
    with pytest.raises(ValueError, match=r"exposure_t: expected shape \[2, 4, 1\]"):
        tnpx.sample(counts_model, xc, yc, xt, 2, exposure_t=e_t[:, :2])
    with pytest.raises(ValueError, match="exposure_c: every exposure must be a finite number"):
        tnpx.sample(counts_model, xc, yc, xt, 2, exposure_c=0 * e_c)
    gaussian = small_model("tnp")
    with pytest.raises(ValueError, match="only a model with likelihood poisson"):
        tnpx.sample(gaussian, xc, yc, xt, 2, exposure_t=e_t)
    ones = tnpx.sample(gaussian, xc, yc, xt, 2, seed=1, exposure_t=torch.ones_like(e_t))
    assert torch.equal(ones, tnpx.sample(gaussian, xc, yc, xt, 2, seed=1))
