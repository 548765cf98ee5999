"""One training step: the loss of a batch, its gradients, the optimiser and schedule steps,
the non-finite guard (:mod:`tnpx.training.guard`) and the weight average's update. The
forward and loss run in ``train.precision`` (:mod:`tnpx.training.precision`: autocast, and
a gradient scaler for ``16-mixed``) and, with ``train.compile``, compiled
(:mod:`tnpx.training.compiled`).

The model's value checks of its inputs (NaN, Inf, magnitude; :mod:`tnpx.input_checks`) are
off inside a step (``trusted_values``): the batches come from the task sampler, whose data
sources check the user's values when they load them, and each check would synchronise a GPU
on every forward. Shapes, dtypes and devices are still checked; a non-finite loss still stops
the run at the guard. The step's one host sync is the guard's (``tests/training/
test_no_host_syncs.py`` counts them)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..batch import Batch
from ..input_checks import trusted_values
from .guard import TrainingDiverged, all_finite, what_diverged
from .optim import clip_gradients
from .session import Session


def train_step(run: Session, batch: Batch, step: int) -> torch.Tensor:
    """Train ``run`` on ``batch`` (the batch of ``step``); returns the loss (a 0-d tensor).

    Raises:
        TrainingDiverged: the loss, a gradient or a weight is NaN/Inf after the update
            (tested before anything can checkpoint this step's weights). Under ``16-mixed``
            a non-finite gradient is the scaler's: it skips that step instead.
    """
    precision = run.precision
    # the sampler's batches: no value check (a host sync) per forward
    with trusted_values(), precision.autocast(batch.xc.device):
        loss = run.objective(batch)
    run.optimizer.zero_grad(set_to_none=True)
    precision.backward(loss)
    precision.unscale(run.optimizer)  # clipping sees the true gradients
    clip_gradients(run.params, run.cfg.train.clip_value, run.cfg.train.clip_norm)
    precision.step(run.optimizer, run.schedule)
    grads = not precision.skips_steps  # a scaler skips the steps whose gradients are Inf/NaN
    if not all_finite(loss, run.params, grads):  # before any checkpoint of this step's weights
        raise TrainingDiverged(
            f"{what_diverged(loss, run.named, grads)} at step {step}; {_kept(run.ckpt_path)}"
            + precision.hint()
        )
    if run.ema is not None:
        run.ema.update(run.model)
    return loss


def _kept(ckpt_path: Path) -> str:
    """What a diverged run leaves to resume from, for its message."""
    return f"last good checkpoint: {ckpt_path}" if ckpt_path.exists() else "no checkpoint yet"
