"""GP baselines whose kernel hyper-parameters are fit per task (TE paper): ``gp``, ``mt-gp``.

Per call, every task of the batch gets its own exact GPyTorch GP (batch mode), fit by maximising
the log marginal likelihood of its context with Adam (TE: 1000 iterations, lr 0.1), then
conditioned on the context. ``gp-oracle`` (``gp.py``) is the GP with *known* hyper-parameters.

The GPs are zero-mean: every protocol standardises its outputs (GP samplers are zero-mean,
TE-3/TE-4 use training-set statistics), and a constant mean fit to a handful of context points
over-fits, and would no longer be the prior when the context is empty.

Padding. Each GP row carries two extra input columns, a task index ``t`` and an observed flag
``m``. The kernel is multiplied by ``m m'`` and a masked row has noise variance 1 and y = 0, so
it is an independent N(0, 1) draw: a constant in the marginal likelihood (no gradient) and no
covariance with any other row. A padded context is thus the unpadded one up to float rounding,
and a task with no observed point keeps its initial hyper-parameters (zero gradient), so its
prediction is the prior under them. Computed in float64.

Missing outputs. The observed flag is per output: a context point missing an output (``mask_yc``
of a call, :meth:`_FittedGP.predict_partial`) is a masked row of that output's GP alone, so
``gp`` fits each output on the context points where it is observed (``mt-gp`` likewise, its
rows being (point, output) pairs).

Gradients. The hyper-parameters are fit on detached copies of the context (the fit's Adam
steps must not walk back into the caller's graph), then the posterior is computed on the
inputs themselves at the fitted hyper-parameters, held fixed; so inputs may require grad. A
prediction's gradient in the targets ``xt`` is then exact (the fit does not depend on them);
in the context ``xc``, ``yc`` it is the partial derivative at fixed hyper-parameters: the
fit's own dependence on the context is not differentiated (that would keep a graph per Adam
step), which is what a gradient at a fitted model usually means.

GPyTorch is the ``gp`` extra: the GPs themselves live in :mod:`tnpx.gp.batch_gp`, imported when
a model is built, so the registry lists ``gp`` and ``mt-gp`` without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch.distributions import Normal

from ..extras import require
from .base import NeuralProcess
from .registry import register

if TYPE_CHECKING:  # pragma: no cover
    from ..gp.batch_gp import _BatchGP

_MAX_ELEMENTS = 2**25  # bound on [batch, target rows, context rows] per prediction chunk


def _gpytorch_half(what: str = "tnpx.models.gp_fit"):
    """:mod:`tnpx.gp.batch_gp` (the GPs themselves), imported on first use so that the model
    registry needs no GPyTorch; without it, the one-line error naming the ``gp`` extra."""
    require("gpytorch", "gp", what)
    from ..gp import batch_gp

    return batch_gp


def __getattr__(name: str):
    """The GPyTorch classes under their old names here (``from .gp_fit import _BatchGP``)."""
    if name in ("_BatchGP", "_MaskedKernel", "_MaskedNoise", "_exact_settings"):
        return getattr(_gpytorch_half(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class FittedState:
    """Fitted GPs of a batch of contexts and the centre their inputs were shifted by."""

    gp: _BatchGP | None
    centre: torch.Tensor | None


@dataclass
class GPFitHyper:
    n_iterations: int = 1000  # Adam steps on the marginal likelihood (TE)
    lr: float = 0.1  # Adam learning rate (TE)
    predict_noise: bool = True  # the predictive is for noisy observations y, not the latent f


class _FittedGP(NeuralProcess):
    """Shared by ``gp`` and ``mt-gp``; subclasses say how outputs map to GP batches/tasks."""

    Hyper = GPFitHyper
    translation_equivariant = True  # stationary kernel; inputs are centred on the context
    rotation_equivariant = False  # one lengthscale per input axis (ARD)
    multitask: bool = False

    @classmethod
    def missing_outputs_support(cls) -> str:
        return "always"  # an observed flag per (point, output) row

    def __init__(self, dim_x: int, dim_y: int, hyper: GPFitHyper):
        _gpytorch_half(f"model {self.name!r}")  # without GPyTorch: one line naming the extra
        super().__init__(dim_x, dim_y, hyper)
        if hyper.n_iterations < 0 or hyper.lr <= 0:
            raise ValueError(f"need n_iterations >= 0 and lr > 0, got {hyper}")
        self._anchor_dtype()  # no trainable parameters

    def _rows(self, x: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
        """GP rows (x, task index, observed flag) for ``x [b, n, Dx]``, ``observed [b, n, Dy]``:
        ``mt-gp`` one row per (point, output), ``[b, n * Dy, Dx + 2]``; ``gp`` independent GPs
        batched, ``[b * Dy, n, Dx + 2]``."""
        b, n, dy = observed.shape
        if not self.multitask:
            x = x[:, None].expand(b, dy, n, x.shape[-1]).reshape(b * dy, n, -1)
            b, dy, observed = b * dy, 1, observed.transpose(1, 2).reshape(b * dy, n, 1)
        task = torch.arange(dy, dtype=x.dtype, device=x.device).expand(b, n, dy)
        cols = [x[:, :, None].expand(b, n, dy, x.shape[-1]), task[..., None], observed[..., None]]
        return torch.cat([c.to(x) for c in cols], -1).reshape(b, n * dy, -1)

    def _values(self, v: torch.Tensor, b: int) -> torch.Tensor:
        """Per-row values (as laid out by ``_rows``) back to ``[b, n, Dy]``."""
        if self.multitask:
            return v.reshape(b, -1, self.dim_y)
        return v.reshape(b, self.dim_y, -1).transpose(1, 2)

    def fit(self, xc, yc, observed: torch.Tensor | None = None) -> tuple[_BatchGP, torch.Tensor]:
        """Fit one GP per task to a validated context ``xc [B, Nc, Dx]``, ``yc [B, Nc, Dy]``;
        ``observed`` is ``[B, Nc]`` or, per output, ``[B, Nc, Dy]`` (True = observed).

        Returns the fitted GPyTorch model (batch ``B * Dy`` for ``gp``, ``B`` for ``mt-gp``)
        and the input centre ``[B, 1, Dx]`` to subtract from target inputs."""
        b, n, dy = yc.shape
        f64 = torch.float64
        if observed is None:
            observed = torch.ones(b, n, dy, dtype=torch.bool, device=xc.device)
        elif observed.dim() == 2:
            observed = observed[..., None].expand(b, n, dy)
        if n == 0:  # ExactGP needs a training row: one masked point is no information
            xc, yc = xc.new_zeros(b, 1, xc.shape[-1]), yc.new_zeros(b, 1, dy)
            observed = observed.new_zeros(b, 1, dy)
        # Centre inputs on the observed context points: translation equivariance holds in
        # float rounding too, not only in exact arithmetic.
        point = observed.any(-1, keepdim=True).to(f64)  # [b, n, 1]
        centre = (xc.to(f64) * point).sum(1, keepdim=True) / point.sum(1, keepdim=True).clamp(1)
        y = torch.where(observed, yc.to(f64), 0.0)
        y = y.reshape(b, -1) if self.multitask else y.transpose(1, 2).reshape(b * dy, -1)
        rows = self._rows(xc.to(f64) - centre, observed)
        with torch.inference_mode(False), torch.enable_grad():  # fitting needs autograd
            # The fit sees detached copies (clone: no inference tensor): its Adam steps must
            # not reach back into the caller's graph, which a second step would then re-walk.
            gpt = _gpytorch_half()
            gp = gpt._BatchGP(
                rows.detach().clone(), y.detach().clone(), dy if self.multitask else 1
            )
            with gpt._exact_settings():
                gp.fit(self.hyper.n_iterations, self.hyper.lr)
        if torch.is_grad_enabled() and (rows.requires_grad or y.requires_grad):
            gp.condition_differentiably(rows, y)
        return gp, centre

    def _encode_context(self, xc, yc, observed):
        """Fit the hyper-parameters once; streamed target chunks reuse the fitted GPs."""
        if xc.shape[0] == 0:
            return FittedState(None, None)
        return FittedState(*self.fit(xc, yc, observed))

    def _decode_targets(self, state, xt) -> Normal:
        gp, centre = state.gp, state.centre
        b, nt = xt.shape[:2]
        if b == 0 or nt == 0:
            empty = xt.new_zeros(b, nt, self.dim_y)
            return Normal(empty, empty + 1.0, validate_args=False)
        ones = torch.ones(b, nt, self.dim_y, dtype=torch.bool, device=xt.device)
        with _gpytorch_half()._exact_settings():
            mean, var = gp.predict(
                self._rows(xt.to(centre) - centre, ones),
                self.hyper.predict_noise,
                _MAX_ELEMENTS,
            )
        mean, std = self._values(mean, b), self._values(var, b).sqrt()
        return Normal(mean.to(xt.dtype), std.to(xt.dtype), validate_args=False)

    def predict_partial(self, xc, yc, xt, observed: torch.Tensor) -> Normal:
        """Predict from context points whose outputs are partly observed: ``observed``
        ``[B, Nc, Dy]`` (bool, True = observed); unobserved entries of ``yc`` may hold anything.
        The model called with ``mask_yc=observed``."""
        if not isinstance(observed, torch.Tensor) or observed.dtype != torch.bool:
            raise ValueError("observed: expected a bool tensor shaped like yc")
        if not isinstance(yc, torch.Tensor) or observed.shape != yc.shape:
            got = tuple(yc.shape) if isinstance(yc, torch.Tensor) else type(yc).__name__
            raise ValueError(f"observed: expected shape {got} (that of yc), got {observed.shape}")
        return self(xc, yc, xt, mask_yc=observed)


@register("gp")
class GP(_FittedGP):
    """Independent zero-mean GPs per output, ``k = sigma_f^2 exp(-|(x - x') / l|^2 / 2)`` with a
    lengthscale per input dimension, Gaussian noise; hyper-parameters fit per task."""

    summary = "GP with SE-ARD kernel and noise, hyper-parameters fit per task (GPyTorch, Adam)"


@register("mt-gp")
class MultiTaskGP(_FittedGP):
    """Multi-task GP over the ``dim_y >= 2`` outputs: ``k((x, i), (x', j)) = k_SE-ARD(x, x')
    B[i, j]`` with ``B`` a full ``dim_y x dim_y`` covariance, noise per output; fit per task.
    Predicts the per-target, per-output marginals."""

    summary = "Multi-task GP: SE-ARD x full inter-output covariance, noise per output, fit per task"
    multitask = True
    dim_y_range = (2, None)  # correlated outputs
