"""The per-series GP baseline of ``experiments/zero_shot/series.py``: a GPyTorch exact GP fitted
to one context, the strong conventional answer a zero-shot model is measured against.

Kernel (the same three parts as the ``gp-composite`` prior, each with its own output scale):
``s1 RBF(l1) + s2 Periodic(p, l2) + s3 Matern-nu(l3)`` plus Gaussian noise, zero mean, on the
context's inputs mapped onto [0, 1] and outputs standardised by the context's mean and std
(:mod:`tnpx.units`), predictions mapped back to the series' units.

Fitting: the exact log marginal likelihood maximised by L-BFGS (strong-Wolfe line search) from
a few starts, keeping the best. Why L-BFGS: the objective is smooth, deterministic and has ~9
parameters, where a quasi-Newton method converges in tens of iterations (Adam needs hundreds,
~1.7 s per 100 steps on 100 points here, ENVIRONMENT.md). Why restarts: the likelihood is
multimodal in the period, so the starts take the period from the context's Lomb-Scargle
periodogram peak and two fixed fractions of its range, each with Matérn-1/2 and Matérn-3/2 for
the rough part (nu cannot be optimised continuously; the evidence picks it).

The fitting from several starts (:func:`best_of_starts`) and the fitted GP in the data's units
(:class:`FittedGP`) serve a second GP too: :func:`fit_field_gp`, a scaled ARD RBF plus a scaled
ARD Matérn on any number of input columns, with no periodic part. It is the per-field GP of
``experiments/zero_shot/fields.py`` and the fitted GP of ``experiments/zero_shot/functions.py``
(one input column).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
from scipy.signal import lombscargle

with warnings.catch_warnings():  # linear_operator (through gpytorch) calls torch.jit.script
    warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
    import gpytorch
from gpytorch.constraints import GreaterThan, Interval
from gpytorch.kernels import MaternKernel, PeriodicKernel, RBFKernel, ScaleKernel

from tnpx.units import UnitMap, range_onto_box, standardising

UNIT_BOX = np.array([[0.0, 1.0]])
FIXED_PERIODS = (1 / 3, 1 / 10)  # starts as fractions of the context's range, beside the peak
NUS = (0.5, 1.5)  # the rough part's smoothness, chosen by the evidence
ROUGH_STARTS = (0.05, 0.2)  # the field GP's first rough lengthscales, on the [0, 1] box
Predictor = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class SeriesGP(gpytorch.models.ExactGP):
    """``RBF + Periodic + Matérn`` (each scaled) with Gaussian noise, zero mean, float64."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, nu: float):
        likelihood = gpytorch.likelihoods.GaussianLikelihood(noise_constraint=GreaterThan(1e-5))
        super().__init__(x, y, likelihood)
        # The period stays below the context's range (one cycle at least). GPyTorch's periodic
        # kernel is exp(-2 sin^2(pi d / p) / l), l the square of tnpx.gp.kernels' lengthscale:
        # bounded to [0.2^2, 2^2], since as l grows the kernel tends to a constant whose
        # variation the output scale can inflate without bound (a degenerate optimum).
        periodic = PeriodicKernel(
            period_length_constraint=Interval(0.01, 1.0), lengthscale_constraint=Interval(0.04, 4.0)
        )
        self.trend = ScaleKernel(RBFKernel())
        self.periodic = ScaleKernel(periodic)
        self.rough = ScaleKernel(MaternKernel(nu=nu))
        self.to(torch.float64)

    def forward(self, x):
        covar = self.trend(x) + self.periodic(x) + self.rough(x)
        return gpytorch.distributions.MultivariateNormal(x.new_zeros(x.shape[0]), covar)

    def initialise(self, period: float) -> None:
        """A start: a long trend, the given period, short rough variation, small noise."""
        self.trend.base_kernel.lengthscale = 0.5
        self.periodic.base_kernel.period_length = period
        self.periodic.base_kernel.lengthscale = 1.0
        self.rough.base_kernel.lengthscale = 0.05
        for part in (self.trend, self.periodic, self.rough):
            part.outputscale = 0.3
        self.likelihood.noise = 0.1


def fit_marginal_likelihood(gp: gpytorch.models.ExactGP, max_iter: int) -> float:
    """L-BFGS on ``gp``'s negative exact log marginal likelihood (of its training data);
    returns the final value per training point."""
    gp.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(gp.likelihood, gp)
    opt = torch.optim.LBFGS(gp.parameters(), max_iter=max_iter, line_search_fn="strong_wolfe")
    x, y = gp.train_inputs[0], gp.train_targets

    def closure():
        opt.zero_grad()
        loss = -mll(gp(x), y)
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return float(mll(gp(x), y))


def periodogram_peak(x: np.ndarray, y: np.ndarray) -> float:
    """The period (in x's units) of the highest Lomb-Scargle peak of ``y`` less its linear
    trend (a trend would otherwise put the peak at the longest period), between two median
    sampling steps and half the range of ``x`` (two cycles at least)."""
    span, step = x.max() - x.min(), np.median(np.diff(np.sort(x)))
    residual = y - np.polyval(np.polyfit(x, y, 1), x)
    periods = np.geomspace(2 * step, span / 2, 200)
    power = lombscargle(x, residual, 2 * math.pi / periods)
    return float(periods[np.argmax(power)])


@dataclass
class FittedGP:
    """A fitted GP (a series' or a field's): predictive mean and std in the data's units."""

    gp: gpytorch.models.ExactGP
    units: UnitMap
    nu: float
    mll: float  # per context point, of the best start

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and std ``[n]`` of noisy observations at ``x [n]`` (one input) or
        ``[n, dim_x]``, in the data's units."""
        xt = torch.as_tensor(self.units.inputs(x.reshape(len(x), -1)), dtype=torch.float64)
        self.gp.eval()
        with torch.no_grad(), _exact():
            pred = self.gp.likelihood(self.gp(xt))
            mean, var = pred.mean.numpy(), pred.variance.numpy()
        mean = self.units.mean_to_user(mean[:, None])[:, 0]
        std = self.units.std_to_user(np.sqrt(var)[:, None])[:, 0]
        return mean, std


def _exact():
    """Cholesky everywhere (no CG / Lanczos): exact and deterministic."""
    return gpytorch.settings.fast_computations(False, False, False)


def context_units(xc: np.ndarray, yc: np.ndarray) -> UnitMap:
    """The GP's units for a context ``xc [n, dim_x]``, ``yc [n]``: each input column's range
    onto [0, 1], the outputs standardised."""
    ranges = np.stack([xc.min(0), xc.max(0)], 1)
    box = np.tile(UNIT_BOX, (xc.shape[1], 1))
    return UnitMap(range_onto_box(ranges, box), standardising(yc[:, None]))


Start = tuple[float, str, Callable[[], gpytorch.models.ExactGP]]  # nu, label, a built GP


def best_of_starts(starts: Iterable[Start], units: UnitMap, max_iter: int, what: str) -> FittedGP:
    """Fit the GP of every start (:func:`fit_marginal_likelihood`, Cholesky throughout) and
    keep the one with the highest marginal likelihood; a start that fails numerically is
    skipped with a warning naming ``what`` and its label."""
    best = None
    for nu, label, build in starts:
        gp = build()
        try:
            with _exact(), gpytorch.settings.cholesky_jitter(1e-8):
                mll = fit_marginal_likelihood(gp, max_iter)
        except Exception as err:  # a start that fails numerically is skipped, not fatal
            warnings.warn(f"{what} start ({label}) failed: {err}", stacklevel=3)
            continue
        if math.isfinite(mll) and (best is None or mll > best.mll):
            best = FittedGP(gp, units, nu, mll)
    if best is None:
        raise RuntimeError(f"every start of the {what} failed")
    return best


def context_tensors(xc: np.ndarray, yc: np.ndarray) -> tuple[UnitMap, torch.Tensor, torch.Tensor]:
    """A context ``xc [n, dim_x]``, ``yc [n]`` in the GP's units (:func:`context_units`):
    the map, and the inputs ``[n, dim_x]`` and outputs ``[n]`` as float64 tensors."""
    units = context_units(xc, yc)
    x = torch.as_tensor(units.inputs(xc), dtype=torch.float64)
    y = torch.as_tensor(units.outputs(yc[:, None])[:, 0], dtype=torch.float64)
    return units, x, y


def started(model: type, x: torch.Tensor, y: torch.Tensor, nu: float, value: float):
    """A GP of class ``model`` (:class:`SeriesGP`, :class:`FieldGP`) on ``x``, ``y`` with
    smoothness ``nu``, at the start its ``initialise(value)`` sets."""
    gp = model(x, y, nu)
    gp.initialise(value)
    return gp


def fit_series_gp(xc: np.ndarray, yc: np.ndarray, max_iter: int = 100) -> FittedGP:
    """Fit the series GP to a context ``xc [n]``, ``yc [n]`` (series units) from every start
    (periods x nus) and keep the one with the highest marginal likelihood."""
    units, x, y = context_tensors(xc[:, None], yc)
    peak = periodogram_peak(x[:, 0].numpy(), y.numpy())
    starts = [
        (nu, f"nu {nu}, period {period:.3f}", partial(started, SeriesGP, x, y, nu, period))
        for nu in NUS
        for period in (peak, *FIXED_PERIODS)
    ]
    return best_of_starts(starts, units, max_iter, "series GP")


class FieldGP(gpytorch.models.ExactGP):
    """Scaled ARD RBF + scaled ARD Matérn-nu with Gaussian noise, zero mean, float64."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, nu: float):
        noise = gpytorch.constraints.GreaterThan(1e-6)
        super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood(noise_constraint=noise))
        dims = x.shape[-1]
        self.smooth = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=dims))
        rough = gpytorch.kernels.MaternKernel(nu=nu, ard_num_dims=dims)
        self.rough = gpytorch.kernels.ScaleKernel(rough)
        self.to(torch.float64)

    def forward(self, x):
        covar = self.smooth(x) + self.rough(x)
        return gpytorch.distributions.MultivariateNormal(x.new_zeros(x.shape[0]), covar)

    def initialise(self, rough_lengthscale: float) -> None:
        """A start: a smooth part across the window, the given rough one, small noise."""
        self.smooth.base_kernel.lengthscale = 0.5
        self.rough.base_kernel.lengthscale = rough_lengthscale
        self.smooth.outputscale = self.rough.outputscale = 0.5
        self.likelihood.noise = 0.01  # elevation grids are near noise-free


def fit_field_gp(xc: np.ndarray, yc: np.ndarray, max_iter: int = 100) -> FittedGP:
    """Fit :class:`FieldGP` to a context ``xc [n, dim_x]``, ``yc [n]`` (the field's units) from
    every start (nus x rough lengthscales) and keep the highest marginal likelihood."""
    units, x, y = context_tensors(xc, yc)
    starts = [
        (nu, f"nu {nu}, rough lengthscale {ls}", partial(started, FieldGP, x, y, nu, ls))
        for nu in NUS
        for ls in ROUGH_STARTS
    ]
    return best_of_starts(starts, units, max_iter, "field GP")
