"""GP task sampler priors (tnpx.data): sampled functions have the kernel's covariance, and the
variance, lengthscale, noise and period priors and the kernel mixture are as documented."""

from __future__ import annotations

import math

import pytest
import torch

from tnpx.data import batch_at, build_sampler
from tnpx.gp.kernels import KERNELS, kernel_matrix

# --- GP priors --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_sample_covariance_matches_kernel(kernel):
    ls = 0.6
    sampler = build_sampler(
        "gp",
        batch_size=4000,
        seed=0,
        kernels=[kernel],
        lengthscale_prior="fixed",
        lengthscale_a=ls,
        period_min=1.0,
        period_max=1.0,
        n_random=4,
        n_grid=4,
        min_ctx=1,
        max_ctx=4,
    )
    b = batch_at(sampler, 0)
    y = b.yt[..., 0].double()  # [4000, 8], noiseless f at shared inputs
    cov = y.T @ y / y.shape[0]  # zero-mean prior
    x = b.xt[:1].double()
    k = kernel_matrix(
        kernel,
        x,
        x,
        torch.tensor([ls], dtype=torch.float64),
        period=torch.tensor([1.0], dtype=torch.float64),
    )[0]
    assert (cov - k).abs().max().item() < 0.1
    assert y.mean(0).abs().max().item() < 0.1


def test_variance_option_scales_the_prior():
    sampler = build_sampler(
        "gp", batch_size=2000, seed=0, variance=4.0, n_random=3, n_grid=3, min_ctx=1, max_ctx=3
    )
    y = batch_at(sampler, 0).yt
    assert y.var().item() == pytest.approx(4.0, rel=0.1)


def test_beta_lengthscale_prior():
    sampler = build_sampler(
        "gp", batch_size=5000, seed=0, n_random=3, n_grid=2, min_ctx=1, max_ctx=3
    )
    ls = batch_at(sampler, 0).info["lengthscale"]
    assert ((ls > 0) & (ls < 1)).all()
    assert ls.mean().item() == pytest.approx(0.3, abs=0.01)  # Beta(3, 7) mean
    assert ls.var().item() == pytest.approx(21 / (100 * 11), rel=0.1)  # ab / ((a+b)^2 (a+b+1))


def test_loguniform_lengthscale_prior():
    sampler = build_sampler(
        "gp",
        batch_size=5000,
        seed=0,
        lengthscale_prior="loguniform",
        lengthscale_a=0.25,
        lengthscale_b=4.0,
        n_random=3,
        n_grid=2,
        min_ctx=1,
        max_ctx=3,
    )
    log_ls = batch_at(sampler, 0).info["lengthscale"].log()
    assert log_ls.min() >= math.log(0.25) and log_ls.max() <= math.log(4.0)
    assert log_ls.mean().item() == pytest.approx(0.0, abs=0.05)


def test_loguniform_noise_prior_per_task_and_shared_by_targets():
    sampler = build_sampler(
        "gp",
        batch_size=2000,
        seed=0,
        noise_prior="loguniform",
        noise_range=[0.02, 0.5],
        n_random=20,
        n_grid=2,
        min_ctx=20,
        max_ctx=20,
    )
    b = batch_at(sampler, 0)
    noise = b.info["noise_ctx"]
    assert torch.equal(noise, b.info["noise_tgt"])
    assert noise.min() >= 0.02 and noise.max() <= 0.5
    assert noise.log().mean().item() == pytest.approx(0.5 * math.log(0.02 * 0.5), abs=0.05)
    # kr layout: context values are the targets' noiseless values plus each task's own noise
    resid = (b.yc.double() - b.yt[:, :20].double()).squeeze(-1)  # targets noisy too
    ratio = resid.std(dim=1) / (noise * math.sqrt(2))
    assert ratio.median().item() == pytest.approx(1.0, abs=0.05)


def test_period_uniform_prior():
    sampler = build_sampler(
        "gp",
        batch_size=2000,
        seed=0,
        kernels=["periodic"],
        n_random=3,
        n_grid=2,
        min_ctx=1,
        max_ctx=3,
    )
    period = batch_at(sampler, 0).info["period"]
    assert period.min() >= 0.5 and period.max() <= 2.0
    assert period.mean().item() == pytest.approx(1.25, abs=0.03)


def test_kernel_mixture_uses_every_kernel():
    sampler = build_sampler(
        "gp",
        batch_size=300,
        seed=0,
        kernels=["rbf", "periodic", "matern52"],
        n_random=3,
        n_grid=2,
        min_ctx=1,
        max_ctx=3,
    )
    ids = batch_at(sampler, 0).info["kernel"]
    expected = {KERNELS.index(k) for k in ("rbf", "periodic", "matern52")}
    assert set(ids.tolist()) == expected
