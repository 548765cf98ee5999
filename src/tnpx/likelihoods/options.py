"""The model option ``likelihood:``: a family name or a mapping ``{name: <family>, ...options}``
(today's ``heteroscedastic`` / ``homoscedastic`` keep their meaning: the Gaussian heads), read
into a head, and the one-line refusals of the models and paths that take a Gaussian only.

The option is kept as the user gave it (a string or a plain dict) in the model's ``Hyper``, so a
checkpoint records it as plain data and rebuilds the same head.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from torch import nn

from ..input_checks import check_option
from .bernoulli import BernoulliHead
from .bernoulli_gamma import BernoulliGammaHead
from .beta import BetaHead
from .counts import NegativeBinomialHead, PoissonHead
from .gaussian import HeteroscedasticGaussian, HomoscedasticGaussian
from .lowrank import LowRankHead
from .mixture import MixtureHead
from .poisson_lognormal import PoissonLogNormalHead
from .student_t import StudentTHead

NOISES = ("heteroscedastic", "homoscedastic")  # today's names: the gaussian family's noise
# poisson: none (variance = mean) | lognormal (the log rate uncertain: Poisson-log-normal)
OVERDISPERSION = ("none", "lognormal")
# family -> the options its mapping takes (besides ``name``)
FAMILY_OPTIONS: dict[str, tuple[str, ...]] = {
    "gaussian": ("noise", "transform", "min_std"),
    "student-t": ("df", "min_std"),
    "bernoulli": (),
    "bernoulli-gamma": (),
    "poisson": ("overdispersion",),
    "negative-binomial": (),
    "beta": ("spikes",),
    "mixture": ("components", "min_std"),
    "lowrank-gaussian": ("rank", "min_std"),
}
FAMILIES = tuple(FAMILY_OPTIONS)
CHOICES = f"{', '.join(NOISES + FAMILIES)}, or a mapping {{name: <family>, ...options}}"  # messages


def parse_likelihood(option: str | Mapping) -> tuple[str, dict[str, Any]]:
    """``(family, options)`` of a ``likelihood`` option; a ``ValueError`` of one line naming
    the valid choices for a name, mapping or option that is not one."""
    if isinstance(option, str):
        if option in NOISES:
            return "gaussian", {"noise": option}
        name, options = option, {}
    elif isinstance(option, Mapping):
        options = dict(option)
        name = options.pop("name", None)
        if name is None:
            raise ValueError(f"likelihood {dict(option)!r} has no name; valid names: {CHOICES}")
        if name in NOISES and "noise" not in options:  # {name: homoscedastic, min_std: 0.1}
            name, options = "gaussian", {"noise": name, **options}
    else:
        raise ValueError(f"likelihood = {option!r}; valid choices: {CHOICES}")
    if name not in FAMILY_OPTIONS:
        raise ValueError(f"likelihood {name!r} is unknown; valid choices: {CHOICES}")
    unknown = sorted(set(options) - set(FAMILY_OPTIONS[name]))
    if unknown:
        takes = ", ".join(FAMILY_OPTIONS[name]) or "no options"
        raise ValueError(f"likelihood {name} does not take {unknown}; it takes: {takes}")
    if "min_std" in options and not _non_negative(options["min_std"]):
        raise ValueError(f"likelihood {name} option min_std must be a number >= 0")
    return name, options


def _non_negative(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def family_of(option: str | Mapping) -> str:
    """The family a ``likelihood`` option names (``heteroscedastic`` -> ``gaussian``)."""
    return parse_likelihood(option)[0]


def build_likelihood(
    name: str | Mapping, dim_y: int, min_std: float, transform: str = "softplus"
) -> nn.Module:
    """The head a ``likelihood`` option describes, for ``dim_y`` outputs. ``min_std`` and
    ``transform`` are the model's own options (``HeadHyper``): the defaults of a mapping's
    ``min_std`` and ``transform``."""
    family, o = parse_likelihood(name)
    min_std = o.get("min_std", min_std)
    if family == "gaussian":
        noise = o.get("noise", "heteroscedastic")
        check_option("likelihood gaussian option noise", noise, NOISES)
        if noise == "heteroscedastic":
            return HeteroscedasticGaussian(dim_y, min_std, o.get("transform", transform))
        return HomoscedasticGaussian(dim_y, min_std)
    if family == "student-t":
        return StudentTHead(dim_y, min_std, o.get("df", "per-target"))
    if family == "mixture":
        return MixtureHead(dim_y, min_std, o.get("components", 3))
    if family == "lowrank-gaussian":
        return LowRankHead(dim_y, min_std, o.get("rank", 1))
    if family == "beta":
        return BetaHead(dim_y, o.get("spikes", False))
    if family == "poisson":
        spread = o.get("overdispersion", "none")
        check_option("likelihood poisson option overdispersion", spread, OVERDISPERSION)
        return PoissonLogNormalHead(dim_y) if spread == "lognormal" else PoissonHead(dim_y)
    plain = {
        "bernoulli": BernoulliHead,
        "bernoulli-gamma": BernoulliGammaHead,
        "negative-binomial": NegativeBinomialHead,
    }
    return plain[family](dim_y)


def likelihood_problem(option: object, dim_y: int = 1) -> str | None:
    """Why ``option`` is no valid ``likelihood`` for ``dim_y`` outputs (one line), or None:
    what the config check reports before anything is built."""
    try:
        build_likelihood(option, dim_y, 1e-3)  # type: ignore[arg-type]
    except ValueError as err:
        return str(err)
    return None


@dataclass
class HeadHyper:
    """Likelihood options shared by every model with a likelihood head."""

    # a family or {name: <family>, ...options} (tnpx.likelihoods; docs/site/likelihoods.md);
    # heteroscedastic | homoscedastic: the gaussian family, as before the families came
    likelihood: str | dict = "heteroscedastic"
    min_std: float = 1e-3
    # softplus (TE) | exp | affine_exp (TNP-KR code) | sqrt_softplus (cambridge-mlg/tnp) |
    # exp_raw (TNP-D code) | affine_softplus (TNP-D code, bound_std; CNP family in the TNP-KR
    # code) | exp_raw_or_affine_softplus (the TNP-KR code's TNP-D): see HeteroscedasticGaussian
    scale_transform: str = "softplus"
    # True: each task's outputs are centred on its context's mean before the model sees them
    # and the mean put back on the prediction (tnpx.models.centring): the prediction shifts
    # exactly with the outputs, so a task whose level no training task had is no extrapolation
    centre_outputs: bool = False


def likelihood_head(hyper: HeadHyper, dim_y: int) -> nn.Module:
    """The head a model's ``HeadHyper`` options describe."""
    return build_likelihood(hyper.likelihood, dim_y, hyper.min_std, hyper.scale_transform)


def gaussian_only(option: str | Mapping, where: str, why: str) -> None:
    """A ``ValueError`` (one line) unless ``option`` names the gaussian family: for the models
    whose prediction is built of Gaussians (``where``: the model, ``why``: the reason)."""
    family = family_of(option)
    if family != "gaussian":
        raise ValueError(
            f"{where} takes the gaussian likelihood only ({why}); got likelihood {family!r}"
        )


def model_family(model: object) -> str:
    """The family of ``model``'s likelihood head (``gaussian`` for a model without one)."""
    return getattr(getattr(model, "likelihood", None), "family", "gaussian")


def refuse_family(model: object, path: str) -> None:
    """A ``ValueError`` (one line) where ``model`` has a non-Gaussian likelihood and ``path``
    (``tnpx.predict``, ``tnpx.sample``, ...) handles Gaussian predictions only, for now."""
    family = model_family(model)
    if family != "gaussian":
        name = getattr(model, "name", type(model).__name__)
        raise ValueError(
            f"{path} does not take a {family!r} likelihood yet ({name} has one): it handles "
            "gaussian models only; call the model itself for its distribution"
        )
