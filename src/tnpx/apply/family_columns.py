"""The columns of :func:`tnpx.predict` for a model of any likelihood family
(docs/site/likelihoods.md, "Predictions in your units").

Per output ``<y>``: ``<y>_mean``, ``<y>_std`` and the central ``level`` interval ``<y>_lower``,
``<y>_upper``, as for every model; for a family other than ``gaussian`` the interval is
between the family's own quantiles, so it respects the support (no negative rain, whole
counts, 0 or 1 for a yes/no outcome), and a Bernoulli's ``<y>_mean`` is ``P(y = 1)``.
``quantiles=[0.1, 0.9]`` adds ``<y>_q0.1``, ``<y>_q0.9`` (a Gaussian model's from its mean and
std); families with a point mass at zero add its probability: ``<y>_p_dry`` for
``bernoulli-gamma``, ``<y>_p_zero`` for ``poisson`` and ``negative-binomial``.

Everything is computed in the model's units (float64) and mapped back with the output map
``value = value_model * scale + loc``: means and quantiles by it, standard deviations by
``scale``, probabilities not at all. A scaling by the family's rule (:mod:`tnpx.likelihoods.
scaling`) keeps zero at zero and counts as they are, so the mapped quantiles stay in the
support.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..likelihoods import model_family, output_scaling, quantile, scaling_rule
from ..models.exposure import predict_with_exposures
from ..units import Affine
from .model_columns import STATS
from .predict_values import can_stream

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

    from ..models import NeuralProcess

# family -> its column of the probability of an exact zero
ZERO_MASS = {"bernoulli-gamma": "p_dry", "poisson": "p_zero", "negative-binomial": "p_zero"}


def check_quantiles(quantiles) -> tuple[float, ...]:
    """``quantiles`` (None: none) as a tuple of floats, each strictly inside (0, 1) and none
    twice, else a ``ValueError`` of one line."""
    if quantiles is None:
        return ()
    single = isinstance(quantiles, (int, float, str, bytes))  # "0.9" is no list of numbers
    values = [quantiles] if single else list(quantiles)
    for q in values:
        ok = isinstance(q, (int, float, np.floating)) and not isinstance(q, bool)
        if not ok or not 0 < float(q) < 1:
            raise ValueError(
                f"quantiles must each lie strictly between 0 and 1 (e.g. [0.1, 0.5, 0.9]), "
                f"got {q!r}"
            )
    names = [quantile_name(float(q)) for q in values]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"quantiles: {twice[0][1:]} is given twice; give each quantile once")
    return tuple(float(q) for q in values)


def quantile_name(q: float) -> str:
    """The column suffix of quantile ``q``: ``q0.1``, ``q0.975``."""
    return f"q{q:g}"


def result_stats(model: NeuralProcess, quantiles: tuple[float, ...]) -> tuple[str, ...]:
    """The result's columns per output after ``<y>_``, in order."""
    extra = (ZERO_MASS[model_family(model)],) if model_family(model) in ZERO_MASS else ()
    return (*STATS, *(quantile_name(q) for q in quantiles), *extra)


def support_output_map(model: NeuralProcess, yc: np.ndarray) -> Affine | None:
    """For a model whose family is not standardised (:func:`tnpx.likelihoods.scaling_rule`),
    the output map its rule fits to the context's outputs ``yc [n_ctx, dim_y]`` (NaN:
    missing): what :func:`tnpx.predict` uses instead of the context's mean and std where no
    stored normalisation applies. None for a standardised family."""
    family = model_family(model)
    if scaling_rule(family) == "standardise":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column without values: NaN
        mean, std = np.nanmean(yc, 0), np.nanstd(yc, 0)
    mean, std = np.nan_to_num(mean), np.nan_to_num(std)  # a column with no value: identity
    return Affine(*output_scaling(family, mean, std))


def family_arrays(
    model: NeuralProcess,
    xc: np.ndarray,
    yc: np.ndarray,
    xt: np.ndarray,
    probs: tuple[float, ...],
    chunk_size: int = 16384,
    observed: np.ndarray | None = None,
    exposure_c: np.ndarray | None = None,
    exposure_t: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """One task's prediction in the model's units (float64): ``mean`` and ``std`` ``[n_tgt,
    dim_y]``, the family's quantiles at ``probs`` (``q [len(probs), n_tgt, dim_y]``) and, for a
    family with a point mass at zero, ``p0 [n_tgt, dim_y]`` (``P(y = 0)``). Inputs as
    :func:`~tnpx.apply.predict_values.predict_arrays`'; a count model's exposures
    ``exposure_c [n_ctx]`` and ``exposure_t [n_tgt]`` (None: 1; :mod:`tnpx.models.exposure`).
    Targets are predicted ``chunk_size`` at a time where the model can stream (each chunk one
    call: its targets do not interact)."""
    dtype = model.dtype or torch.get_default_dtype()
    device = model.device or torch.device("cpu")

    def tensor(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, dtype=dtype, device=device).unsqueeze(0)

    mask_yc = None if observed is None else torch.as_tensor(observed, device=device)[None]
    e_c = None if exposure_c is None else tensor(exposure_c[:, None])  # [1, n_ctx, 1]
    step = chunk_size if can_stream(model) else max(len(xt), 1)
    zero_mass = model_family(model) in ZERO_MASS
    parts: list[dict[str, torch.Tensor]] = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(xt), step):
                part_t = slice(start, start + step)
                e_t = None if exposure_t is None else tensor(exposure_t[part_t, None])
                pred = predict_with_exposures(
                    model, tensor(xc), tensor(yc), tensor(xt[part_t]), None, mask_yc, e_c, e_t
                )
                part = {"mean": pred.mean[0], "std": pred.stddev[0]}
                part["q"] = torch.stack([quantile(pred, q)[0] for q in probs]).to(pred.mean)
                if zero_mass:
                    part["p0"] = pred.cdf(torch.zeros_like(pred.mean))[0]
                parts.append(part)
    finally:
        model.train(was_training)
    axis = {"q": 1}
    return {
        k: torch.cat([p[k] for p in parts], axis.get(k, 0)).double().cpu().numpy() for k in parts[0]
    }


def family_frame(
    inputs: pd.DataFrame,
    y_cols: list,
    arrays: dict[str, np.ndarray],
    y_map: Affine,
    model: NeuralProcess,
    quantiles: tuple[float, ...],
) -> pd.DataFrame:
    """The target ``inputs``, then per output the columns of :func:`result_stats` in the
    user's units: ``arrays`` (:func:`family_arrays`, whose ``q`` holds the interval's two
    ends then ``quantiles``) mapped back with ``y_map``."""
    frame = inputs.copy()
    mean, std = y_map.to_user(arrays["mean"]), arrays["std"] * y_map.scale
    q = arrays["q"] * y_map.scale + y_map.loc  # [n_probs, n_tgt, dim_y]: monotone in q
    zero = ZERO_MASS.get(model_family(model))
    for j, col in enumerate(y_cols):
        frame[f"{col}_mean"] = mean[:, j]
        frame[f"{col}_std"] = std[:, j]
        frame[f"{col}_lower"] = q[0, :, j]
        frame[f"{col}_upper"] = q[1, :, j]
        for k, p in enumerate(quantiles):
            frame[f"{col}_{quantile_name(p)}"] = q[2 + k, :, j]
        if zero is not None:
            frame[f"{col}_{zero}"] = arrays["p0"][:, j]
    return frame


def add_normal_quantiles(
    frame: pd.DataFrame,
    y_cols: list,
    mean: np.ndarray,
    std: np.ndarray,
    quantiles: tuple[float, ...],
) -> pd.DataFrame:
    """``frame`` with ``<y>_q<p>`` per output and quantile: ``mean + std Phi^-1(p)`` of a
    Gaussian prediction (``mean``, ``std`` ``[n_tgt, dim_y]`` in the user's units; the
    moment-matched Gaussian of a latent NP, as its interval)."""
    from statistics import NormalDist

    for j, col in enumerate(y_cols):
        for p in quantiles:
            z = NormalDist().inv_cdf(p)
            frame[f"{col}_{quantile_name(p)}"] = mean[:, j] + z * std[:, j]
    return frame


def interval_probs(level: float) -> tuple[float, float]:
    """The probabilities of a central ``level`` interval's ends."""
    return (1 - level) / 2, 1 - (1 - level) / 2
