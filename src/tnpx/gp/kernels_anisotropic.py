"""Anisotropic, rotated stationary kernels for 2D (or any-D) inputs, and their sums.

A component ``c`` is an isotropic kernel of :data:`tnpx.gp.kernels.KERNELS` applied to linearly
mapped inputs: ``k_c(x, x') = variance_c * k_iso(|A_c (x - x')|)``, and in 2D
``A = diag(1 / l1, 1 / l2) R(theta)`` (:func:`transform_matrix`): lengthscale ``l1`` along the
direction at angle ``theta`` from the first axis, ``l2`` across it. Mapping the inputs first
(``z = A x``) lets the isotropic kernels of :mod:`tnpx.gp.kernels` do the rest with lengthscale 1.
"""

from __future__ import annotations

import torch

from .kernels import _in_place_ok, kernel_matrix_mixed


def transform_matrix(lengthscales: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """``A = diag(1 / l1, 1 / l2) R(theta)`` with ``R(theta) = [[cos, sin], [-sin, cos]]`` (the
    coordinates along and across the direction at ``theta``).

    Args:
        lengthscales: ``[..., 2]``; angle: ``[...]`` (radians).

    Returns:
        ``[..., 2, 2]``.
    """
    cos, sin = angle.cos(), angle.sin()
    rotation = torch.stack([torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)], -2)
    return rotation / lengthscales[..., :, None]


def anisotropic_kernel_matrix(
    kernel_ids: torch.Tensor,
    transform: torch.Tensor,
    variance: torch.Tensor,
    x1: torch.Tensor,
    x2: torch.Tensor,
) -> torch.Tensor:
    """``sum_c variance_c k_c(|A_c (x1 - x2)|)`` per task: ``[batch, n, m]``.

    Args:
        kernel_ids: ``[batch, n_components]``, indices into ``KERNELS`` (not ``periodic``).
        transform: ``[batch, n_components, dim_x, dim_x]``, the maps ``A_c``.
        variance: ``[batch, n_components]``; a component with variance 0 is absent.
        x1: ``[batch, n, dim_x]``; x2: ``[batch, m, dim_x]``.
    """
    ones = variance.new_ones(variance.shape[0])
    total = x1.new_zeros(x1.shape[0], x1.shape[1], x2.shape[1])
    for c in range(kernel_ids.shape[1]):
        a_t = transform[:, c].transpose(-1, -2).to(x1.dtype)
        params = {"lengthscale": ones, "period": ones, "variance": variance[:, c]}
        z1 = x1 @ a_t
        z2 = z1 if x2 is x1 else x2 @ a_t  # k(x, x): map the inputs once
        term = kernel_matrix_mixed(kernel_ids[:, c], z1, z2, **params)
        total = total.add_(term) if _in_place_ok(total, term) else total + term
    return total
