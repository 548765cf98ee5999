"""The Bayes-optimal predictive of a GP prior: GPs averaged over the prior's hyper-parameters.

The GP oracle (``gp-oracle``) predicts with the hyper-parameters that generated each task. No
model that sees only the context can know them: the best predictive any model trained on a
prior can reach is the posterior predictive with the hyper-parameters integrated out,

    p(y_t | x_t, D_c) = sum_j w_j N(y_t | mu_j(x_t), s_j^2(x_t)),
    w_j ∝ pi_j p(y_c | x_c, theta_j),

a mixture over the prior's kernels and hyper-parameters ``theta_j`` with prior weights
``pi_j``. The gap between the oracle and this average is the part of a model's gap to the
oracle that no amount of training removes. Here the integral is an adaptive midpoint rule
(:class:`HyperGrid`, in :mod:`.hyper_grid`): the prior's (lengthscale, frequency) box is cut
into cells, each carrying its prior mass at its midpoint, and the cells holding the posterior
mass are split again and again (with many context points the evidence is sharply peaked in
the period and lengthscale, far narrower than any fixed grid affordable per task). Every
stage is itself a valid predictive (Bayes under a discretised prior), and refining moves it
towards the exact average.

Cost: for each (kernel, lengthscale, period) one eigendecomposition ``K_cc = U diag(l) U^T``
of the context covariance serves every noise level of the grid, since
``K_cc + s^2 I = U diag(l + s^2) U^T``. Float64 throughout.
"""

from __future__ import annotations

import math

import torch

from ..batch import Batch
from .hyper_grid import Cells, HyperGrid, concat_cells
from .kernels import kernel_matrix

__all__ = ["JITTER", "Cells", "HyperGrid", "average_log_likelihood"]

JITTER = 1e-6  # added to the noise variance, as the GP oracle does


def average_log_likelihood(
    batch: Batch, grid: HyperGrid, chunk: int = 64, per_target: bool = False
) -> torch.Tensor:
    """Per-task LL per target point ``[batch]`` of the Bayesian model average: the log
    mixture density of each target, averaged over targets (as
    :meth:`NeuralProcess.log_likelihood` scores a model). Context masks are not supported.

    Args:
        batch: ``xc [batch, n_ctx, 1]``, ``yc [batch, n_ctx, 1]``, ``xt``, ``yt``.
        grid: the prior's grid.
        chunk: cells decomposed at once (bounds memory).
        per_target: return each target's log density, ``[batch, n_tgt]`` (e.g. to split
            interpolation from extrapolation), not their mean.
    """
    if batch.yt is None:
        raise ValueError("batch.yt is None: the log-likelihood needs target outputs")
    if batch.mask_c is not None:
        raise ValueError("average_log_likelihood does not support padded (masked) batches")
    if batch.yc.shape[-1] != 1 or batch.xc.shape[-1] != 1:
        raise ValueError("average_log_likelihood needs dim_x = dim_y = 1")
    tasks = range(batch.batch_size)
    densities = torch.stack([_target_log_densities(batch, i, grid, chunk) for i in tasks])
    return densities if per_target else densities.mean(-1)


def _target_log_densities(batch: Batch, i: int, grid: HyperGrid, chunk: int) -> torch.Tensor:
    """Task ``i``'s log mixture density at each of its targets, ``[n_tgt]``."""
    f64 = torch.float64
    data = (
        batch.xc[i].to(f64),
        batch.yc[i, :, 0].to(f64),
        batch.xt[i].to(f64),
        batch.yt[i, :, 0].to(f64),
    )
    noise_var = grid.noises.pow(2) + JITTER  # [n_noise]
    if grid.target_noise is not None:
        target_var = torch.full_like(noise_var, grid.target_noise**2)
    else:
        target_var = noise_var if grid.noisy_targets else torch.zeros_like(noise_var)
    log_noise_mass = -math.log(noise_var.numel())
    # Per kernel: its cells, each cell's log posterior weight (unnormalised) per noise level
    # [cells, n_noise] and its per-target log predictive densities [cells, n_noise, n_tgt].
    leaves = {}
    for kernel in grid.kernels:
        cells = grid.initial_cells(kernel)
        leaves[kernel] = (
            cells,
            *_evaluate(kernel, cells, grid, data, noise_var, target_var, chunk),
        )
    log_evidence, settled = None, 0
    for _ in range(grid.refinements):
        cell_weight = {  # log posterior mass of each cell, noise summed out
            k: c.log_mass + log_noise_mass + ml.logsumexp(-1) for k, (c, ml, _) in leaves.items()
        }
        weights = torch.cat(list(cell_weight.values()))
        estimate = weights.logsumexp(0).item()  # the rule's log p(y_c)
        if log_evidence is not None:
            settled = settled + 1 if abs(estimate - log_evidence) < grid.tolerance else 0
            if settled == 2:
                break
        log_evidence = estimate
        top = weights.max()
        cutoff = max(
            top + math.log(grid.keep),
            weights.sort(descending=True).values[min(grid.max_split, weights.numel()) - 1],
        )
        split_any = False
        for kernel, (cells, log_ml, log_pred) in leaves.items():
            heavy = cell_weight[kernel] >= cutoff
            children = cells.select(heavy).split()
            if children.log_mass.numel() == int(heavy.sum()):  # nothing left to split
                continue
            split_any = True
            new_ml, new_pred = _evaluate(kernel, children, grid, data, noise_var, target_var, chunk)
            light = ~heavy
            leaves[kernel] = (
                concat_cells(cells.select(light), children),
                torch.cat([log_ml[light], new_ml]),
                torch.cat([log_pred[light], new_pred]),
            )
        if not split_any:
            break
    joint, evidence = [], []
    for cells, log_ml, log_pred in leaves.values():
        log_w = cells.log_mass[:, None] + log_noise_mass + log_ml  # [cells, n_noise]
        evidence.append(log_w.reshape(-1))
        joint.append((log_w[..., None] + log_pred).reshape(-1, log_pred.shape[-1]))
    return torch.cat(joint).logsumexp(0) - torch.cat(evidence).logsumexp(0)


def _evaluate(
    kernel: str,
    cells: Cells,
    grid: HyperGrid,
    data: tuple[torch.Tensor, ...],
    noise_var: torch.Tensor,
    target_var: torch.Tensor,
    chunk: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_setting_terms` for every cell of ``kernel``, ``chunk`` cells at a time:
    ``[cells, n_noise]`` and ``[cells, n_noise, n_tgt]``; ``data`` is (xc, yc, xt, yt)."""
    lengthscales, periods = cells.log_lengthscale.exp(), 1 / cells.frequency
    log_ml, log_pred = [], []
    for start in range(0, lengthscales.numel(), chunk):
        ml, pred = _setting_terms(
            kernel,
            lengthscales[start : start + chunk],
            periods[start : start + chunk],
            grid.variance,
            *data,
            noise_var,
            target_var,
        )
        log_ml.append(ml)
        log_pred.append(pred)
    return torch.cat(log_ml), torch.cat(log_pred)


def _setting_terms(
    kernel: str,
    ls: torch.Tensor,
    per: torch.Tensor,
    variance: float,
    xc: torch.Tensor,
    yc: torch.Tensor,
    xt: torch.Tensor,
    yt: torch.Tensor,
    noise_var: torch.Tensor,
    target_var: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log evidence ``[settings, noises]`` and per-target predictive log densities
    ``[settings, noises, n_tgt]`` of each (lengthscale, period) setting and noise level.

    xc ``[n_ctx, 1]``, yc ``[n_ctx]``, xt ``[n_tgt, 1]``, yt ``[n_tgt]``."""
    c, n = ls.numel(), xc.shape[0]
    var = torch.full_like(ls, variance)
    prior_var = variance  # stationary kernels: k(x, x) = variance
    if n == 0:  # no context: the prior at every setting
        log_ml = torch.zeros(c, noise_var.numel(), dtype=ls.dtype)
        pred_var = (prior_var + target_var)[None, :, None].expand(c, -1, yt.numel())
        mean = torch.zeros_like(pred_var)
    else:
        k_cc = kernel_matrix(kernel, xc.expand(c, -1, -1), xc.expand(c, -1, -1), ls, per, var)
        k_tc = kernel_matrix(kernel, xt.expand(c, -1, -1), xc.expand(c, -1, -1), ls, per, var)
        eigval, eigvec = torch.linalg.eigh(k_cc)  # K_cc = U diag(l) U^T
        eigval = eigval.clamp_min(0.0)
        beta = (eigvec.transpose(1, 2) @ yc[None, :, None])[..., 0]  # U^T y  [c, n]
        a = k_tc @ eigvec  # K_tc U  [c, n_tgt, n]
        d = eigval[:, None, :] + noise_var[None, :, None]  # eigenvalues of K_cc + s^2 I
        # log N(y_c | 0, K_cc + s^2 I) (Rasmussen & Williams Eq. 2.30)
        log_ml = -0.5 * (beta[:, None, :].pow(2) / d + d.log()).sum(-1) - 0.5 * n * math.log(
            2 * math.pi
        )
        # Predictive mean and variance (R&W Eqs. 2.25-2.26) through the eigenbasis
        mean = torch.einsum("ctn,csn->cst", a, beta[:, None, :] / d)
        latent_var = prior_var - torch.einsum("ctn,csn->cst", a.pow(2), 1.0 / d)
        pred_var = latent_var.clamp_min(1e-12) + target_var[None, :, None]
    log_pred = -0.5 * ((yt - mean).pow(2) / pred_var + pred_var.log() + math.log(2 * math.pi))
    return log_ml, log_pred
