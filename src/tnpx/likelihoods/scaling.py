"""How a user's outputs are scaled for a model of each family: the one rule the ``table``,
``grid`` and ``stations`` sources fit their output maps by (``value_model = (value - loc) /
scale`` per output column, fitted on the training values) and :func:`tnpx.predict` maps back
with. An affine map that moved zero or stretched a count would take values out of the family's
support (negative rain, a count of 0.37), so:

- ``standardise``: ``gaussian``, ``student-t``, ``mixture``, ``lowrank-gaussian``: the mean and
  the (population) standard deviation, as every source did before the families came;
- ``scale``: ``bernoulli-gamma`` (amounts with dry days): loc 0 (zero stays zero) and scale the
  root mean square of the training values, the spread of an uncentred column;
- ``none``: ``bernoulli``, ``poisson``, ``negative-binomial``, ``beta``: loc 0 and scale 1, the
  values as they are (0/1, whole counts, fractions).

Log-densities of a continuous family pick up the Jacobian ``-log(scale)`` per output in the
user's units; a probability (a count, a 0/1 outcome, a dry day) does not (:func:`density_points`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from .options import parse_likelihood

# family -> how its outputs are scaled (docs/site/likelihoods.md, "Your units")
SCALING_RULES = {
    "gaussian": "standardise",
    "student-t": "standardise",
    "mixture": "standardise",
    "lowrank-gaussian": "standardise",
    "bernoulli-gamma": "scale",
    "bernoulli": "none",
    "poisson": "none",
    "negative-binomial": "none",
    "beta": "none",
}
# families whose values take only some points (counts, 0/1): no Jacobian on a density
DISCRETE = ("bernoulli", "poisson", "negative-binomial")


def scaling_rule(likelihood: str | Mapping) -> str:
    """``standardise``, ``scale`` or ``none``: how the outputs of a model with ``likelihood``
    (a ``likelihood`` option) are scaled (module docstring)."""
    return SCALING_RULES[parse_likelihood(likelihood)[0]]


def output_scaling(
    likelihood: str | Mapping, mean: np.ndarray, std: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``loc``, ``scale`` ``[dim_y]`` (float64) of the outputs of a ``likelihood`` model, from
    the training values' per-column ``mean`` and population ``std`` ``[dim_y]`` (0 allowed;
    these moments are what every source accumulates). ``standardise``: ``mean`` and ``std``
    (1 where 0); ``scale``: 0 and ``sqrt(std² + mean²)`` (1 where 0); ``none``: 0 and 1."""
    mean, std = np.asarray(mean, np.float64), np.asarray(std, np.float64)
    rule = scaling_rule(likelihood)
    if rule == "standardise":
        return mean, np.where(std > 0, std, 1.0)
    if rule == "none":
        return np.zeros_like(mean), np.ones_like(mean)
    rms = np.sqrt(np.square(std) + np.square(mean))
    return np.zeros_like(mean), np.where(rms > 0, rms, 1.0)


def is_continuous(likelihood: str | Mapping) -> bool:
    """Whether every value's ``log_prob`` under ``likelihood`` is a density (no point mass):
    only then may it be compared with a Gaussian's log-density."""
    family, options = parse_likelihood(likelihood)
    mass = family in DISCRETE or family == "bernoulli-gamma"
    return not (mass or (family == "beta" and bool(options.get("spikes"))))


def density_points(likelihood: str | Mapping, y: torch.Tensor) -> torch.Tensor:
    """Where ``log_prob`` at ``y [..., dim_y]`` (model units; zero stays zero) is a density,
    bool like ``y``: those values' log-density in the user's units is less ``log(scale)`` (the
    Jacobian of ``value / scale``). Everywhere for a continuous family, nowhere for a discrete
    one (a probability does not change with units), at ``y > 0`` for ``bernoulli-gamma`` (a
    dry day's probability neither), and inside (0, 1) for ``beta`` with spikes."""
    family, options = parse_likelihood(likelihood)
    if family in DISCRETE:
        return torch.zeros_like(y, dtype=torch.bool)
    if family == "bernoulli-gamma":
        return y > 0
    if family == "beta" and options.get("spikes"):
        return (y > 0) & (y < 1)
    return torch.ones_like(y, dtype=torch.bool)
