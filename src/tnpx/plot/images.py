"""Plots of image completion: context pixels, predictive mean and standard deviation, the
image; and several models' means side by side."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..batch import Batch
from ..data import batch_at
from ..extras import pyplot
from ..models import NeuralProcess
from .figures import save_figure

MISSING_PIXEL = np.array([0.35, 0.5, 0.85])  # RGB of the pixels outside the context


def _image_tasks(sampler, n_tasks: int):
    """``n_tasks`` test tasks of an image sampler and the full pixel grid
    ``[n_tasks, H * W, 2]`` to predict them on."""
    from ..data.images import pixel_grid

    if not hasattr(sampler, "images"):
        raise ValueError(f"image plots need an image sampler, got {type(sampler).__name__}")
    batch = batch_at(sampler, 0, split="test", batch_size=n_tasks)
    grid = pixel_grid(sampler.height, sampler.width, sampler.config.coords)
    return batch, grid.expand(n_tasks, -1, -1).contiguous()


def _context_and_truth(sampler, batch: Batch, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Task ``i``'s context pixels (unseen ones blue) and its image, ``[H, W, 3 or C]`` in
    [0, 1]."""
    from ..data.images import grid_to_image

    h, w, value_range = sampler.height, sampler.width, sampler.config.value_range
    truth = sampler.images[batch.info["image_index"][i]]
    truth = truth.float() / 255 if truth.dtype == torch.uint8 else truth.float()
    context = grid_to_image(batch.yc[i], h, w, value_range, batch.info["ctx_index"][i])
    if context.shape[-1] == 1:
        context = np.repeat(context, 3, axis=-1)
    missing = np.isnan(context).any(-1, keepdims=True)
    return np.where(missing, MISSING_PIXEL, context), truth.numpy()


def _show_row(axes, panels, titles, first: bool) -> None:
    for ax, image, title in zip(axes, panels, titles):
        image = image[..., 0] if image.shape[-1] == 1 else image
        ax.imshow(image, cmap="gray" if image.ndim == 2 else None, vmin=0, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
        if first:
            ax.set_title(title, fontsize=9)


@torch.no_grad()
def plot_image_tasks(
    model: NeuralProcess,
    sampler,
    path: str | Path,
    n_tasks: int = 4,
) -> Path:
    """Save a PNG with one row per test image-completion task: the context pixels (the rest
    blue), the model's predictive mean and standard deviation at every pixel, and the image.

    Args:
        model: a model with ``dim_x = 2`` and ``dim_y`` = the images' channels.
        sampler: an :class:`~tnpx.data.images.ImageSampler`; tasks come from its ``test``
            split, the full pixel grid from its ``height``, ``width`` and ``config.coords``.
    """
    from ..data.images import grid_to_image

    plt = pyplot("plotting")

    batch, grid = _image_tasks(sampler, n_tasks)
    h, w, value_range = sampler.height, sampler.width, sampler.config.value_range
    model = model.eval().cpu()
    pred = model.predict_batch(Batch(batch.xc, batch.yc, grid, info=batch.info))
    mean, std = pred.mean, pred.stddev  # [n_tasks, h * w, C]
    lo, hi = (float(v) for v in value_range)
    fig, axes = plt.subplots(n_tasks, 4, figsize=(8, 2.1 * n_tasks), squeeze=False)
    for i in range(n_tasks):
        context, truth = _context_and_truth(sampler, batch, i)
        # std is drawn on its own scale (white = most uncertain pixel of the task)
        spread = std[i].mean(-1, keepdim=True) / (hi - lo)
        panels = (
            context,
            grid_to_image(mean[i], h, w, value_range),
            (spread / spread.max().clamp_min(1e-12)).view(h, w, 1).numpy(),
            truth,
        )
        _show_row(axes[i], panels, ("context", "mean", "std", "ground truth"), i == 0)
        axes[i, 0].set_ylabel(f"{batch.xc.shape[1]} context", fontsize=8)
    return save_figure(fig, path)


@torch.no_grad()
def plot_image_comparison(
    models: dict[str, NeuralProcess],
    sampler,
    path: str | Path,
    n_tasks: int = 3,
) -> Path:
    """Save a PNG comparing models on the same test image-completion tasks: one row per task,
    the context pixels (the rest blue) and the image, then each model's predictive mean.

    Args:
        models: label -> a model with ``dim_x = 2`` and ``dim_y`` = the images' channels.
        sampler: an :class:`~tnpx.data.images.ImageSampler` (see :func:`plot_image_tasks`).
    """
    from ..data.images import grid_to_image

    plt = pyplot("plotting")

    if not models:
        raise ValueError("plot_image_comparison needs at least one model")
    batch, grid = _image_tasks(sampler, n_tasks)
    h, w, value_range = sampler.height, sampler.width, sampler.config.value_range
    means = {}
    for label, model in models.items():
        model = model.eval().cpu()
        means[label] = model.predict_batch(Batch(batch.xc, batch.yc, grid, info=batch.info)).mean
    titles = ("context", "ground truth", *models)
    fig, axes = plt.subplots(
        n_tasks, len(titles), figsize=(1.9 * len(titles), 2.0 * n_tasks), squeeze=False
    )
    for i in range(n_tasks):
        context, truth = _context_and_truth(sampler, batch, i)
        mean_images = [grid_to_image(means[label][i], h, w, value_range) for label in models]
        _show_row(axes[i], (context, truth, *mean_images), titles, i == 0)
        axes[i, 0].set_ylabel(f"{batch.xc.shape[1]} context", fontsize=8)
    return save_figure(fig, path)
