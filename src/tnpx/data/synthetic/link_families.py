"""The observation law of each likelihood family of the ``gp-link`` prior: how outputs are drawn
from latent GP values (:mod:`.link_priors`), and the log-density of that law (the truth).

A family is three functions of the latent values ``f [batch, n, n_latents]`` (float64, on the
link's scale: the prior's ``latent_mean`` is added) and of per-task parameters ``params``
(each ``[batch, ...]``):

- ``task_params(g, config, batch_size)``: the per-task parameters (numbers from the config,
  the mixing matrix of ``lowrank-gaussian``);
- ``observe(g, f, params, config)``: outputs ``y [batch, n, dim_y]`` and per-point extras
  (``{"exposure": [batch, n, 1]}`` for counts; stored as ``exposure_c`` / ``exposure_t``);
- ``log_prob(y, f, params, extras)``: ``log p(y | f)`` per target and output, float64.

The laws (``m`` is the latent mean, ``f`` includes it):

- ``gaussian``: ``y = f + noise e``, ``e ~ N(0, 1)``;
- ``student-t``: ``y = f + noise t``, ``t`` a standard Student-t with ``df`` degrees of freedom;
- ``bernoulli``: ``y ~ Bernoulli(sigmoid(f))``;
- ``poisson``: ``y ~ Poisson(exposure exp(f))``, the exposure log-uniform on ``exposure_range``;
- ``negative-binomial``: counts with mean ``mu = exposure exp(f)`` and variance
  ``mu + mu² / dispersion`` (a Gamma-Poisson mixture);
- ``beta``: ``y ~ Beta(mu k, (1 - mu) k)``, ``mu = sigmoid(f)``, ``k = concentration``; clipped
  to ``[1e-6, 1 - 1e-6]`` so that float32 keeps every value strictly inside (0, 1);
- ``bernoulli-gamma`` (rain): a censored, powered latent: ``u = f + rain_noise e``; dry
  (``y = 0``) where ``u <= threshold``, else ``y = amount_scale (u - threshold)^power``. Given
  ``f``: ``P(dry) = Phi((threshold - f) / rain_noise)`` and a wet amount's density is the normal
  density of ``u(y) = threshold + (y / amount_scale)^(1 / power)`` times ``du / dy``;
- ``mixture``: two latent GPs ``f1 - offset / 2`` and ``f2 + offset / 2`` (``offset`` =
  ``mixture_offset``); each point follows the first with probability ``mixture_weight``, plus
  ``noise e``: a bimodal predictive;
- ``lowrank-gaussian``: ``y = W f + noise e`` with ``n_outputs`` outputs and ``n_latents``
  latent GPs, ``W [n_outputs, n_latents]`` drawn per task with entries ``N(0, 1 / n_latents)``
  (a linear model of coregionalisation: the outputs' covariance at a point is
  ``variance W W^T + noise² I``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.distributions import (
    Bernoulli,
    Beta,
    Categorical,
    MixtureSameFamily,
    NegativeBinomial,
    Normal,
    Poisson,
    StudentT,
)

from ..base import uniform
from . import draws

BETA_CLIP = 1e-6  # beta outputs lie in [BETA_CLIP, 1 - BETA_CLIP]: strictly inside (0, 1)

Tensor = torch.Tensor


@dataclass(frozen=True)
class LinkFamily:
    """One family's law; see the module docstring for the three functions."""

    n_latents: Callable[[object], int]
    task_params: Callable[[torch.Generator, object, int], dict[str, Tensor]]
    observe: Callable[[torch.Generator, Tensor, dict, object], tuple[Tensor, dict[str, Tensor]]]
    log_prob: Callable[[Tensor, Tensor, dict, dict], Tensor]


def _numbers(config, b: int, *names: str) -> dict[str, Tensor]:
    """Config numbers ``names`` as per-task ``[b]`` float64 tensors."""
    return {n: torch.full((b,), float(getattr(config, n)), dtype=torch.float64) for n in names}


def _per_point(value: Tensor) -> Tensor:
    """A per-task ``[b]`` parameter broadcast over points and outputs: ``[b, 1, 1]``."""
    return value.view(-1, 1, 1)


def _one(*_) -> int:
    return 1


def _noise_params(g, config, b):
    return _numbers(config, b, "noise")


# -- gaussian, student-t ------------------------------------------------------------------------
def _gaussian_observe(g, f, params, config):
    noise = _per_point(params["noise"])
    return f + noise * torch.randn(f.shape, generator=g, dtype=torch.float64), {}


def _gaussian_log_prob(y, f, params, extras):
    return Normal(f, _per_point(params["noise"])).log_prob(y)


def _student_params(g, config, b):
    return _numbers(config, b, "noise", "df")


def _student_observe(g, f, params, config):
    t = draws.student_t(g, _per_point(params["df"]), tuple(f.shape))
    return f + _per_point(params["noise"]) * t, {}


def _student_log_prob(y, f, params, extras):
    return StudentT(_per_point(params["df"]), f, _per_point(params["noise"])).log_prob(y)


# -- bernoulli, beta ----------------------------------------------------------------------------
def _no_params(g, config, b):
    return {}


def _bernoulli_observe(g, f, params, config):
    return draws.bernoulli(g, torch.sigmoid(f)), {}


def _bernoulli_log_prob(y, f, params, extras):
    return Bernoulli(logits=f).log_prob(y)


def _beta_params(g, config, b):
    return _numbers(config, b, "concentration")


def _beta_shapes(f: Tensor, params: dict) -> tuple[Tensor, Tensor]:
    k = _per_point(params["concentration"])
    mean = torch.sigmoid(f)
    return mean * k, (1 - mean) * k


def _beta_observe(g, f, params, config):
    y = draws.beta(g, *_beta_shapes(f, params))
    return y.clamp(BETA_CLIP, 1 - BETA_CLIP), {}


def _beta_log_prob(y, f, params, extras):
    return Beta(*_beta_shapes(f, params)).log_prob(y)


# -- counts -------------------------------------------------------------------------------------
def _exposure(g, f, config) -> Tensor:
    """Per-point exposures ``[b, n, 1]``, log-uniform on ``config.exposure_range``."""
    lo, hi = config.exposure_range
    return uniform(g, (*f.shape[:2], 1), math.log(lo), math.log(hi)).exp()


def _poisson_observe(g, f, params, config):
    exposure = _exposure(g, f, config)
    return draws.poisson(g, exposure * f.exp()), {"exposure": exposure}


def _poisson_log_prob(y, f, params, extras):
    return Poisson(extras["exposure"] * f.exp()).log_prob(y)


def _nb_params(g, config, b):
    return _numbers(config, b, "dispersion")


def _nb_observe(g, f, params, config):
    exposure = _exposure(g, f, config)
    counts = draws.negative_binomial(g, exposure * f.exp(), _per_point(params["dispersion"]))
    return counts, {"exposure": exposure}


def _nb_log_prob(y, f, params, extras):
    r = _per_point(params["dispersion"])
    mean_log = extras["exposure"].log() + f
    # torch's NegativeBinomial(r, logits) has mean r exp(logits): logits = log(mean / r)
    return NegativeBinomial(r.expand_as(mean_log), logits=mean_log - r.log()).log_prob(y)


# -- bernoulli-gamma (rain) ---------------------------------------------------------------------
_RAIN = ("threshold", "power", "amount_scale", "rain_noise")


def _rain_params(g, config, b):
    return _numbers(config, b, *_RAIN)


def _rain_observe(g, f, params, config):
    p = {k: _per_point(params[k]) for k in _RAIN}
    u = f + p["rain_noise"] * torch.randn(f.shape, generator=g, dtype=torch.float64)
    excess = (u - p["threshold"]).clamp_min(0.0)
    return p["amount_scale"] * excess.pow(p["power"]), {}


def _rain_log_prob(y, f, params, extras):
    p = {k: _per_point(params[k]) for k in _RAIN}
    sigma, power, scale = p["rain_noise"], p["power"], p["amount_scale"]
    dry = torch.special.log_ndtr((p["threshold"] - f) / sigma)
    wet_y = torch.where(y > 0, y, 1.0)  # a stand-in at dry points keeps the wet branch finite
    root = (wet_y / scale).pow(1 / power)
    u = p["threshold"] + root
    log_du_dy = -power.log() - scale.log() + (1 / power - 1) * (wet_y / scale).log()
    wet = Normal(f, sigma).log_prob(u) + log_du_dy
    return torch.where(y > 0, wet, dry)


# -- mixture ------------------------------------------------------------------------------------
def _two(*_) -> int:
    return 2


def _mixture_params(g, config, b):
    return _numbers(config, b, "noise", "mixture_weight", "mixture_offset")


def _regime_means(f: Tensor, params: dict) -> Tensor:
    """The two regimes' means ``[b, n, 2]``: the latents moved apart by the offset."""
    half = _per_point(params["mixture_offset"]) / 2
    return f + torch.cat([-half, half], -1)


def _mixture_observe(g, f, params, config):
    means = _regime_means(f, params)
    first = draws.bernoulli(g, _per_point(params["mixture_weight"]).expand_as(f[..., :1])) > 0
    mean = torch.where(first, means[..., :1], means[..., 1:])
    noise = _per_point(params["noise"])
    return mean + noise * torch.randn(mean.shape, generator=g, dtype=torch.float64), {}


def _mixture_log_prob(y, f, params, extras):
    w = _per_point(params["mixture_weight"]).expand_as(f[..., :1])
    pick = Categorical(probs=torch.cat([w, 1 - w], -1))
    noise = _per_point(params["noise"]).expand_as(f)
    law = MixtureSameFamily(pick, Normal(_regime_means(f, params), noise))
    return law.log_prob(y[..., 0])[..., None]


# -- lowrank-gaussian (linear model of coregionalisation) ---------------------------------------
def _lmc_latents(config) -> int:
    return config.n_latents


def _lmc_params(g, config, b):
    shape = (b, config.n_outputs, config.n_latents)
    mixing = torch.randn(shape, generator=g, dtype=torch.float64) / math.sqrt(config.n_latents)
    return {"mixing": mixing, **_numbers(config, b, "noise")}


def _lmc_observe(g, f, params, config):
    return _gaussian_observe(g, f @ params["mixing"].transpose(1, 2), params, config)


def _lmc_log_prob(y, f, params, extras):
    return _gaussian_log_prob(y, f @ params["mixing"].transpose(1, 2), params, extras)


FAMILIES: dict[str, LinkFamily] = {
    "gaussian": LinkFamily(_one, _noise_params, _gaussian_observe, _gaussian_log_prob),
    "student-t": LinkFamily(_one, _student_params, _student_observe, _student_log_prob),
    "bernoulli": LinkFamily(_one, _no_params, _bernoulli_observe, _bernoulli_log_prob),
    "bernoulli-gamma": LinkFamily(_one, _rain_params, _rain_observe, _rain_log_prob),
    "poisson": LinkFamily(_one, _no_params, _poisson_observe, _poisson_log_prob),
    "negative-binomial": LinkFamily(_one, _nb_params, _nb_observe, _nb_log_prob),
    "beta": LinkFamily(_one, _beta_params, _beta_observe, _beta_log_prob),
    "mixture": LinkFamily(_two, _mixture_params, _mixture_observe, _mixture_log_prob),
    "lowrank-gaussian": LinkFamily(_lmc_latents, _lmc_params, _lmc_observe, _lmc_log_prob),
}
