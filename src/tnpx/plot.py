"""Plots of predictions: 1D tasks (context points, true function, model and oracle bands) and
image completion (context pixels, predictive mean and standard deviation, ground truth)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .apply.sample import sample
from .batch import Batch
from .data import TaskSampler, batch_at
from .extras import pyplot
from .models import NeuralProcess, build_model


@torch.no_grad()
def plot_1d_tasks(
    models: dict[str, NeuralProcess],
    sampler: TaskSampler,
    path: str | Path,
    n_tasks: int = 4,
    n_grid: int = 400,
    oracle: bool = True,
    n_samples: int = 0,
    n_sample_grid: int = 80,
    seed: int = 0,
    titles: list[str] | None = None,
) -> Path:
    """Save a PNG with ``n_tasks`` test tasks: context points, the target values (the true
    function where the targets are noiseless), each model's mean ± 2σ on a dense grid, and the
    GP oracle's mean ± 2σ where the data come from a GP.

    Padded tasks (a ``table`` source's) are drawn with their real points only (``mask_c`` /
    ``mask_t``), the models conditioned on the real context; a source that normalises (its
    ``normalisation``) is drawn in the data's units, axes named by its columns.

    Args:
        models: label -> model; each gets its own colour.
        sampler: a 1D sampler (dim_x = dim_y = 1); tasks come from its ``test`` split.
        path: output file (``.png``).
        n_samples: joint function samples per model and task (:func:`tnpx.sample`, an
            autoregressive rollout over ``n_sample_grid`` grid points), drawn as thin lines.
        seed: seeds the samples.
        titles: one title per task (default: its number and context size).
    """
    plt = pyplot("plotting")
    if sampler.dim_x != 1 or sampler.dim_y != 1:
        raise ValueError(
            f"plot_1d_tasks needs dim_x = dim_y = 1, got {sampler.dim_x}, {sampler.dim_y}"
        )
    batch = batch_at(sampler, 0, split="test", batch_size=n_tasks)
    real_c, real_t = _real(batch.mask_c, batch.xc), _real(batch.mask_t, batch.xt)
    lo = min(batch.xc[real_c].min().item(), batch.xt[real_t].min().item())
    hi = max(batch.xc[real_c].max().item(), batch.xt[real_t].max().item())
    pad = 0.05 * (hi - lo)
    grid = torch.linspace(lo - pad, hi + pad, n_grid).view(1, -1, 1).expand(n_tasks, -1, -1)
    dense = Batch(batch.xc, batch.yc, grid.contiguous(), mask_c=batch.mask_c, info=batch.info)
    curves = {label: m.eval().cpu().predict_batch(dense) for label, m in models.items()}
    if oracle and "kernel" in batch.info:
        curves["GP oracle"] = build_model("gp-oracle").predict_batch(dense)
    sample_grid = torch.linspace(lo - pad, hi + pad, n_sample_grid).view(1, -1, 1)
    sample_grid = sample_grid.expand(n_tasks, -1, -1).contiguous()
    paths = {
        label: sample(m, batch.xc, batch.yc, sample_grid, n_samples, mask_c=batch.mask_c, seed=seed)
        for label, m in models.items()
        if n_samples > 0
    }

    fig, axes = plt.subplots(1, n_tasks, figsize=(4.2 * n_tasks, 3.4), squeeze=False)
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:red"]
    units = DataUnits(getattr(sampler, "normalisation", None))
    x = units.x(grid[0, :, 0])
    for i, ax in enumerate(axes[0]):
        xt, yt = batch.xt[i, real_t[i], 0], batch.yt[i, real_t[i], 0]
        order = xt.argsort()
        ax.plot(units.x(xt[order]), units.y(yt[order]), ".", color="0.55", ms=3, label="targets")
        for (label, pred), colour in zip(curves.items(), colours):
            colour = "black" if label == "GP oracle" else colour
            style = "--" if label == "GP oracle" else "-"
            mu, sd = units.y(pred.mean[i, :, 0]), units.scale_y[0] * pred.stddev[i, :, 0].numpy()
            ax.plot(x, mu, style, color=colour, lw=1.3, label=f"{label} mean ± 2σ")
            if label != "GP oracle":
                ax.fill_between(x, mu - 2 * sd, mu + 2 * sd, color=colour, alpha=0.18, lw=0)
            if label in paths:
                xs = units.x(sample_grid[0, :, 0])
                ax.plot(xs, units.y(paths[label][:, i, :, 0].T), color=colour, lw=0.6, alpha=0.6)
            else:
                ax.plot(x, mu - 2 * sd, ":", color=colour, lw=0.9)
                ax.plot(x, mu + 2 * sd, ":", color=colour, lw=0.9)
        xc, yc = units.x(batch.xc[i, real_c[i], 0]), units.y(batch.yc[i, real_c[i], 0])
        ax.plot(xc, yc, "o", color="crimson", ms=4, label="context")
        title = titles[i] if titles else f"task {i}: {int(real_c[i].sum())} context points"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(units.x_name)
    axes[0, 0].set_ylabel(units.y_name)
    axes[0, 0].legend(fontsize=7, loc="best")
    return save_figure(fig, path)


def _real(mask: torch.Tensor | None, values: torch.Tensor) -> torch.Tensor:
    """``[batch, n]`` True at the real points of ``values [batch, n, dim]`` (all without a mask)."""
    return torch.ones(values.shape[:2], dtype=torch.bool) if mask is None else mask.bool()


class DataUnits:
    """A source's model units back to the data's (``value = value_model * scale + loc``, per
    column, float64), from its ``normalisation``; the identity and ``x``/``y`` without one.
    ``x(values)``: every value is input column ``column``'s (0: a 1D source's); ``column=None``:
    ``values [..., k]`` are the first ``k`` input columns. ``y`` likewise; ``scale_y``
    ``[dim_y]`` maps a standard deviation."""

    def __init__(self, normalisation: dict | None):
        def part(key: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
            if not normalisation:
                return np.zeros(1), np.ones(1), [key]
            p = normalisation[key]
            loc, scale = (np.asarray(p[k], dtype=np.float64) for k in ("loc", "scale"))
            return loc, scale, [str(c) for c in p["columns"]]

        self.loc_x, self.scale_x, self.x_names = part("x")
        self.loc_y, self.scale_y, self.y_names = part("y")
        self.x_name, self.y_name = self.x_names[0], self.y_names[0]

    def x(self, values: torch.Tensor, column: int | None = 0) -> np.ndarray:
        return _affine(values, self.loc_x, self.scale_x, column)

    def y(self, values: torch.Tensor, column: int | None = 0) -> np.ndarray:
        return _affine(values, self.loc_y, self.scale_y, column)


def _affine(values: torch.Tensor, loc: np.ndarray, scale: np.ndarray, column: int | None):
    if column is None:
        k = values.shape[-1]
        return values.double().numpy() * scale[:k] + loc[:k]
    return values.double().numpy() * scale[column] + loc[column]


MISSING_PIXEL = np.array([0.35, 0.5, 0.85])  # RGB of the pixels outside the context


def _image_tasks(sampler, n_tasks: int):
    """``n_tasks`` test tasks of an image sampler and the full pixel grid
    ``[n_tasks, H * W, 2]`` to predict them on."""
    from .data.images import pixel_grid

    if not hasattr(sampler, "images"):
        raise ValueError(f"image plots need an image sampler, got {type(sampler).__name__}")
    batch = batch_at(sampler, 0, split="test", batch_size=n_tasks)
    grid = pixel_grid(sampler.height, sampler.width, sampler.config.coords)
    return batch, grid.expand(n_tasks, -1, -1).contiguous()


def _context_and_truth(sampler, batch: Batch, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Task ``i``'s context pixels (unseen ones blue) and its image, ``[H, W, 3 or C]`` in
    [0, 1]."""
    from .data.images import grid_to_image

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
    from .data.images import grid_to_image

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
    from .data.images import grid_to_image

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


def plot_validation_curves(csv_paths: dict[str, Path], path: str | Path) -> Path:
    """Validation LL against training step for each run, read from its ``metrics.csv``."""
    import pandas as pd

    plt = pyplot("plotting")

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for label, csv_path in csv_paths.items():
        frame = pd.read_csv(csv_path).dropna(subset=["val_ll"])
        ax.plot(frame["step"], frame["val_ll"], "o-", label=label)
    ax.set_xlabel("training step")
    ax.set_ylabel("validation LL per target (higher is better)")
    ax.legend()
    return save_figure(fig, path)


def plot_prediction(
    result,
    path: str | Path,
    x_col,
    y_cols: list,
    context=None,
    level: float = 0.95,
    max_points: int = 20000,
) -> Path:
    """Save a PNG of :func:`tnpx.predict`'s ``result`` for one input column: per output, the
    predictive mean against ``x_col`` with its central ``level`` interval as a band, and the
    ``context`` DataFrame's points. More than ``max_points`` targets are thinned for drawing.
    """
    plt = pyplot("plotting")

    ordered = result.sort_values(x_col, kind="stable")
    ordered = ordered.iloc[:: max(1, len(ordered) // max_points)]
    x = ordered[x_col].to_numpy()
    fig, axes = plt.subplots(
        len(y_cols), 1, figsize=(7, 3.2 * len(y_cols)), squeeze=False, sharex=True
    )
    for ax, y in zip(axes[:, 0], y_cols):
        lower, upper = ordered[f"{y}_lower"].to_numpy(), ordered[f"{y}_upper"].to_numpy()
        band = f"{level:.0%} interval"
        ax.fill_between(x, lower, upper, color="tab:blue", alpha=0.2, lw=0, label=band)
        ax.plot(x, ordered[f"{y}_mean"].to_numpy(), color="tab:blue", lw=1.3, label="mean")
        if context is not None and len(context):
            ax.plot(context[x_col], context[y], "o", color="crimson", ms=4, label="context")
        ax.set_ylabel(str(y))
    axes[-1, 0].set_xlabel(str(x_col))
    axes[0, 0].legend(fontsize=8, loc="best")
    return save_figure(fig, path)


def save_figure(fig, path: str | Path) -> Path:
    """Lay out, write (creating the folder) and close ``fig``; returns the path written."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
