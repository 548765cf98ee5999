"""The ``gp-oracle`` on the v3 composite prior (issue 33, item 2): exact on polynomial trends
(non-stationary: ``k(x, x)`` varies with ``x``), locally periodic components and near
noise-free tasks."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.testing import assert_close

from tnpx.data import batch_at, build_sampler
from tnpx.gp.kernels import kernel_matrix_mixed
from tnpx.models import build_model

V3 = dict(
    kernels=["rbf", "matern12", "matern32", "matern52", "periodic"],
    lengthscale_prior="loguniform",
    lengthscale_a=0.1,
    lengthscale_b=2.0,
    noise_prior="loguniform",
    layout="uniform",
    tgt_range=[-6.0, 6.0],
    n_tgt=40,
    composite_prob=1.0,
    polynomial_prob=1.0,
    locally_periodic_prob=0.5,
    quiet_prob=0.5,
)
PARAMS = ("lengthscale", "period", "variance", "envelope")


def oracle():
    return build_model("gp-oracle", dim_x=1, dim_y=1).double()


def float64(batch):
    """The batch with its inputs and outputs in float64 (the oracle answers in their dtype)."""
    names = ("xc", "yc", "xt", "yt")
    return dataclasses.replace(batch, **{n: getattr(batch, n).double() for n in names})


def exact_posterior(batch, jitter: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance ``[batch, n_tgt]`` of ``y_t`` by dense solves in float64."""
    info = batch.info
    params = {k: info[k] for k in PARAMS}
    xc, yc, xt = batch.xc.double(), batch.yc.double(), batch.xt.double()
    k_cc = kernel_matrix_mixed(info["kernel"], xc, xc, **params)
    k_tc = kernel_matrix_mixed(info["kernel"], xt, xc, **params)
    k_tt = kernel_matrix_mixed(info["kernel"], xt, xt, **params)
    eye = torch.eye(xc.shape[1], dtype=torch.float64)
    k_cc = k_cc + (info["noise_ctx"].pow(2)[:, None, None] + jitter) * eye
    mean = (k_tc @ torch.linalg.solve(k_cc, yc))[..., 0]
    cov = k_tt - k_tc @ torch.linalg.solve(k_cc, k_tc.transpose(1, 2))
    var = cov.diagonal(dim1=1, dim2=2) + info["noise_tgt"].pow(2)[:, None]
    return mean, var


@pytest.mark.parametrize("step", [0, 1])
def test_oracle_is_the_exact_posterior_on_v3_tasks(step):
    batch = batch_at(build_sampler("gp-composite", 8, 0, **V3, min_ctx=3, max_ctx=60), step)
    assert (batch.info["variance"][:, 3] > 0).all()  # every task has a polynomial trend
    dist = oracle().predict_batch(float64(batch))
    mean, var = exact_posterior(batch)
    assert_close(dist.mean[..., 0], mean, rtol=1e-6, atol=1e-8)
    assert_close(dist.variance[..., 0], var, rtol=1e-6, atol=1e-10)


def test_oracle_prior_variance_grows_with_a_polynomial_trend():
    """No context: the predictive variance is ``k(x, x) + noise²``, which a polynomial trend
    makes grow with ``|x|`` (``k(0, 0)`` would be wrong away from the origin)."""
    batch = batch_at(build_sampler("gp-composite", 8, 0, **V3, min_ctx=0, max_ctx=0), 0)
    assert batch.xc.shape[1] == 0
    variance = oracle().predict_batch(float64(batch)).variance[..., 0]
    _, want = exact_posterior_without_context(batch)
    assert_close(variance, want, rtol=1e-10, atol=1e-12)
    far, near = batch.xt[..., 0].abs() > 4, batch.xt[..., 0].abs() < 1
    for i in range(8):
        assert variance[i][far[i]].min() > variance[i][near[i]].max()


def exact_posterior_without_context(batch) -> tuple[torch.Tensor, torch.Tensor]:
    info, xt = batch.info, batch.xt.double()
    k_tt = kernel_matrix_mixed(info["kernel"], xt, xt, **{k: info[k] for k in PARAMS})
    var = k_tt.diagonal(dim1=1, dim2=2) + info["noise_tgt"].pow(2)[:, None]
    return torch.zeros_like(var), var


def test_oracle_is_calibrated_on_near_noise_free_tasks():
    """Quiet tasks' functions carry the sampler's Cholesky jitter as noise; the oracle must
    count it, or its intervals are far too narrow where the context pins the function."""
    options = {**V3, "quiet_prob": 1.0, "polynomial_prob": 0.5, "tgt_range": [-2.0, 2.0]}
    batch = batch_at(build_sampler("gp-composite", 400, 0, **options, min_ctx=60, max_ctx=60), 0)
    dist = oracle().predict_batch(float64(batch))
    z2 = ((batch.yt.double() - dist.mean) ** 2 / dist.variance).mean().item()
    assert 0.85 < z2 < 1.15
