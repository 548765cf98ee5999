"""models/gp.py: the exact GP posterior of gp-oracle, checked against hand-computed algebra,
and its options. The fitted GP baselines (gp, mt-gp) are tested in ``test_gp_fit.py``."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, predict
from tnpx.batch import Batch

ATOL = 1e-5
RTOL = 1e-4


def assert_same_prediction(p, q, atol=ATOL, rtol=RTOL):
    assert_close(p.mean, q.mean, atol=atol, rtol=rtol)
    assert_close(p.stddev, q.stddev, atol=atol, rtol=rtol)


# --- gp-oracle: the exact posterior ------------------------------------------------------


def _rbf(a: torch.Tensor, b: torch.Tensor, ls: float, var: float = 1.0) -> torch.Tensor:
    """RBF Gram matrix of 1D points ``a [n]``, ``b [m]`` in float64."""
    return var * torch.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / ls**2)


def _posterior(xc, yc, xt, ls, var, noise_ctx, noise_tgt, jitter):
    """GP posterior mean and variance at ``xt`` by explicit matrix formulas (float64)."""
    k_cc = _rbf(xc, xc, ls, var) + (noise_ctx**2 + jitter) * torch.eye(len(xc), dtype=torch.float64)
    k_tc = _rbf(xt, xc, ls, var)
    k_inv = torch.linalg.inv(k_cc)
    mean = k_tc @ k_inv @ yc
    cov = _rbf(xt, xt, ls, var) - k_tc @ k_inv @ k_tc.T
    return mean, cov.diagonal() + noise_tgt**2


@pytest.mark.parametrize("noise_tgt", [0.0, 0.3])
def test_gp_oracle_matches_hand_computed_posterior(noise_tgt):
    ls, var, noise_ctx, jitter = 0.7, 1.3, 0.2, 1e-6
    model = tnpx.build_model(
        "gp-oracle",
        1,
        1,
        kernel="rbf",
        lengthscale=ls,
        variance=var,
        noise_ctx=noise_ctx,
        noise_tgt=noise_tgt,
        jitter=jitter,
    )
    xc = torch.tensor([-0.5, 0.4], dtype=torch.float64)
    yc = torch.tensor([0.8, -0.3], dtype=torch.float64)
    xt = torch.tensor([0.1], dtype=torch.float64)
    # by hand: two context points, explicit 2x2 inverse
    k11, k22 = var + noise_ctx**2 + jitter, var + noise_ctx**2 + jitter
    k12 = var * math.exp(-0.5 * (0.9 / ls) ** 2)
    det = k11 * k22 - k12 * k12
    inv = [[k22 / det, -k12 / det], [-k12 / det, k11 / det]]
    kt = [var * math.exp(-0.5 * (0.6 / ls) ** 2), var * math.exp(-0.5 * (0.3 / ls) ** 2)]
    w = [kt[0] * inv[0][0] + kt[1] * inv[1][0], kt[0] * inv[0][1] + kt[1] * inv[1][1]]
    mean_hand = w[0] * 0.8 + w[1] * (-0.3)
    var_hand = var - (w[0] * kt[0] + w[1] * kt[1]) + noise_tgt**2
    mean_mat, var_mat = _posterior(xc, yc, xt, ls, var, noise_ctx, noise_tgt, jitter)
    assert mean_mat.item() == pytest.approx(mean_hand, abs=1e-10)
    assert var_mat.item() == pytest.approx(var_hand, abs=1e-10)

    pred = predict(
        model, xc.float().view(1, 2, 1), yc.float().view(1, 2, 1), xt.float().view(1, 1, 1)
    )
    assert pred.mean.item() == pytest.approx(mean_hand, abs=1e-5)
    assert pred.stddev.item() == pytest.approx(math.sqrt(var_hand), abs=1e-5)


@pytest.mark.parametrize("noise_tgt", [0.0, 0.25])
def test_gp_oracle_matches_matrix_posterior_many_points(noise_tgt):
    ls, var, noise_ctx, jitter = 0.4, 1.0, 0.1, 1e-6
    model = tnpx.build_model(
        "gp-oracle", 1, 1, lengthscale=ls, noise_ctx=noise_ctx, noise_tgt=noise_tgt, jitter=jitter
    )
    xc, yc, xt = make_task(2, 6, 9, seed=18)
    pred = predict(model, xc, yc, xt)
    for i in range(2):
        mean, v = _posterior(
            xc[i, :, 0].double(),
            yc[i, :, 0].double(),
            xt[i, :, 0].double(),
            ls,
            var,
            noise_ctx,
            noise_tgt,
            jitter,
        )
        assert_close(pred.mean[i, :, 0], mean.float(), atol=1e-5, rtol=1e-5)
        assert_close(pred.stddev[i, :, 0], v.sqrt().float(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("noise_tgt", [0.0, 0.3])
def test_gp_oracle_empty_context_is_prior(noise_tgt):
    model = tnpx.build_model("gp-oracle", 1, 1, variance=2.0, noise_tgt=noise_tgt)
    _, _, xt = make_task(2, 0, 4)
    pred = predict(model, torch.zeros(2, 0, 1), torch.zeros(2, 0, 1), xt)
    assert_close(pred.mean, torch.zeros(2, 4, 1))
    assert_close(pred.stddev, torch.full((2, 4, 1), math.sqrt(2.0 + noise_tgt**2)))


@pytest.mark.parametrize("kernel", ["rbf", "matern12", "matern32", "matern52", "periodic", "se"])
def test_gp_oracle_every_kernel(kernel):
    model = tnpx.build_model("gp-oracle", 1, 1, kernel=kernel)
    xc, yc, xt = make_task(2, 5, 4, seed=19)
    pred = predict(model, xc, yc, xt)
    assert torch.isfinite(pred.mean).all() and (pred.stddev > 0).all()
    # posterior variance never exceeds the prior variance
    assert (pred.stddev <= 1.0 + 1e-6).all()


def test_gp_oracle_rejects_unknown_kernel():
    with pytest.raises(ValueError, match="rbf"):
        tnpx.build_model("gp-oracle", 1, 1, kernel="cosine")


def test_gp_oracle_predict_batch_uses_info():
    xc, yc, xt = make_task(3, 6, 5, seed=20)
    lengthscales = torch.tensor([0.1, 0.3, 1.5], dtype=torch.float64)
    info = {
        "kernel": torch.zeros(3, dtype=torch.long),
        "lengthscale": lengthscales,
        "period": torch.ones(3, dtype=torch.float64),
        "variance": torch.ones(3, dtype=torch.float64),
        "noise_ctx": torch.full((3,), 0.1, dtype=torch.float64),
        "noise_tgt": torch.zeros(3, dtype=torch.float64),
    }
    default = tnpx.build_model("gp-oracle", 1, 1)  # lengthscale 0.3
    with torch.no_grad():
        from_info = default.predict_batch(Batch(xc, yc, xt, info=info))
        plain = default.predict_batch(Batch(xc, yc, xt))  # no info: build-time defaults
    assert_same_prediction(plain, predict(default, xc, yc, xt))
    for i, ls in enumerate(lengthscales.tolist()):
        ref = predict(tnpx.build_model("gp-oracle", 1, 1, lengthscale=ls), xc, yc, xt)
        assert_close(from_info.mean[i], ref.mean[i], atol=1e-6, rtol=1e-5)
        assert_close(from_info.stddev[i], ref.stddev[i], atol=1e-6, rtol=1e-5)
    # tasks whose lengthscale differs from the default (0.3) give different predictions
    for i in (0, 2):
        assert not torch.allclose(from_info.mean[i], plain.mean[i], atol=1e-3)
    assert_close(from_info.mean[1], plain.mean[1], atol=1e-6, rtol=1e-5)


def test_gp_oracle_predict_batch_on_sampled_data():
    from tnpx.data import GPConfig, GPSampler, batch_at

    sampler = GPSampler(GPConfig(kernels=["rbf", "periodic", "matern32"]), batch_size=8, seed=0)
    batch = batch_at(sampler, 0)
    model = tnpx.build_model("gp-oracle", 1, 1)
    with torch.no_grad():
        ll = model.log_likelihood(batch)
    assert ll.shape == (8,)
    assert torch.isfinite(ll).all()


@pytest.mark.parametrize("n_ctx", [0, 5])
def test_gp_oracle_posterior_covariance_matches_matrix_formula(n_ctx):
    """The joint covariance (used to check joint samples): off-diagonals by the explicit
    inverse, the diagonal equal to forward's variance, the prior when there is no context."""
    ls, var, noise_ctx, noise_tgt, jitter = 0.6, 1.2, 0.15, 0.1, 1e-6
    model = tnpx.build_model(
        "gp-oracle", 1, 1, kernel="rbf", lengthscale=ls, variance=var,
        noise_ctx=noise_ctx, noise_tgt=noise_tgt, jitter=jitter,
    ).double()  # fmt: skip
    g = torch.Generator().manual_seed(3)
    xc = torch.rand(n_ctx, generator=g, dtype=torch.float64) * 4 - 2
    yc = torch.randn(n_ctx, generator=g, dtype=torch.float64)
    xt = torch.linspace(-1.0, 1.0, 7, dtype=torch.float64)
    cov = model.posterior_covariance(xc.view(1, -1, 1), yc.view(1, -1, 1), xt.view(1, -1, 1))[0]
    expected = _rbf(xt, xt, ls, var)
    if n_ctx:
        k_cc = _rbf(xc, xc, ls, var) + (noise_ctx**2 + jitter) * torch.eye(
            n_ctx, dtype=torch.float64
        )
        k_tc = _rbf(xt, xc, ls, var)
        expected = expected - k_tc @ torch.linalg.inv(k_cc) @ k_tc.T
    expected = expected + noise_tgt**2 * torch.eye(7, dtype=torch.float64)
    assert cov.dtype == torch.float64 and cov.shape == (7, 7)
    assert_close(cov, expected, atol=1e-9, rtol=1e-7)
    with torch.no_grad():
        marginal = model(xc.view(1, -1, 1), yc.view(1, -1, 1), xt.view(1, -1, 1)).variance
    assert_close(cov.diagonal(), marginal[0, :, 0].double(), atol=1e-9, rtol=1e-7)


def test_gp_oracle_rejects_two_outputs():
    with pytest.raises(ValueError, match="dim_y"):
        tnpx.build_model("gp-oracle", 1, 2)
