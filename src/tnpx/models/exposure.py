"""A count model's exposures (issue 52, item 4; docs/site/likelihoods.md, "Exposure").

A batch may carry each point's exposure, the factor on its count's rate (person-years, hours
observed): ``Batch.info["exposure_c"]`` ``[batch, n_ctx, 1]`` and ``["exposure_t"]``
``[batch, n_tgt, 1]`` (the ``table`` source's option ``exposure``, the ``gp-link`` sampler's
count tasks). A ``poisson`` or ``negative-binomial`` model then

- sees the context as rates per unit exposure, ``yc / exposure_c`` (what is comparable across
  points; the context is never scored, so a rate that is no integer is harmless there), and
- predicts each target's count at its exposure: the rate (the mean) times ``exposure_t``.

Every model predicts a batch through :func:`predict_exposed` (``NeuralProcess.predict_batch``),
so training, validation and ``tnpx eval`` follow; :func:`predict_with_exposures` is the same
for tensors (``tnpx.predict``). Either exposure may be absent (None: 1 everywhere); with none,
the call is the model's own, bit for bit. A model of another family takes exposures only where
they are all 1 (what it assumes), else it refuses them in one line: it cannot use them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch
from torch.distributions import Distribution

from ..likelihoods import EXPOSURE_FAMILIES, model_family
from ..likelihoods.counts import NegativeBinomialPrediction, PoissonPrediction
from ..likelihoods.poisson_lognormal import PoissonLogNormalPrediction

if TYPE_CHECKING:
    from ..batch import Batch
    from .base import NeuralProcess

KEYS = ("exposure_c", "exposure_t")  # Batch.info's names


def predict_exposed(model: NeuralProcess, batch: Batch) -> Distribution:
    """``model``'s prediction for ``batch`` with the exposures ``batch.info`` carries (none:
    ``model(xc, yc, xt, mask_c, mask_yc)``)."""
    exposure_c, exposure_t = (batch.info.get(key) for key in KEYS)
    return predict_with_exposures(
        model, batch.xc, batch.yc, batch.xt, batch.mask_c, batch.mask_yc, exposure_c, exposure_t
    )


def predict_with_exposures(
    model: NeuralProcess,
    xc: torch.Tensor,
    yc: torch.Tensor,
    xt: torch.Tensor,
    mask_c: torch.Tensor | None = None,
    mask_yc: torch.Tensor | None = None,
    exposure_c: torch.Tensor | None = None,
    exposure_t: torch.Tensor | None = None,
) -> Distribution:
    """``model(xc, yc / exposure_c, xt, mask_c, mask_yc)`` with each target's rate times
    ``exposure_t``. ``exposure_c`` ``[batch, n_ctx, 1]`` (or ``dim_y`` wide), ``exposure_t``
    ``[batch, n_tgt, 1]``, each > 0 (the sources check); None: 1.

    Raises:
        ValueError: exposures for a model that is not a count model (unless all 1), or of a
            shape that does not fit the points (one line).
    """
    if exposure_c is None and exposure_t is None:
        return model(xc, yc, xt, mask_c=mask_c, mask_yc=mask_yc)
    if model_family(model) not in EXPOSURE_FAMILIES:
        refuse_exposures(model, exposure_c, exposure_t)
        return model(xc, yc, xt, mask_c=mask_c, mask_yc=mask_yc)  # every exposure is 1
    if exposure_c is not None and isinstance(yc, torch.Tensor):  # else validation names yc
        yc = per_unit(yc, exposure_c, model.dim_y, "exposure_c")
    prediction = model(xc, yc, xt, mask_c=mask_c, mask_yc=mask_yc)
    if exposure_t is None:
        return prediction
    return times_exposure(
        prediction, _checked(exposure_t, xt, model.dim_y, "exposure_t"), model.name
    )


def without_exposures(batch: Batch) -> Batch:
    """``batch`` without its exposures (the same batch where it has none): for the per-task
    baselines, which read the context's counts as they are and know no exposure."""
    if not any(key in batch.info for key in KEYS):
        return batch
    info = {k: v for k, v in batch.info.items() if k not in KEYS}
    return replace(batch, info=info)


def rates_batch(batch: Batch) -> Batch:
    """``batch`` with its outputs per unit exposure (``yc / exposure_c``, ``yt /
    exposure_t``) and no exposures left: what a figure draws beside a count model's rate (its
    prediction at exposure 1). The same batch where it carries none."""
    if not any(key in batch.info for key in KEYS):
        return batch
    e_c, e_t, dim_y = batch.info.get("exposure_c"), batch.info.get("exposure_t"), batch.yc.shape[-1]
    yc = batch.yc if e_c is None else per_unit(batch.yc, e_c, dim_y, "exposure_c")
    yt = batch.yt
    if e_t is not None and yt is not None:
        yt = per_unit(yt, e_t, dim_y, "exposure_t")
    return replace(without_exposures(batch), yc=yc, yt=yt)


def per_unit(y: torch.Tensor, exposure: torch.Tensor, dim_y: int, key: str) -> torch.Tensor:
    """Counts ``y [batch, n, dim_y]`` as rates per unit ``exposure`` ``[batch, n, 1]``
    (named ``key`` in messages), in ``y``'s dtype."""
    return y / _checked(exposure, y, dim_y, key).to(y)


def refuse_exposures(model: NeuralProcess, *exposures: torch.Tensor | None) -> None:
    """A ``ValueError`` (one line) where one of ``exposures`` is not 1 throughout and
    ``model`` is no count model, which would ignore it: for the models that predict a batch
    their own way (``gp-oracle``) and :func:`predict_with_exposures`."""
    if model_family(model) in EXPOSURE_FAMILIES:
        return
    if all(e is None or bool((e == 1).all()) for e in exposures):
        return  # the exposure every other model assumes: nothing to use
    raise ValueError(
        f"{model.name}: the batch carries exposures (info exposure_c / exposure_t), which only "
        f"a model with likelihood {' or '.join(EXPOSURE_FAMILIES)} takes; its likelihood is "
        f"{model_family(model)!r}"
    )


def times_exposure(prediction: Distribution, exposure: torch.Tensor, name: str) -> Distribution:
    """A count ``prediction`` ``[batch, n_tgt, dim_y]`` re-built with its rate (its mean)
    times ``exposure`` ``[batch, n_tgt, 1]`` (cast to the prediction's dtype and device)."""
    if isinstance(prediction, PoissonPrediction):
        return PoissonPrediction(prediction.rate, exposure.to(prediction.rate))
    if isinstance(prediction, PoissonLogNormalPrediction):
        loc, scale = prediction.loc, prediction.scale
        return PoissonLogNormalPrediction(loc, scale, exposure.to(loc))
    if isinstance(prediction, NegativeBinomialPrediction):  # log(mean / r) + log(exposure)
        logits = prediction.logits + exposure.to(prediction.logits).log()
        return NegativeBinomialPrediction.from_logits(prediction.total_count, logits)
    raise ValueError(
        f"{name}: its prediction ({type(prediction).__name__}) takes no exposure; only the "
        "poisson and negative-binomial heads' do"
    )


def _checked(exposure: torch.Tensor, points: torch.Tensor, dim_y: int, key: str) -> torch.Tensor:
    """``exposure``, checked to be ``[batch, n, 1]`` (or ``dim_y`` wide) for ``points
    [batch, n, ...]``: a ``ValueError`` of one line otherwise."""
    want = tuple(points.shape[:2])
    shape = tuple(exposure.shape) if isinstance(exposure, torch.Tensor) else ()
    if not (len(shape) == 3 and shape[:2] == want and shape[2] in (1, dim_y)):
        raise ValueError(f"{key}: expected shape [{want[0]}, {want[1]}, 1], got {list(shape)}")
    return exposure
