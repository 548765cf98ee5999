"""A GP fitted to each task with a likelihood family's own likelihood, by GPyTorch's approximate
(variational) inference: the per-task baseline of issue 52, item 2, beside the neural
processes with that family's head.

Each task of a batch gets its own GP (GPyTorch batch mode): a constant mean and an RBF kernel
with an output scale, learned; the variational distribution is a full Gaussian over the
latent values at the task's context inputs (the inducing points, fixed: the exact variational
GP, no sparse approximation). The fit maximises the ELBO of the context for ``steps`` steps:
natural-gradient steps for the variational distribution (``ngd_lr``), Adam for the
hyper-parameters and the likelihood's own parameters (``lr``). The defaults, 100 steps with Adam
at 0.1, keep the baseline cheap rather than converged: a few seconds for 8 tasks of 60 context
points on one busy CPU core, and within 0.12 nats per target of 200 steps at 0.05 on such
``gp-link`` tasks of each family. The predictive density of a target is ``log E_q[p(y | f)]``
under the posterior marginal ``q(f)`` at the target, by Gauss-Hermite quadrature in log space.

Likelihoods (``APPROX_FAMILIES``): ``gaussian`` (GaussianLikelihood), ``student-t``
(StudentTLikelihood: learned degrees of freedom and scale), ``bernoulli`` (BernoulliLikelihood:
a *probit* link, where the ``gp-link`` tasks use a logit: a learned kernel scale absorbs most of
the difference); ``beta``, ``poisson`` and ``negative-binomial`` are written here on GPyTorch's
one-dimensional likelihood: ``beta`` the mean-precision ``Beta(mu s, (1 - mu) s)``, ``mu =
sigmoid(f)``, the law of the ``beta`` head and of the ``gp-link`` tasks (GPyTorch's own
``BetaLikelihood``, ``Beta(mu s + 1, (1 - mu) s + 1)``, keeps both shapes above 1 and so cannot
pile fractions up at 0 or 1); counts a log link, the rate times the exposure, a learned
dispersion.
The exposures are ``Batch.info["exposure_c"/"exposure_t"]`` where a batch has them, else 1.
``bernoulli-gamma``, ``mixture`` and ``lowrank-gaussian`` have no GPyTorch likelihood and are
refused. Computed in float64; needs the ``gp`` extra (GPyTorch).
"""

from __future__ import annotations

import torch

from ..batch import Batch, observed_score
from ..extras import require
from .approx_predictive import QuadraturePredictive, as_prediction

gpytorch = require("gpytorch", "gp", "the approximate GP baseline (tnpx.gp.approx_fit)")
from gpytorch.likelihoods import (  # noqa: E402  (after the one-line error for a missing extra)
    BernoulliLikelihood,
    GaussianLikelihood,
    StudentTLikelihood,
)
from gpytorch.likelihoods.likelihood import _OneDimensionalLikelihood  # noqa: E402

APPROX_FAMILIES = ("gaussian", "student-t", "bernoulli", "beta", "poisson", "negative-binomial")
COUNTS = ("poisson", "negative-binomial")


class PoissonLikelihood(_OneDimensionalLikelihood):
    """``y ~ Poisson(exposure exp(f))``; ``exposure`` ``[batch, n]`` (default 1)."""

    def forward(self, function_samples, *args, exposure=None, **kwargs):
        rate = function_samples.exp()
        return torch.distributions.Poisson(rate if exposure is None else rate * exposure)


class NegativeBinomialLikelihood(_OneDimensionalLikelihood):
    """Counts with mean ``mu = exposure exp(f)`` and variance ``mu + mu² / r``, the dispersion
    ``r`` learned per task (a softplus of a raw parameter ``[batch, 1]``)."""

    def __init__(self, batch_shape: torch.Size):
        super().__init__()
        self.raw_dispersion = torch.nn.Parameter(torch.zeros(*batch_shape, 1))

    def forward(self, function_samples, *args, exposure=None, **kwargs):
        r = torch.nn.functional.softplus(self.raw_dispersion) + 1e-4
        log_mean = function_samples if exposure is None else function_samples + exposure.log()
        return torch.distributions.NegativeBinomial(
            r.expand_as(log_mean), logits=log_mean - r.log()
        )


class MeanPrecisionBetaLikelihood(_OneDimensionalLikelihood):
    """Fractions ``y ~ Beta(mu s, (1 - mu) s)``, ``mu = sigmoid(f)``, the precision ``s``
    learned per task (a softplus of a raw parameter ``[batch, 1]``), starting where the
    context's own mean and variance put it (``s = m (1 - m) / v - 1``, within [1, 100]: the
    spread of the latent mean makes it low, which the fit then raises)."""

    def __init__(self, yc: torch.Tensor):  # yc [batch, n_ctx]
        super().__init__()
        m, v = yc.mean(-1, keepdim=True), yc.var(-1, keepdim=True).nan_to_num(1.0)
        start = (m * (1 - m) / v.clamp_min(1e-8) - 1).clamp(1.0, 100.0)
        self.raw_precision = torch.nn.Parameter(start + torch.log(-torch.expm1(-start)))

    def forward(self, function_samples, *args, **kwargs):
        s = torch.nn.functional.softplus(self.raw_precision) + 1e-4
        mu = torch.sigmoid(function_samples)
        return torch.distributions.Beta(mu * s, (1 - mu) * s)


class _TaskGPs(gpytorch.models.ApproximateGP):
    """One variational GP per task, its inducing points the task's context inputs."""

    def __init__(self, xc: torch.Tensor, mean: torch.Tensor):
        b, n = xc.shape[:2]
        shape = torch.Size([b])
        q = gpytorch.variational.NaturalVariationalDistribution(n, batch_shape=shape)
        strategy = gpytorch.variational.VariationalStrategy(
            self, xc, q, learn_inducing_locations=False
        )
        super().__init__(strategy)
        self.mean_module = gpytorch.means.ConstantMean(batch_shape=shape)
        self.mean_module.constant = mean
        kernel = gpytorch.kernels.RBFKernel(batch_shape=shape)
        kernel.lengthscale = 0.5
        self.covar_module = gpytorch.kernels.ScaleKernel(kernel, batch_shape=shape)

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def _likelihood(family: str, yc: torch.Tensor):
    """``family``'s likelihood, one per task of ``yc [batch, n_ctx]``."""
    batch_shape = yc.shape[:1]
    if family == "gaussian":
        likelihood = GaussianLikelihood(batch_shape=batch_shape)
        likelihood.noise = 0.05
        return likelihood
    if family == "student-t":
        return StudentTLikelihood(batch_shape=batch_shape)
    if family == "bernoulli":
        return BernoulliLikelihood()
    if family == "beta":
        return MeanPrecisionBetaLikelihood(yc)
    if family == "poisson":
        return PoissonLikelihood()
    return NegativeBinomialLikelihood(batch_shape)


def _initial_mean(family: str, yc: torch.Tensor) -> torch.Tensor:
    """The constant mean's start ``[batch]``: the context's mean on the link's scale."""
    mean = yc.mean(-1)
    if family in COUNTS:
        return (mean + 0.1).log()
    if family == "beta":
        return torch.logit(mean.clamp(0.05, 0.95))
    if family == "bernoulli":
        return torch.zeros_like(mean)
    return mean


def _exposures(batch: Batch, family: str) -> tuple[dict, dict]:
    """The likelihood's keyword arguments for the context and the targets."""
    if family not in COUNTS or "exposure_c" not in batch.info:
        return {}, {}
    return (
        {"exposure": batch.info["exposure_c"][..., 0].double()},
        {"exposure": batch.info["exposure_t"][..., 0].double()},
    )


def _check(batch: Batch, family: str) -> None:
    if family not in APPROX_FAMILIES:
        raise ValueError(
            f"the approximate GP baseline has no likelihood {family!r}; "
            f"choose from {', '.join(APPROX_FAMILIES)}"
        )
    if batch.yc.shape[-1] != 1 or batch.yc.shape[1] == 0:
        raise ValueError(
            "the approximate GP baseline needs one output and at least one context point"
        )
    if batch.mask_c is not None or batch.mask_yc is not None:
        raise ValueError("the approximate GP baseline takes no padded or missing context values")


def approx_gp_predictive(
    batch: Batch,
    family: str,
    steps: int = 100,
    lr: float = 0.1,
    ngd_lr: float = 0.2,
    quadrature: int = 20,
) -> QuadraturePredictive:
    """The predictive law at each target of a GP fitted to its task's context with
    ``family``'s likelihood (the module docstring says how), batch shape ``[batch, n_tgt, 1]``
    float64: ``log_prob`` and ``cdf`` by quadrature, exact samples, the sample CRPS
    (:class:`~tnpx.gp.approx_predictive.QuadraturePredictive`).

    Args:
        batch: ``xc [batch, n_ctx, dim_x]``, ``yc [batch, n_ctx, 1]``, ``xt`` (one output, no
            context masks); counts may carry ``info["exposure_c"/"exposure_t"]``.
        family: one of ``APPROX_FAMILIES``.
        steps: optimiser steps of the fit; lr: Adam's rate (hyper-parameters); ngd_lr: the
            natural-gradient rate (variational distribution); quadrature: Gauss-Hermite nodes.

    Raises:
        ValueError: a family GPyTorch has no likelihood for, or a batch it cannot fit.
    """
    _check(batch, family)
    xc, xt = batch.xc.double(), batch.xt.double()
    yc = batch.yc[..., 0].double()
    kw_c, kw_t = _exposures(batch, family)
    b, n = yc.shape
    with torch.enable_grad():
        model = _TaskGPs(xc, _initial_mean(family, yc)).double()
        likelihood = _likelihood(family, yc).double()
        model.train(), likelihood.train()
        elbo = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=n)
        ngd = gpytorch.optim.NGD(model.variational_parameters(), num_data=n, lr=ngd_lr)
        adam = torch.optim.Adam([*model.hyperparameters(), *likelihood.parameters()], lr=lr)
        for _ in range(steps):
            ngd.zero_grad(), adam.zero_grad()
            (-elbo(model(xc), yc, **kw_c).sum()).backward()
            ngd.step(), adam.step()
    model.eval(), likelihood.eval()
    with torch.no_grad():
        f = model(xt)
        mean, variance = f.mean.detach(), f.variance.detach()

    def law(values: torch.Tensor):  # p(y | f) at latent values [..., batch, n_tgt]
        with torch.no_grad():
            return as_prediction(likelihood.forward(values, **kw_t))

    return QuadraturePredictive(mean, variance, law, quadrature)


def approx_gp_log_density(batch: Batch, family: str, **settings) -> torch.Tensor:
    """Each target's predictive log-density under :func:`approx_gp_predictive` (``settings``
    its options), ``[batch, n_tgt, 1]`` float64; ``batch`` needs ``yt``."""
    if batch.yt is None:
        raise ValueError("the approximate GP baseline's density needs the target outputs yt")
    return approx_gp_predictive(batch, family, **settings).log_prob(batch.yt.double())


def approx_gp_log_prob(batch: Batch, family: str, **settings) -> torch.Tensor:
    """The per-target mean of :func:`approx_gp_log_density`, ``[batch]`` float64, scored like a
    model's log-likelihood (masked targets count nowhere)."""
    values = approx_gp_log_density(batch, family, **settings)
    return observed_score(values, batch.mask_t, batch.mask_yt)
