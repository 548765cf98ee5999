"""The numbers of a Gaussian prediction (:mod:`tnpx.apply.predict_steps`): the model called on
one task's targets, a chunk at a time where it can stream, and its mean and standard deviation
put into the result's columns with a central Gaussian interval. Models of the other likelihood
families: :mod:`tnpx.apply.family_columns`."""

from __future__ import annotations

from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

    from ..models import NeuralProcess


# -- the model call ----------------------------------------------------------------------------
def can_stream(model: NeuralProcess) -> bool:
    """Whether ``model.predict_streamed`` applies: not where targets interact (TNP-ND), not
    for latent and bootstrapping NPs (chunks would draw different latents)."""
    return model.streamable()


def predict_arrays(
    model: NeuralProcess,
    xc: np.ndarray,
    yc: np.ndarray,
    xt: np.ndarray,
    chunk_size: int = 16384,
    observed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Predictive mean and std ``[n_tgt, dim_y]`` (float64) of one task in the model's units:
    ``xc [n_ctx, dim_x]``, ``yc [n_ctx, dim_y]``, ``xt [n_tgt, dim_x]``; ``observed [n_ctx,
    dim_y]`` (bool, or None: all observed) is the model's ``mask_yc``.

    Targets are decoded ``chunk_size`` at a time (``predict_streamed``), so memory is bounded
    by a chunk. Models that cannot stream (:func:`can_stream`: TNP-ND, latent and
    bootstrapping NPs) are called once on all targets; for latent NPs the mean and std are the
    mixture's moments.
    """
    dtype = model.dtype or torch.get_default_dtype()
    device = model.device or torch.device("cpu")

    def tensor(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, dtype=dtype, device=device).unsqueeze(0)

    # mask_yc only where an output is missing: every other call is the one it always was
    masked = {} if observed is None else {"mask_yc": torch.as_tensor(observed, device=device)[None]}
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if can_stream(model):
                pred = model.predict_streamed(
                    tensor(xc), tensor(yc), tensor(xt), None, chunk_size, **masked
                )
            else:
                pred = model(tensor(xc), tensor(yc), tensor(xt), **masked)
            mean, std = pred.mean[0], pred.stddev[0]
    finally:
        model.train(was_training)
    return mean.double().cpu().numpy(), std.double().cpu().numpy()


def prediction_frame(
    inputs: pd.DataFrame, y_cols: list, mean: np.ndarray, std: np.ndarray, level: float
) -> pd.DataFrame:
    """The target inputs, then per output ``<y>_mean``, ``<y>_std``, ``<y>_lower``,
    ``<y>_upper``: the central ``level`` interval of the Gaussian ``N(mean, std^2)``."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    frame = inputs.copy()
    for j, col in enumerate(y_cols):
        frame[f"{col}_mean"] = mean[:, j]
        frame[f"{col}_std"] = std[:, j]
        frame[f"{col}_lower"] = mean[:, j] - z * std[:, j]
        frame[f"{col}_upper"] = mean[:, j] + z * std[:, j]
    return frame
