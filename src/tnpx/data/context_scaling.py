"""Tasks as :func:`tnpx.predict` shows them to a model: each task's inputs mapped from its
context's range onto the training box, its outputs standardised by its context's moments.

:func:`tnpx.predict` does exactly this to a user's data (:mod:`tnpx.apply.unit_choice`), so a
model trained only on raw prior draws meets, through ``predict``, tasks it never saw: a context
whose range is always the full box and whose outputs always have mean 0 and std 1, while the
targets beyond the context carry the prior's spread *relative to that context's std* (a smooth
draw whose context varies little standardises to far-away values of several units). Trained on
raw draws, the zoo's models put 12–15 % of targets beyond one context width outside their 95 %
interval through ``predict`` (``results/pretrained/safe-range.md``). A sampler option
``context_scaling = p`` passes each training task through this map with probability ``p``.

The map equals :func:`tnpx.apply.unit_choice.fit_units` with the context's range (a float64
re-derivation is tested), except that a task whose context has fewer than two distinct inputs
keeps its inputs unchanged (``predict`` would use the targets' range, which in training is the
sampler's, not a user's).
"""

from __future__ import annotations

import torch

from ..batch import Batch
from ..units import REL_STD_FLOOR


def scale_like_predict(
    batch: Batch, box: tuple[float, float], chosen: torch.Tensor | None = None
) -> Batch:
    """``batch`` with each chosen task mapped as :func:`tnpx.predict` maps a user's task.

    Args:
        batch: tasks without context masks; ``xc [B, Nc, Dx]``, ``yc [B, Nc, Dy]``, ``xt [B, Nt,
            Dx]``, ``yt [B, Nt, Dy]``.
        box: the training box ``(low, high)`` the context's range is mapped onto (every axis).
        chosen: ``[B]`` bool, which tasks to map (default all).

    Returns:
        A new batch (the input's tensors are not changed). Its ``info`` is empty where any
        task was mapped: per-task generating hyper-parameters (the GP oracle's) no longer
        describe the mapped tasks.
    """
    if batch.mask_c is not None:
        raise ValueError("scale_like_predict: tasks with context masks are not supported")
    b, n_ctx = batch.xc.shape[:2]
    chosen = torch.ones(b, dtype=torch.bool) if chosen is None else chosen
    if n_ctx == 0 or not chosen.any():
        return batch
    xc, yc, xt = batch.xc.double(), batch.yc.double(), batch.xt.double()
    lo, hi = xc.amin(1, keepdim=True), xc.amax(1, keepdim=True)  # [B, 1, Dx]
    spread = hi > lo
    box_lo, box_w = float(box[0]), float(box[1]) - float(box[0])
    # x_model = box_lo + (x - lo) * box_w / (hi - lo): the context's range onto the box.
    x_scale = torch.where(spread, (hi - lo) / box_w, torch.ones_like(hi))
    x_loc = torch.where(spread, lo - box_lo * x_scale, torch.zeros_like(lo))
    y_mean = yc.mean(1, keepdim=True)
    y_std = yc.std(1, keepdim=True, correction=0)  # population std, as predict's
    y_scale = torch.where(y_std <= REL_STD_FLOOR * y_mean.abs(), torch.ones_like(y_std), y_std)
    pick = chosen[:, None, None]

    def mapped(values: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, like) -> torch.Tensor:
        return torch.where(pick, (values - loc) / scale, values).to(like.dtype)

    yt = batch.yt
    if yt is not None:
        yt = mapped(yt.double(), y_mean, y_scale, batch.yt)
    return Batch(
        mapped(xc, x_loc, x_scale, batch.xc),
        mapped(yc, y_mean, y_scale, batch.yc),
        mapped(xt, x_loc, x_scale, batch.xt),
        yt,
        None,
        {},
    )


def choose_tasks(generator: torch.Generator, batch_size: int, probability: float) -> torch.Tensor:
    """``[batch_size]`` bool: each task chosen with ``probability`` (drawn from ``generator``,
    so a batch stays a pure function of its seed)."""
    return torch.rand(batch_size, generator=generator, dtype=torch.float64) < probability


def check_probability(probability: float) -> None:
    """Refuse a sampler's ``context_scaling`` outside [0, 1], in one line."""
    if not 0 <= probability <= 1:
        raise ValueError(f"context_scaling must lie in [0, 1], got {probability}")


def scale_some_like_predict(
    batch: Batch, generator: torch.Generator, probability: float, box: tuple[float, float]
) -> Batch:
    """A sampler's ``context_scaling`` option: each task of ``batch`` mapped by
    :func:`scale_like_predict` onto ``box`` with ``probability``. Called after the tasks are
    drawn, and drawing nothing at 0, so a batch at 0 is bit-identical to one without the option."""
    if probability <= 0:
        return batch
    chosen = choose_tasks(generator, batch.xc.shape[0], probability)
    return scale_like_predict(batch, box, chosen)
