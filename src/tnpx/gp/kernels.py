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
from collections.abc import Iterator

import torch

KERNELS = ("rbf", "matern12", "matern32", "matern52", "periodic")
TREND_KERNELS = ("linear", "quadratic", "cubic")  # polynomial degree 1, 2, 3
ALL_KERNELS = KERNELS + TREND_KERNELS
ALIASES = {"se": "rbf", "eq": "rbf"}
_MATERN_SCALE = {"matern32": math.sqrt(3.0), "matern52": math.sqrt(5.0)}


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


def _dim_differences(x1: torch.Tensor, x2: torch.Tensor) -> Iterator[torch.Tensor]:
    """``x1_d - x2_d`` for each input dimension ``d`` in turn, ``[batch, n, m]`` each.

    One dimension at a time never holds ``[batch, n, m, dim_x]`` (the 2D prior's 909-point
    tasks spent most of a draw there), and the differences stay exact: a point met twice (a
    context point among the targets, the diagonal of ``k(x, x)``) is at distance exactly 0,
    which the ``|x|² + |y|² - 2 x.y`` form loses (a Matérn kernel's ``sqrt`` makes a 1e-16
    error 1e-8). Summing the dimensions in order gives the values of the former
    ``[batch, n, m, dim_x]`` sum bit for bit (for ``dim_x <= 2``)."""
    for d in range(x1.shape[-1]):
        yield x1[:, :, d, None] - x2[:, None, :, d]


def _scaled_sq_distance(
    x1: torch.Tensor, x2: torch.Tensor, lengthscale: torch.Tensor
) -> torch.Tensor:
    """Squared Euclidean distance between lengthscale-scaled inputs: ``[batch, n, m]``."""
    ls = lengthscale.view(-1, 1, 1)
    own = _in_place_ok(x1, x2, lengthscale)
    total = None
    for diff in _dim_differences(x1, x2):
        term = diff.div_(ls).pow_(2) if own else (diff / ls).pow(2)
        total = term if total is None else (total.add_(term) if own else total + term)
    if total is None:  # dim_x = 0: every point is at distance 0
        total = x1.new_zeros(x1.shape[0], x1.shape[1], x2.shape[1])
    return total


def _in_place_ok(*inputs: torch.Tensor | None) -> bool:
    """Whether results computed from ``inputs`` may be updated in place: autograd records no
    op on them, and they share one dtype (an in-place op would not promote as ``a * b`` does).
    Fresh ``[batch, n, m]`` temporaries are then reused: a pass over memory and an allocation
    saved per op, with the same operations in the same order (bit-identical values)."""
    given = [t for t in inputs if t is not None]
    if torch.is_grad_enabled() and any(t.requires_grad for t in given):
        return False
    return len({t.dtype for t in given}) <= 1


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
    own = _in_place_ok(x1, x2, lengthscale, period, variance, envelope)  # update k in place
    if name in TREND_KERNELS:
        ls2 = lengthscale.view(-1, 1, 1).pow(2)
        degree = TREND_KERNELS.index(name) + 1
        g = x1 @ x2.transpose(1, 2)
        if own:
            k = g.div_(ls2).add_(1.0).mul_(0.5).pow_(degree)
        else:
            k = (0.5 * (1.0 + g / ls2)).pow(degree)
    elif name == "periodic":
        if period is None:
            raise ValueError("the periodic kernel needs `period`")
        p = period.view(-1, 1, 1)
        s = None  # sum_d sin^2(pi |x_d - x'_d| / p), one dimension at a time
        for diff in _dim_differences(x1, x2):
            if own:
                term = diff.abs_().mul_(math.pi).div_(p).sin_().pow_(2)
            else:
                term = torch.sin(math.pi * diff.abs() / p).pow(2)
            s = term if s is None else (s.add_(term) if own else s + term)
        ls2 = lengthscale.view(-1, 1, 1).pow(2)
        k = s.mul_(-2.0).div_(ls2).exp_() if own else torch.exp(-2.0 * s / ls2)
    elif name == "rbf":
        d2 = _scaled_sq_distance(x1, x2, lengthscale)
        k = d2.mul_(-0.5).exp_() if own else torch.exp(-0.5 * d2)
    else:
        d2 = _scaled_sq_distance(x1, x2, lengthscale)
        r = d2.sqrt_() if own else _safe_sqrt(d2)  # d2 >= 0 and sqrt(0) = 0 exactly
        if name == "matern12":
            k = r.neg_().exp_() if own else torch.exp(-r)
        else:
            s = r.mul_(_MATERN_SCALE[name]) if own else _MATERN_SCALE[name] * r
            decay = s.neg().exp_() if own else torch.exp(-s)
            if name == "matern32":
                k = s.add_(1.0).mul_(decay) if own else (1.0 + s) * decay
            elif own:  # matern52: (1 + s) + s² / 3, as below
                third = s.pow(2).div_(3.0)
                k = s.add_(1.0).add_(third).mul_(decay)
            else:
                k = (1.0 + s + s.pow(2) / 3.0) * decay
    if envelope is not None:
        d2 = _scaled_sq_distance(x1, x2, envelope)
        k = k.mul_(d2.mul_(-0.5).exp_()) if own else k * torch.exp(-0.5 * d2)
    if variance is not None:
        k = k.mul_(variance.view(-1, 1, 1)) if own else k * variance.view(-1, 1, 1)
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
            term = kernel_matrix_mixed(kernel_ids[:, c], x1, x2, **column)
            total = total.add_(term) if _in_place_ok(total, term) else total + term
            continue
        column = {k: (v[rows, c] if v is not None else None) for k, v in params.items()}
        term = kernel_matrix_mixed(kernel_ids[rows, c], x1[rows], x2[rows], **column)
        if _in_place_ok(total, term):
            total = total.index_add_(0, rows, term)
        else:
            total = total.index_add(0, rows, term)
    return total
