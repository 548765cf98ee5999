"""``gp-oracle`` and the kernels against the TE paper's code (``docs/fidelity.md``, "GP
baselines").

The TE code's GP is the ground-truth predictor of its synthetic data: cambridge-mlg/tnp @
e2adb62406a2382b47c4a10f06b2d38c7aa97001 ``tnp/data/gp.py`` (``GPGroundTruthPredictor``,
``GPRegressionModel``: ``ConstantMean`` left at 0, the exact posterior, ``likelihood.marginal``)
with the kernels of ``tnp/networks/gp.py`` on GPyTorch 1.11 (``environment.yml``). The kernel
equations are written out here in float64 from GPyTorch 1.11's ``RBFKernel``, ``MaternKernel``
and ``PeriodicKernel.forward``; GPyTorch itself (a tnpx dependency) is a second check.
"""

from __future__ import annotations

import math

import gpytorch
import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.reference_ops import TOL, masked_task
from tnpx.gp.kernels import kernel_matrix


def gpytorch_kernel(name, x1, x2, lengthscale, period=None):
    """GPyTorch 1.11, one task ``x1 [n, d]``, ``x2 [m, d]``, one lengthscale for every axis:
    RBF ``exp(-|x - x'|^2 / (2 l^2))``; Matern ``r = |x - x'| / l``, ``exp(-sqrt(2 nu) r)``
    times ``1``, ``1 + sqrt(3) r``, ``1 + sqrt(5) r + 5/3 r^2`` (nu = 1/2, 3/2, 5/2);
    periodic ``exp(-2 sum_d sin^2(pi |x_d - x'_d| / p) / l)``: the lengthscale enters once,
    not squared."""
    diff = x1[:, None, :] - x2[None, :, :]
    if name == "periodic":
        return torch.exp(-2 * (torch.sin(math.pi * diff.abs() / period) ** 2 / lengthscale).sum(-1))
    r = torch.sqrt((diff**2).sum(-1)) / lengthscale
    if name == "rbf":
        return torch.exp(-(r**2) / 2)
    nu = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}[name]
    constant = {
        0.5: torch.ones_like(r),
        1.5: 1 + math.sqrt(3) * r,
        2.5: 1 + math.sqrt(5) * r + 5 / 3 * r**2,
    }[nu]
    return constant * torch.exp(-math.sqrt(2 * nu) * r)


def gpytorch_module(name, lengthscale, period=None):
    """The TE code's kernel classes' GPyTorch bases, float64, hyper-parameters set."""
    if name == "rbf":
        kernel = gpytorch.kernels.RBFKernel().double()
    elif name == "periodic":
        kernel = gpytorch.kernels.PeriodicKernel().double()
        kernel.period_length = period
    else:
        nu = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}[name]
        kernel = gpytorch.kernels.MaternKernel(nu=nu).double()
    kernel.lengthscale = lengthscale  # set in float64 (the raw parameter is stored)
    return kernel


def inputs(seed=0, dim_x=2):
    gen = torch.Generator().manual_seed(seed)
    return (
        3 * torch.randn(7, dim_x, generator=gen, dtype=torch.float64),
        3 * torch.randn(5, dim_x, generator=gen, dtype=torch.float64),
    )


@pytest.mark.parametrize("name", ["rbf", "matern12", "matern32", "matern52", "periodic"])
@pytest.mark.parametrize("lengthscale", [0.25, 1.0, 2.7])
def test_kernel_matrices_equal_the_te_code_kernels(name, lengthscale):
    """tnpx's stationary kernels are GPyTorch's, with one difference: tnpx's periodic kernel
    divides by ``l^2`` where GPyTorch divides by ``l``, so the TE code's periodic kernel at
    lengthscale ``l`` is tnpx's at ``sqrt(l)``."""
    x1, x2 = inputs()
    period = torch.tensor(2.0, dtype=torch.float64)
    ours_l = math.sqrt(lengthscale) if name == "periodic" else lengthscale
    ours = kernel_matrix(
        name,
        x1[None],
        x2[None],
        torch.tensor([ours_l], dtype=torch.float64),
        period=period[None],
    )[0]
    reference = gpytorch_kernel(name, x1, x2, lengthscale, period)
    assert_close(ours, reference, **TOL)
    with torch.no_grad():
        library = gpytorch_module(name, lengthscale, 2.0)(x1, x2).to_dense()
    # GPyTorch forms distances as |x|^2 + |x'|^2 - 2 x.x' (rounding up to ~1e-8 here)
    assert_close(library, reference, atol=1e-7, rtol=0)
    if name == "periodic":  # the same lengthscale is not the same kernel
        same_l = kernel_matrix(name, x1[None], x2[None], torch.tensor([lengthscale]).double(),
                               period=period[None])[0]  # fmt: skip
        assert lengthscale == 1.0 or not torch.allclose(same_l, reference)


def ground_truth_reference(xc, yc, xt, kernel, noise):
    """GPGroundTruthPredictor for one task: GPRegressionModel (ConstantMean at 0, the kernel)
    conditioned on all its context points, ``likelihood.marginal`` adding ``noise^2``:
    mean ``K_tc (K_cc + s^2 I)^-1 y``, variance ``k_tt - K_tc (K_cc + s^2 I)^-1 K_ct + s^2``."""
    k_cc = kernel(xc, xc) + noise**2 * torch.eye(len(xc), dtype=xc.dtype)
    k_tc = kernel(xt, xc)
    mean = k_tc @ torch.linalg.solve(k_cc, yc[:, 0])
    var = kernel(xt, xt).diagonal() - (k_tc * torch.linalg.solve(k_cc, k_tc.T).T).sum(-1)
    return mean[:, None], (var + noise**2).sqrt()[:, None]


@pytest.mark.parametrize("name", ["rbf", "matern52", "periodic"])
def test_gp_oracle_equals_the_ground_truth_predictor(name):
    """The TE protocol's oracle (``noise_tgt = noise_ctx``: the predictive of noisy ``y``),
    jitter 0, on a masked batch: each task is the code's predictor on its valid points."""
    lengthscale, period, noise = 0.7, 1.3, 0.1
    ours_l = math.sqrt(lengthscale) if name == "periodic" else lengthscale
    model = tnpx.build_model(
        "gp-oracle", 2, 1, kernel=name, lengthscale=ours_l, period=period,
        noise_ctx=noise, noise_tgt=noise, jitter=0.0,
    ).double()  # fmt: skip
    xc, yc, xt, mask = masked_task(dim_x=2, dim_y=1)
    pred = model(xc, yc, xt, mask_c=mask)

    def kernel(a, b):
        return gpytorch_kernel(name, a, b, lengthscale, period)

    for i in range(len(xc)):
        mean, std = ground_truth_reference(xc[i, mask[i]], yc[i, mask[i]], xt[i], kernel, noise)
        assert_close(pred.mean[i], mean, **TOL)
        assert_close(pred.stddev[i], std, **TOL)


@pytest.mark.parametrize("n_tasks", [1, 2])
def test_fitted_gp_kernels_are_the_te_paper_kernels(n_tasks):
    """``gp`` / ``mt-gp`` (no code of the TE paper fits a GP; its App. F.3-F.4 text): the GP
    of ``gp`` is ``s^2 exp(-1/2 sum_d (x_d - x'_d)^2 / l_d^2)`` (SE with a lengthscale per
    input axis, ``ScaleKernel``), that of ``mt-gp`` ``B[t, t'] exp(...)`` with ``B = W W^T +
    diag(v)`` a free 2 x 2 inter-task covariance; a padded row (observed flag 0) has no
    covariance with anything. Hyper-parameters random, float64."""
    from tnpx.models.gp_fit import _BatchGP  # the per-call GP behind both models

    gen = torch.Generator().manual_seed(3)
    batch, n, dim_x = 2, 6, 3
    x = torch.randn(batch, n, dim_x, generator=gen, dtype=torch.float64)
    task = torch.randint(0, n_tasks, (batch, n), generator=gen).double()
    observed = torch.tensor([[1, 1, 0, 1, 1, 1], [1, 0, 1, 1, 0, 1]], dtype=torch.float64)
    rows = torch.cat([x, task[..., None], observed[..., None]], -1)
    gp = _BatchGP(rows, torch.zeros(batch, n, dtype=torch.float64), n_tasks)
    lengthscale = 0.5 + torch.rand(batch, 1, dim_x, generator=gen, dtype=torch.float64)
    if n_tasks == 1:
        scale = 0.5 + torch.rand(batch, generator=gen, dtype=torch.float64)
        gp.covar_module.x_kernel.base_kernel.lengthscale = lengthscale
        gp.covar_module.x_kernel.outputscale = scale
        b = scale[:, None, None].expand(batch, 1, 1)
    else:
        factor = torch.randn(batch, n_tasks, n_tasks, generator=gen, dtype=torch.float64)
        var = 0.1 + torch.rand(batch, n_tasks, generator=gen, dtype=torch.float64)
        gp.covar_module.x_kernel.lengthscale = lengthscale
        gp.covar_module.task_kernel.covar_factor.data.copy_(factor)
        gp.covar_module.task_kernel.var = var
        b = factor @ factor.transpose(1, 2) + torch.diag_embed(var)
    with torch.no_grad():
        ours = gp.covar_module(rows).to_dense()
    for i in range(batch):
        diff = (x[i, :, None, :] - x[i, None, :, :]) / lengthscale[i, 0]
        t = task[i].long()
        k = b[i][t[:, None], t[None, :]] * torch.exp(-0.5 * (diff**2).sum(-1))
        k = k * observed[i, :, None] * observed[i, None, :]
        assert_close(ours[i], k, atol=1e-12, rtol=0)
