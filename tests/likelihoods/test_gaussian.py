"""The Gaussian likelihood heads, alone and inside models."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tests.helpers.small_models import ALL_MODELS, make_task, predict, small_model, supports
from tnpx.distributions import JointGaussian, LatentMixture
from tnpx.likelihoods import HeteroscedasticGaussian, HomoscedasticGaussian, build_likelihood
from tnpx.models.registry import REGISTRY, hyper_names

ATOL = 1e-5
RTOL = 1e-4


def assert_same_prediction(p, q, atol=ATOL, rtol=RTOL):
    assert_close(p.mean, q.mean, atol=atol, rtol=rtol)
    assert_close(p.stddev, q.stddev, atol=atol, rtol=rtol)


# --- likelihood heads -------------------------------------------------------------------


@pytest.mark.parametrize("transform", ["softplus", "exp"])
@pytest.mark.parametrize("min_std", [1e-3, 0.05])
def test_heteroscedastic_min_std(transform, min_std):
    head = HeteroscedasticGaussian(2, min_std=min_std, transform=transform)
    raw = torch.cat([torch.randn(4, 5, 2), torch.full((4, 5, 2), -1e4)], -1)
    dist = head(raw)
    assert dist.mean.shape == (4, 5, 2)
    assert_close(dist.mean, raw[..., :2])
    assert (dist.stddev >= min_std * (1 - 1e-5)).all()
    assert torch.isfinite(dist.stddev).all()
    big = head(torch.full((1, 1, 4), 4.0)).stddev
    assert (big > min_std).all()


def test_heteroscedastic_rejects_bad_options():
    with pytest.raises(ValueError):
        HeteroscedasticGaussian(1, transform="relu")
    with pytest.raises(ValueError):
        HeteroscedasticGaussian(1, min_std=-0.1)
    with pytest.raises(ValueError, match="heteroscedastic"):
        build_likelihood("laplace", 1, 1e-3)


def test_homoscedastic_head():
    head = HomoscedasticGaussian(3, min_std=0.01, init_std=0.5)
    assert head.n_params == 3
    dist = head(torch.randn(2, 7, 3))
    assert dist.stddev.shape == (2, 7, 3)
    assert_close(dist.stddev, torch.full((2, 7, 3), 0.51))
    with torch.no_grad():
        head.raw_std.fill_(-1e4)
    assert (head(torch.randn(2, 7, 3)).stddev >= 0.01).all()


def _head_models():
    return [n for n in ALL_MODELS if {"likelihood", "min_std"} <= set(hyper_names(REGISTRY[n]))]


@pytest.mark.parametrize("name", _head_models())
def test_model_min_std_override(name):
    model = small_model(name, min_std=0.7)
    xc, yc, xt = make_task(2, 5, 6, seed=21)
    assert (predict(model, xc, yc, xt).stddev >= 0.7 * (1 - 1e-5)).all()


@pytest.mark.parametrize("name", _head_models())
@pytest.mark.parametrize("dim_y", [1, 2])
def test_model_homoscedastic_likelihood(name, dim_y):
    if not supports(name, 1, dim_y):
        pytest.skip(f"{name} does not support dim_y={dim_y}")
    model = small_model(name, 1, dim_y, likelihood="homoscedastic")
    xc, yc, xt = make_task(2, 5, 6, 1, dim_y, seed=22)
    pred = predict(model, xc, yc, xt)
    assert pred.mean.shape == pred.stddev.shape == (2, 6, dim_y)
    # one noise level per output dimension, shared by every target and task (for mixtures
    # and joint Gaussians: the head's noise inside the prediction)
    noise = head_noise(pred).reshape(-1, dim_y)
    assert_close(noise, noise[:1].expand_as(noise))


def head_noise(pred) -> torch.Tensor:
    """The Gaussian head's scale inside a prediction."""
    if isinstance(pred, LatentMixture):
        return pred.component.stddev
    if isinstance(pred, JointGaussian):
        if pred.scale_tril is not None:
            return torch.diagonal(pred.scale_tril, dim1=-2, dim2=-1)
        return pred.cov_diag.sqrt()
    return pred.stddev


@pytest.mark.parametrize(
    "name", [n for n in _head_models() if "scale_transform" in hyper_names(REGISTRY[n])]
)
def test_model_exp_scale_transform(name):
    model = small_model(name, scale_transform="exp", min_std=0.01)
    xc, yc, xt = make_task(2, 5, 6, seed=23)
    pred = predict(model, xc, yc, xt)
    assert (pred.stddev >= 0.01).all() and torch.isfinite(pred.stddev).all()
