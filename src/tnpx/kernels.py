"""Covariance functions shared by the GP samplers and the GP oracle.

Every function is batched over tasks: inputs ``x1 [batch, n, dim_x]``, ``x2 [batch, m, dim_x]``
and per-task hyper-parameters ``[batch]``; the result is ``[batch, n, m]``.

``KERNELS`` are stationary and are what the ``gp`` sampler's ``kernels`` option names.
``TREND_KERNELS`` are the polynomial (Bayesian linear regression) kernels of degree 1-3,
``k = variance * ((1 + x.x' / lengthscale²) / 2)^degree``: non-stationary, the variance is
``variance`` where ``|x| = lengthscale``. They serve as components of composite priors;
kernel ids index ``ALL_KERNELS`` (``KERNELS`` first, so their ids are unchanged).
"""

from __future__ import annotations

import math

import torch

KERNELS = ("rbf", "matern12", "matern32", "matern52", "periodic")
TREND_KERNELS = ("linear", "quadratic", "cubic")  # polynomial degree 1, 2, 3
ALL_KERNELS = KERNELS + TREND_KERNELS
ALIASES = {"se": "rbf", "eq": "rbf"}


def canonical_kernel(name: str, choices: tuple[str, ...] = KERNELS) -> str:
    """Map a kernel name or alias (``se``, ``eq``) to its canonical name; reject one not in
    ``choices``."""
    key = ALIASES.get(name.lower(), name.lower())
    if key not in choices:
        raise ValueError(f"unknown kernel {name!r}; choose from {', '.join(choices)}")
    return key


def is_stationary(kernel_ids: torch.Tensor) -> bool:
    """Whether every id of ``kernel_ids`` (indices into ``ALL_KERNELS``) is a stationary kernel,
    so that ``k(x, x) = k(0, 0)``."""
    return bool((kernel_ids < len(KERNELS)).all())


def _scaled_sq_distance(
    x1: torch.Tensor, x2: torch.Tensor, lengthscale: torch.Tensor
) -> torch.Tensor:
    """Squared Euclidean distance between lengthscale-scaled inputs: ``[batch, n, m]``."""
    ls = lengthscale.view(-1, 1, 1)
    diff = (x1[:, :, None, :] - x2[:, None, :, :]) / ls[..., None]
    return diff.pow(2).sum(-1)


def _safe_sqrt(d2: torch.Tensor) -> torch.Tensor:
    """``sqrt(d2)`` with a zero (not NaN) gradient where ``d2 = 0``: a query that lands on an
    observed input (as BoTorch's optimiser does at the edges of the box) keeps a finite
    gradient."""
    positive = d2 > 0
    return torch.where(positive, torch.where(positive, d2, 1.0).sqrt(), 0.0)


def kernel_matrix(
    name: str,
    x1: torch.Tensor,
    x2: torch.Tensor,
    lengthscale: torch.Tensor,
    period: torch.Tensor | None = None,
    variance: torch.Tensor | None = None,
    envelope: torch.Tensor | None = None,
) -> torch.Tensor:
    """Covariance ``k(x1, x2)`` of kernel ``name``.

    Args:
        name: one of ``ALL_KERNELS`` (or an alias).
        x1: ``[batch, n, dim_x]``; x2: ``[batch, m, dim_x]``.
        lengthscale: ``[batch]`` isotropic lengthscale.
        period: ``[batch]``, periodic kernel only:
            ``k = exp(-2 sum_d sin^2(pi |x_d - x'_d| / p) / l^2)``.
        variance: ``[batch]`` output scale (default 1).
        envelope: ``[batch]``, optional: multiply by an RBF of this lengthscale (a locally
            periodic kernel when ``name`` is periodic); ``inf`` multiplies by 1.

    Returns:
        ``[batch, n, m]``.
    """
    name = canonical_kernel(name, ALL_KERNELS)
    if name in TREND_KERNELS:
        ls2 = lengthscale.view(-1, 1, 1).pow(2)
        k = (0.5 * (1.0 + x1 @ x2.transpose(1, 2) / ls2)).pow(TREND_KERNELS.index(name) + 1)
    elif name == "periodic":
        if period is None:
            raise ValueError("the periodic kernel needs `period`")
        diff = (x1[:, :, None, :] - x2[:, None, :, :]).abs()
        s = torch.sin(math.pi * diff / period.view(-1, 1, 1, 1)).pow(2).sum(-1)
        k = torch.exp(-2.0 * s / lengthscale.view(-1, 1, 1).pow(2))
    elif name == "rbf":
        k = torch.exp(-0.5 * _scaled_sq_distance(x1, x2, lengthscale))
    else:
        r = _safe_sqrt(_scaled_sq_distance(x1, x2, lengthscale))
        if name == "matern12":
            k = torch.exp(-r)
        elif name == "matern32":
            s = math.sqrt(3.0) * r
            k = (1.0 + s) * torch.exp(-s)
        else:  # matern52
            s = math.sqrt(5.0) * r
            k = (1.0 + s + s.pow(2) / 3.0) * torch.exp(-s)
    if envelope is not None:
        k = k * torch.exp(-0.5 * _scaled_sq_distance(x1, x2, envelope))
    if variance is not None:
        k = k * variance.view(-1, 1, 1)
    return k


def kernel_matrix_mixed(
    kernel_ids: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor, **params: torch.Tensor
) -> torch.Tensor:
    """Like :func:`kernel_matrix` but each task picks its kernel: ``kernel_ids [batch]``
    indexes ``ALL_KERNELS``. Hyper-parameter tensors are ``[batch]``.

    ``kernel_ids [batch, n_components]`` with hyper-parameters ``[batch, n_components]``: each
    task's kernel is the sum of its components (:func:`kernel_matrix_sum`)."""
    if kernel_ids.dim() == 2:
        return kernel_matrix_sum(kernel_ids, x1, x2, **params)
    kinds = kernel_ids.unique().tolist()
    if len(kinds) == 1:  # one kernel for the whole batch (KR-1): no gather and scatter
        return kernel_matrix(ALL_KERNELS[kinds[0]], x1, x2, **params)
    out = x1.new_zeros(x1.shape[0], x1.shape[1], x2.shape[1])
    for kid in kinds:
        rows = kernel_ids == kid
        sub = {k: (v[rows] if v is not None else None) for k, v in params.items()}
        out[rows] = kernel_matrix(ALL_KERNELS[kid], x1[rows], x2[rows], **sub)
    return out


def kernel_matrix_sum(
    kernel_ids: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor, **params: torch.Tensor
) -> torch.Tensor:
    """A sum of kernels per task: ``sum_c k_c(x1, x2)``, ``[batch, n, m]``.

    Args:
        kernel_ids: ``[batch, n_components]``, indices into ``ALL_KERNELS``.
        x1: ``[batch, n, dim_x]``; x2: ``[batch, m, dim_x]``.
        params: ``lengthscale``, ``period``, ``variance`` (and optionally ``envelope``):
            ``[batch, n_components]`` each; a component with variance 0 is absent (it still
            needs a finite lengthscale and period).

    A sum of stationary kernels is stationary, so ``k(x, x) = k(0, 0) = sum_c variance_c``;
    with a ``TREND_KERNELS`` component it is not (:func:`is_stationary`).
    """
    total = x1.new_zeros(x1.shape[0], x1.shape[1], x2.shape[1])
    variance = params.get("variance")
    for c in range(kernel_ids.shape[1]):
        # Only the tasks that hold component c: adding a variance-0 term changes no value.
        rows = (variance[:, c] != 0).nonzero()[:, 0] if variance is not None else None
        if rows is not None and len(rows) == 0:
            continue
        if rows is None or len(rows) == len(kernel_ids):
            column = {k: (v[:, c] if v is not None else None) for k, v in params.items()}
            total = total + kernel_matrix_mixed(kernel_ids[:, c], x1, x2, **column)
            continue
        column = {k: (v[rows, c] if v is not None else None) for k, v in params.items()}
        term = kernel_matrix_mixed(kernel_ids[rows, c], x1[rows], x2[rows], **column)
        total = total.index_add(0, rows, term)
    return total
