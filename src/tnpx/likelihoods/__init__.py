"""Likelihoods: a model's head maps decoder outputs to a predictive distribution of a family.

Families (the model option ``likelihood:``, :mod:`.options`; docs/site/likelihoods.md):
``gaussian`` (:mod:`.gaussian`, today's heads, also as ``heteroscedastic`` /
``homoscedastic``), ``student-t``, ``bernoulli``, ``bernoulli-gamma``, ``poisson``,
``negative-binomial``, ``beta``, ``mixture`` and ``lowrank-gaussian``, one module each. A head
is an ``nn.Module`` with ``n_params`` (decoder outputs per target) and ``family``, whose
``forward(raw [b, n_tgt, n_params])`` returns a ``torch.distributions.Distribution`` with batch
shape ``[b, n_tgt, dim_y]`` (``lowrank-gaussian``: ``[b, n_tgt]``, event ``[dim_y]``), with
``log_prob``, ``mean``, ``variance``, ``sample``, ``quantile`` and ``crps``
(:func:`.scores.crps` and :func:`.scores.quantile` also take torch's ``Normal``). How each
family's outputs are scaled from the user's units (loc 0 for amounts, nothing for counts,
0/1 and fractions): :mod:`.scaling`.

A primitive: it imports no room of tnpx (tests/boundary/test_layers.py).
"""

from .beta import BetaPrediction
from .counts import EXPOSURE_FAMILIES
from .gaussian import SCALE_TRANSFORMS, HeteroscedasticGaussian, HomoscedasticGaussian, normal_crps
from .options import (
    FAMILIES,
    FAMILY_OPTIONS,
    HeadHyper,
    build_likelihood,
    family_of,
    gaussian_only,
    likelihood_head,
    likelihood_problem,
    model_family,
    parse_likelihood,
    refuse_family,
)
from .scaling import SCALING_RULES, density_points, is_continuous, output_scaling, scaling_rule
from .scores import covered, crps, quantile, target_log_prob
from .support import check_exposure, check_exposure_option, check_support, read_exposure

__all__ = [
    "BetaPrediction",
    "EXPOSURE_FAMILIES",
    "FAMILIES",
    "FAMILY_OPTIONS",
    "SCALE_TRANSFORMS",
    "SCALING_RULES",
    "HeadHyper",
    "HeteroscedasticGaussian",
    "HomoscedasticGaussian",
    "build_likelihood",
    "check_exposure",
    "check_exposure_option",
    "check_support",
    "covered",
    "crps",
    "density_points",
    "family_of",
    "gaussian_only",
    "is_continuous",
    "likelihood_head",
    "likelihood_problem",
    "model_family",
    "normal_crps",
    "output_scaling",
    "parse_likelihood",
    "quantile",
    "read_exposure",
    "refuse_family",
    "scaling_rule",
    "target_log_prob",
]
