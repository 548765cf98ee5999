"""The covariance functions shared by the GP samplers and the GP oracle (tnpx.gp.kernels)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from tnpx.data import (
    GPConfig,
    GPSampler,
    batch_at,
    build_sampler,
)
from tnpx.gp.kernels import KERNELS, canonical_kernel, kernel_matrix, kernel_matrix_mixed

# --- kernels ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["rbf", "matern12", "matern32", "matern52", "periodic", "se", "eq", "RBF"]
)
def test_every_kernel_name_samples(name):
    sampler = build_sampler("gp", batch_size=3, seed=0, kernels=[name])
    b = batch_at(sampler, 0)
    assert torch.isfinite(b.yt).all() and torch.isfinite(b.yc).all()
    assert (b.info["kernel"] == KERNELS.index(canonical_kernel(name))).all()


def test_aliases():
    assert canonical_kernel("se") == canonical_kernel("eq") == "rbf"
    x = torch.randn(2, 5, 1)
    ls = torch.tensor([0.5, 1.0])
    assert torch.equal(kernel_matrix("se", x, x, ls), kernel_matrix("rbf", x, x, ls))


def test_unknown_kernel_lists_valid_ones():
    for make in (
        lambda: canonical_kernel("cosine"),
        lambda: GPSampler(GPConfig(kernels=["cosine"])),
        lambda: build_sampler("gp", kernels=["rbf", "cosine"]),
    ):
        with pytest.raises(ValueError) as err:
            make()
        for k in KERNELS:
            assert k in str(err.value)
        assert "cosine" in str(err.value)


@pytest.mark.parametrize("name", ["rbf", "matern12", "matern32", "matern52", "periodic"])
@pytest.mark.parametrize("dim_x", [1, 2])
def test_kernel_matrix_symmetric_psd_unit_diagonal(name, dim_x):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(3, 20, dim_x, generator=g, dtype=torch.float64) * 4 - 2
    ls = torch.tensor([0.2, 0.5, 1.5], dtype=torch.float64)
    period = torch.tensor([0.7, 1.0, 2.0], dtype=torch.float64)
    for variance in (None, torch.ones(3, dtype=torch.float64)):
        k = kernel_matrix(name, x, x, ls, period=period, variance=variance)
        assert k.shape == (3, 20, 20)
        assert_close(k, k.transpose(1, 2))
        assert_close(k.diagonal(dim1=1, dim2=2), torch.ones(3, 20, dtype=torch.float64))
        assert torch.linalg.eigvalsh(k).min().item() > -1e-8
        assert (k <= 1 + 1e-12).all()
    k2 = kernel_matrix(
        name, x, x, ls, period=period, variance=torch.full((3,), 2.5, dtype=torch.float64)
    )
    assert_close(k2.diagonal(dim1=1, dim2=2), torch.full((3, 20), 2.5, dtype=torch.float64))


def test_kernel_values_at_known_distances():
    x1 = torch.zeros(1, 1, 1, dtype=torch.float64)
    x2 = torch.full((1, 1, 1), 0.6, dtype=torch.float64)
    ls = torch.tensor([0.3], dtype=torch.float64)
    r = 2.0  # 0.6 / 0.3
    s3, s5 = math.sqrt(3) * r, math.sqrt(5) * r
    expected = {
        "rbf": math.exp(-0.5 * r * r),
        "matern12": math.exp(-r),
        "matern32": (1 + s3) * math.exp(-s3),
        "matern52": (1 + s5 + s5 * s5 / 3) * math.exp(-s5),
    }
    for name, value in expected.items():
        assert kernel_matrix(name, x1, x2, ls).item() == pytest.approx(value, rel=1e-12)
    period = torch.tensor([2.5], dtype=torch.float64)
    per = math.exp(-2 * math.sin(math.pi * 0.6 / 2.5) ** 2 / 0.3**2)
    assert kernel_matrix("periodic", x1, x2, ls, period=period).item() == pytest.approx(per)
    # periodic: one period apart is perfectly correlated
    assert kernel_matrix("periodic", x1, x1 + 2.5, ls, period=period).item() == pytest.approx(1.0)


def test_periodic_kernel_needs_period():
    x = torch.zeros(1, 2, 1)
    with pytest.raises(ValueError, match="period"):
        kernel_matrix("periodic", x, x, torch.ones(1))


def test_kernel_matrix_mixed_matches_per_kernel():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(5, 6, 1, generator=g, dtype=torch.float64)
    ids = torch.tensor([0, 4, 2, 0, 3])
    params = {
        "lengthscale": torch.rand(5, generator=g, dtype=torch.float64) + 0.2,
        "period": torch.rand(5, generator=g, dtype=torch.float64) + 0.5,
        "variance": torch.rand(5, generator=g, dtype=torch.float64) + 0.5,
    }
    k = kernel_matrix_mixed(ids, x, x, **params)
    for i, kid in enumerate(ids.tolist()):
        one = kernel_matrix(
            KERNELS[kid], x[i : i + 1], x[i : i + 1], **{n: v[i : i + 1] for n, v in params.items()}
        )
        assert_close(k[i : i + 1], one)


@pytest.mark.parametrize("name", KERNELS)
def test_gradient_is_finite_where_inputs_coincide(name):
    """BoTorch's optimiser evaluates acquisitions at observed inputs (the box's edges)."""
    x = torch.tensor([[[0.5], [1.0]]], dtype=torch.float64, requires_grad=True)
    ls, period = torch.tensor([0.7], dtype=torch.float64), torch.tensor([1.3], dtype=torch.float64)
    kernel_matrix(name, x, x.detach(), ls, period=period).sum().backward()
    assert torch.isfinite(x.grad).all()
