"""How far outside its training range a model trained on a user's data stays calibrated.

When ``tnpx train`` writes the final model of a run on a user's data (a source whose
normalisation records each input's training ``range``, :mod:`tnpx.data.grid`,
:mod:`tnpx.data.table`), it scores the model on its first few validation batches moved whole
(context and targets together) along one input at a time by ``d`` widths of that input's
training range, ``d`` in :data:`LADDER` (half the tasks up, half down), and stores per input
column in ``normalisation["x"]["limits"]``:

- ``warn_at``: the largest ``d`` up to which every rung keeps the 95 % coverage at least
  :data:`WARN_COVERAGE` and the LL per target within :data:`LL_MARGIN` of the unmoved tasks';
- ``refuse_at``: the first ``d`` whose coverage falls below :data:`REFUSE_COVERAGE` (the
  ladder's last rung where none does): :func:`tnpx.predict` refuses values further out
  (:mod:`tnpx.apply.training_range`).

Both thresholds are capped by the unmoved tasks' own coverage less a tolerance, so the limits
measure how the model degrades with distance, not whether it was calibrated to begin with
(``tnpx eval`` reports that). This mirrors the zoo's safe range
(:mod:`tnpx.evaluation.extrapolation`: coverage of held-out tasks as targets move further
out), measured here on the model's own validation tasks and in the data's units.

A moved task keeps its outputs, so the measurement is only meaningful along an input in
which the field is roughly stationary (its statistics do not change along it: time in a
climate without trend, longitude along a band); along one it is not, the limits say how the
model treats absolute positions it never saw, which is a lower bound on the harm. ``d`` is the
shift, close to the distance :func:`tnpx.predict` measures for a task inside the training
range. The cost is ``1 + len(LADDER) * dim_x`` forward passes of at most :data:`MAX_BATCHES`
validation batches, fewer once :data:`ENOUGH_TARGETS` targets are in (a rung that refuses ends
its input's ladder): about 4 s for the iris example's model (320-point windows) on one core.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import torch

from ..batch import Batch, observed_mean
from ..config import ExperimentConfig
from ..data import TaskSampler, batch_at
from ..models import NeuralProcess

LADDER = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)  # shifts, in training-range widths
WARN_COVERAGE, REFUSE_COVERAGE = 0.90, 0.80  # the zoo's safe range's thresholds
TOLERANCE = (0.02, 0.10)  # below the unmoved coverage: warn, refuse (a poor model's own caps)
LL_MARGIN = 0.25  # nats per target: the LL a rung may lose against the unmoved tasks
MAX_BATCHES = 2
ENOUGH_TARGETS = 4000  # no further batch once this many targets are scored (big windows)
Z95 = NormalDist().inv_cdf(0.975)


def with_range_limits(
    model: NeuralProcess, sampler: TaskSampler, normalisation: dict, cfg: ExperimentConfig
) -> dict:
    """``normalisation`` (the sampler's, left as it is) with ``x["limits"]`` measured on the
    model's validation tasks, where :func:`measured_limits` gives any."""
    device = next(model.parameters()).device
    limits = measured_limits(model, sampler, cfg.train.val_batches, device)
    if limits is None:
        return normalisation
    return {**normalisation, "x": {**normalisation["x"], "limits": limits}}


def measured_limits(
    model: NeuralProcess, sampler: TaskSampler, n_batches: int, device: torch.device
) -> dict | None:
    """``{"warn_at": [dim_x], "refuse_at": [dim_x], "measured_on": text}`` for ``model`` on
    at most ``min(n_batches, MAX_BATCHES)`` validation batches of ``sampler`` (module
    docstring); None where the sampler records no training range or has no validation split
    (:func:`tnpx.predict` then uses its defaults)."""
    x = (getattr(sampler, "normalisation", None) or {}).get("x", {})
    if not x.get("range"):
        return None
    spans = np.asarray(x["range"], dtype=np.float64)
    shifts = (spans[:, 1] - spans[:, 0]) / np.asarray(x["scale"], dtype=np.float64)
    batches: list[Batch] = []
    try:
        while len(batches) < min(n_batches, MAX_BATCHES) and _targets(batches) < ENOUGH_TARGETS:
            batches.append(batch_at(sampler, len(batches), split="val").to(device))
    except ValueError:  # no validation split: nothing to measure on
        return None
    was_training = model.training
    model.eval()
    try:
        base = _scores(model, batches, None, 0.0)
        limits = [_ladder(model, batches, j, width, base) for j, width in enumerate(shifts)]
    finally:
        model.train(was_training)
    n_tasks = sum(b.batch_size for b in batches)
    return {
        "warn_at": [w for w, _ in limits],
        "refuse_at": [r for _, r in limits],
        "measured_on": f"{n_tasks} validation tasks",
    }


def _targets(batches: list[Batch]) -> int:
    return sum(b.xt.shape[0] * b.xt.shape[1] for b in batches)


def _ladder(model, batches, j: int, width: float, base) -> tuple[float, float]:
    """``(warn_at, refuse_at)`` of input ``j`` (``width``: its training range in model units)."""
    if width <= 0:  # no range to move along: predict checks nothing there
        return LADDER[-1], LADDER[-1]
    scores = []
    for d in LADDER:
        scores.append(_scores(model, batches, j, d * width))
        if not scores[-1][0] >= min(REFUSE_COVERAGE, base[0] - TOLERANCE[1]):
            break
    return read_ladder(base, scores)


def read_ladder(
    base: tuple[float, float], scores: list[tuple[float, float]]
) -> tuple[float, float]:
    """``(warn_at, refuse_at)`` from the unmoved ``(coverage, LL)`` and those of the rungs of
    :data:`LADDER` in order (a ladder cut short ends at its first refusing rung)."""
    warn_cover = min(WARN_COVERAGE, base[0] - TOLERANCE[0])
    refuse_cover = min(REFUSE_COVERAGE, base[0] - TOLERANCE[1])
    warn_at, warned = 0.0, False
    for d, (coverage, ll) in zip(LADDER, scores):
        if not coverage >= refuse_cover:  # NaN (a prediction not finite) fails too
            return warn_at, d
        warned = warned or not (coverage >= warn_cover and ll >= base[1] - LL_MARGIN)
        warn_at = warn_at if warned else d
    return warn_at, LADDER[-1]


@torch.no_grad()
def _scores(model, batches: list[Batch], j: int | None, shift: float) -> tuple[float, float]:
    """Mean 95 % coverage and LL per target of ``batches`` moved along input ``j`` by
    ``shift`` (model units; even tasks up, odd down)."""
    coverage, ll = [], []
    for batch in batches:
        if j is not None:
            batch = _moved(batch, j, shift)
        pred = model.predict_batch(batch)
        inside = ((batch.yt - pred.mean).abs() <= Z95 * pred.stddev).to(pred.mean.dtype)
        coverage.append(observed_mean(inside, batch.mask_t, batch.mask_yt))
        ll.append(model.log_likelihood(batch, pred))
    return torch.cat(coverage).mean().item(), torch.cat(ll).mean().item()


def _moved(batch: Batch, j: int, shift: float) -> Batch:
    """``batch`` with input ``j`` of every context and target point moved by ``+shift`` in
    even tasks and ``-shift`` in odd ones (``[batch, n, dim_x]`` copies, the rest shared)."""
    sign = torch.ones(batch.batch_size, 1, dtype=batch.xc.dtype, device=batch.xc.device)
    sign[1::2] = -1
    xc, xt = batch.xc.clone(), batch.xt.clone()
    xc[..., j] += sign * shift
    xt[..., j] += sign * shift
    return Batch(xc, batch.yc, xt, batch.yt, batch.mask_c, batch.info, batch.mask_t,
                 batch.mask_yc, batch.mask_yt)  # fmt: skip
