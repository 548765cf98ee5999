"""``gp-oracle``: the exact GP posterior under known kernel hyper-parameters.

``predict_batch`` reads the hyper-parameters that generated each task from ``batch.info``
(as written by :class:`tnpx.data.GPSampler`); a plain call ``model(xc, yc, xt)`` uses the
fixed hyper-parameters given at build time. Computed in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.distributions import Normal

from ..batch import Batch
from ..gp.kernels import KERNELS, canonical_kernel, is_stationary, kernel_matrix_mixed
from ..gp.kernels_anisotropic import anisotropic_kernel_matrix
from ..input_checks import validate_inputs
from .base import NeuralProcess
from .exposure import KEYS as EXPOSURE_KEYS
from .exposure import refuse_exposures
from .registry import register


@dataclass
class GPOracleHyper:
    kernel: str = "rbf"
    lengthscale: float = 0.3
    period: float = 1.0
    variance: float = 1.0
    noise_ctx: float = 0.1
    noise_tgt: float = 0.0
    jitter: float = 1e-6


@register("gp-oracle")
class GPOracle(NeuralProcess):
    """Exact posterior ``p(y_t | x_t, D_c)`` of a zero-mean GP (dim_y = 1).

    The predictive variance adds ``noise_tgt²``: zero when targets are the noiseless function
    (KR protocol), the observation noise otherwise (TE protocol).
    """

    Hyper = GPOracleHyper
    summary = "Exact GP posterior under given (or the generating) kernel hyper-parameters"
    # Under its own (stationary) kernel; a task whose Batch.info carries a polynomial trend
    # (the v3 prior's `linear` / `quadratic` / `cubic`) is not translation equivariant.
    translation_equivariant = True
    dim_y_range = (1, 1)  # one output
    rotation_equivariant = False  # the periodic kernel acts per axis, so not in general

    def __init__(self, dim_x: int, dim_y: int, hyper: GPOracleHyper):
        super().__init__(dim_x, dim_y, hyper)
        canonical_kernel(hyper.kernel)
        self._anchor_dtype()

    def _fixed_params(self, b: int) -> dict[str, torch.Tensor]:
        h = self.hyper
        full = lambda v: torch.full((b,), float(v), dtype=torch.float64)  # noqa: E731
        return {
            "kernel": torch.full((b,), KERNELS.index(canonical_kernel(h.kernel))),
            "lengthscale": full(h.lengthscale),
            "period": full(h.period),
            "variance": full(h.variance),
            "noise_ctx": full(h.noise_ctx),
            "noise_tgt": full(h.noise_tgt),
        }

    def _predict(self, xc, yc, xt, mask_c, params: dict | None = None):
        b = xc.shape[0]
        p = params if params is not None else self._fixed_params(b)
        dev = xc.device
        p = {k: torch.as_tensor(v).to(dev) for k, v in p.items()}
        f64 = torch.float64
        xc64, yc64, xt64 = xc.to(f64), yc.to(f64), xt.to(f64)
        covariance = _covariance(p)
        prior_var = _prior_variance(covariance, xt64, is_stationary(p["kernel"]))
        n_ctx = xc.shape[1]
        if n_ctx == 0:
            mean, var = torch.zeros_like(prior_var), prior_var
        else:
            k_cc = covariance(xc64, xc64)
            k_tc = covariance(xt64, xc64)
            noise = p["noise_ctx"].to(f64).pow(2)[:, None] + self.hyper.jitter
            if mask_c is not None:
                # Masked points: no correlation with anything, so they carry no information.
                m = mask_c.to(f64)
                k_cc = k_cc * m[:, :, None] * m[:, None, :]
                k_tc = k_tc * m[:, None, :]
                yc64 = yc64 * m[..., None]
            k_cc = k_cc + torch.diag_embed(noise.expand(b, n_ctx))
            chol = torch.linalg.cholesky(k_cc)
            alpha = torch.cholesky_solve(yc64, chol)  # [b, n_ctx, 1]
            mean = (k_tc @ alpha)[..., 0]
            v = torch.linalg.solve_triangular(chol, k_tc.transpose(1, 2), upper=False)
            var = (prior_var - v.pow(2).sum(1)).clamp_min(1e-12)
        var = var + p["noise_tgt"].to(f64).pow(2)[:, None]
        dtype = xt.dtype
        return Normal(mean[..., None].to(dtype), var.sqrt()[..., None].to(dtype))

    def posterior_covariance(
        self, xc: torch.Tensor, yc: torch.Tensor, xt: torch.Tensor
    ) -> torch.Tensor:
        """Joint posterior covariance of ``y`` at the targets under the fixed hyper-parameters,
        ``[batch, n_tgt, n_tgt]`` in float64 (``noise_tgt²`` on the diagonal, which equals the
        per-target variance of ``forward``). For checking joint samples against the truth.

        Args:
            xc: ``[batch, n_ctx, dim_x]``; yc: ``[batch, n_ctx, 1]``; xt: ``[batch, n_tgt, dim_x]``.
        """
        xc, yc, xt, _ = self._validate(xc, yc, xt, None)
        f64 = torch.float64
        p = {k: v.to(xc.device) for k, v in self._fixed_params(xc.shape[0]).items()}
        kp = {k: p[k] for k in ("lengthscale", "period", "variance")}
        xc64, xt64 = xc.to(f64), xt.to(f64)
        cov = kernel_matrix_mixed(p["kernel"], xt64, xt64, **kp)
        if xc.shape[1]:
            k_cc = kernel_matrix_mixed(p["kernel"], xc64, xc64, **kp)
            noise = self.hyper.noise_ctx**2 + self.hyper.jitter
            k_cc = k_cc + noise * torch.eye(xc.shape[1], dtype=f64, device=xc.device)
            k_tc = kernel_matrix_mixed(p["kernel"], xt64, xc64, **kp)
            v = torch.linalg.solve_triangular(
                torch.linalg.cholesky(k_cc), k_tc.transpose(1, 2), upper=False
            )
            cov = cov - v.transpose(1, 2) @ v
        eye = torch.eye(xt.shape[1], dtype=f64, device=xt.device)
        return cov + self.hyper.noise_tgt**2 * eye

    def predict_batch(self, batch: Batch):
        refuse_exposures(self, *(batch.info.get(k) for k in EXPOSURE_KEYS))  # a Gaussian's
        needed = ("kernel", "lengthscale", "period", "variance", "noise_ctx", "noise_tgt")
        if "transform" in batch.info:  # anisotropic kernels (tnpx.data.synthetic.gp2d_composite)
            needed = ("kernel", "transform", "variance", "noise_ctx", "noise_tgt")
        if not all(k in batch.info for k in needed):
            return super().predict_batch(batch)
        xc, yc, xt, mask_c = validate_inputs(
            batch.xc, batch.yc, batch.xt, batch.mask_c, self.dim_x, self.dim_y, None, None
        )
        optional = tuple(k for k in ("envelope",) if k in batch.info)  # locally periodic
        return self._predict(xc, yc, xt, mask_c, {k: batch.info[k] for k in needed + optional})


def _covariance(params: dict[str, torch.Tensor]):
    """``(x1, x2) -> [batch, n, m]`` in float64: the tasks' kernel, anisotropic where
    ``params`` hold the maps ``transform`` (:mod:`tnpx.gp.kernels_anisotropic`), else a (sum of)
    :data:`KERNELS` with ``lengthscale`` and ``period``."""
    kernel, f64 = params["kernel"].long(), torch.float64
    if "transform" in params:
        transform, variance = params["transform"].to(f64), params["variance"].to(f64)
        return lambda x1, x2: anisotropic_kernel_matrix(kernel, transform, variance, x1, x2)
    names = ("lengthscale", "period", "variance", "envelope")
    kp = {k: params[k].to(f64) for k in names if k in params}
    return lambda x1, x2: kernel_matrix_mixed(kernel, x1, x2, **kp)


def _prior_variance(covariance, xt: torch.Tensor, stationary: bool) -> torch.Tensor:
    """``k(x, x)`` at each target, ``[batch, n_tgt]`` (``xt: [batch, n_tgt, dim_x]``): one
    evaluation at the origin for stationary kernels, else the diagonal of ``k(xt, xt)`` in
    blocks of targets (a polynomial trend's variance grows with ``|x|``)."""
    if stationary:
        x0 = xt.new_zeros(xt.shape[0], 1, xt.shape[-1])
        return covariance(x0, x0)[:, 0, :].expand(-1, xt.shape[1])
    blocks = [covariance(x, x).diagonal(dim1=1, dim2=2) for x in xt.split(256, dim=1)]
    return torch.cat(blocks, 1)
