"""Pixel coordinates and values of image tasks: the grid an image is read on, and back.

One job: converting between an ``H x W`` image and the inputs / outputs of its tasks --
:func:`pixel_grid` (pixel -> coordinates), :func:`pixel_index` (coordinates -> pixel) and
:func:`grid_to_image` (task values -> an image in [0, 1] for plotting). The task sampler that
uses them is :class:`tnpx.data.images.ImageSampler`, which re-exports these names.

Scaling conventions (the papers do not restate theirs; these follow the common NP
image-completion practice and are configurable):

* Coordinates (``coords``): ``"unit"`` (default) maps the pixel in row ``i`` and column ``j``
  of an ``H x W`` image to ``x = (-1 + 2 i / (H - 1), -1 + 2 j / (W - 1))``, i.e. each axis
  spans ``[-1, 1]`` with the corner pixels at +-1. ``"pixel"`` uses centred pixel units,
  ``x = (i - (H - 1) / 2, j - (W - 1) / 2)`` (spacing 1). The first coordinate is always the
  row (vertical axis, top to bottom), the second the column (horizontal, left to right).
  For translated images the grid is the canvas grid.
* Values (``value_range = [lo, hi]``): an 8-bit value ``p`` becomes ``lo + (hi - lo) p / 255``
  per channel; the default ``[-0.5, 0.5]`` is the usual NP choice (pixel values in [0, 1]
  minus 0.5); ``[0, 1]`` gives the raw unit scale. Float images given to
  :meth:`~tnpx.data.images.ImageSampler.from_array` must already lie in [0, 1] and are mapped
  the same way. The zero canvas of translated images therefore reads ``lo``.
"""

from __future__ import annotations

import numpy as np
import torch

from .files import _check_choice

COORDS = ("unit", "pixel")


def pixel_grid(
    h: int, w: int, coords: str = "unit", dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Coordinates ``[h * w, 2]`` of every pixel of an ``h x w`` image in row-major order.

    Row ``k = i * w + j`` holds ``(row coordinate, column coordinate)`` of pixel ``(i, j)`` in
    the ``coords`` convention of the module docstring (``"unit"``: each axis in ``[-1, 1]``;
    ``"pixel"``: centred pixel units). This is the order :func:`grid_to_image` expects.
    """
    _check_choice("coords", coords, COORDS)
    rows = _axis(h, coords, dtype)
    cols = _axis(w, coords, dtype)
    return torch.stack(torch.meshgrid(rows, cols, indexing="ij"), -1).reshape(h * w, 2)


def _axis(n: int, coords: str, dtype: torch.dtype) -> torch.Tensor:
    k = torch.arange(n, dtype=torch.float64)
    if coords == "pixel":
        out = k - (n - 1) / 2
    else:
        out = -1 + 2 * k / (n - 1) if n > 1 else torch.zeros(1, dtype=torch.float64)
    return out.to(dtype)


def pixel_index(x: torch.Tensor, h: int, w: int, coords: str = "unit") -> torch.Tensor:
    """The flat row-major pixel index ``i * w + j`` of coordinates ``x`` ``[..., 2]`` (the
    inverse of :func:`pixel_grid`; coordinates are rounded to the nearest pixel). Returns a
    long tensor ``[...]``."""
    _check_choice("coords", coords, COORDS)
    x = torch.as_tensor(x, dtype=torch.float64)
    if coords == "pixel":
        i = x[..., 0] + (h - 1) / 2
        j = x[..., 1] + (w - 1) / 2
    else:
        i = (x[..., 0] + 1) * (h - 1) / 2
        j = (x[..., 1] + 1) * (w - 1) / 2
    i = i.round().long().clamp(0, h - 1)
    j = j.round().long().clamp(0, w - 1)
    return i * w + j


def grid_to_image(
    y: torch.Tensor | np.ndarray,
    h: int,
    w: int,
    value_range: tuple[float, float] | list[float] = (-0.5, 0.5),
    index: torch.Tensor | np.ndarray | None = None,
    fill: float = float("nan"),
) -> np.ndarray:
    """Turn one task's pixel values back into an image ``[h, w, C]`` in [0, 1] for plotting.

    Args:
        y: values ``[h * w, C]`` (or ``[h * w]``, or ``[1, h * w, C]``) in the row-major order
            of :func:`pixel_grid`, e.g. a model's predictive mean at ``pixel_grid(h, w)``; or,
            with ``index``, values ``[n, C]`` at the flat pixel indices ``index`` ``[n]`` (e.g. a
            task's context, ``batch.info["ctx_index"][k]``).
        value_range: the ``[lo, hi]`` the sampler mapped ``[0, 1]`` to; values are mapped back
            and clipped to [0, 1].
        fill: the value of pixels not in ``index`` (NaN draws as transparent/blank).
    """
    y = y.detach().cpu().double().numpy() if isinstance(y, torch.Tensor) else np.asarray(y, float)
    if y.ndim == 3 and y.shape[0] == 1:
        y = y[0]
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2:
        raise ValueError(f"y must be [n, C], got shape {tuple(y.shape)}")
    lo, hi = (float(v) for v in value_range)
    v = np.clip((y - lo) / (hi - lo), 0.0, 1.0)
    if index is None:
        if v.shape[0] != h * w:
            raise ValueError(f"y has {v.shape[0]} rows but the grid has h * w = {h * w} pixels")
        return v.reshape(h, w, -1)
    idx = index.cpu().numpy() if isinstance(index, torch.Tensor) else np.asarray(index)
    idx = idx.reshape(-1).astype(np.int64)
    if idx.shape[0] != v.shape[0]:
        raise ValueError(f"index has {idx.shape[0]} entries but y has {v.shape[0]} rows")
    out = np.full((h * w, v.shape[1]), fill, dtype=float)
    out[idx] = v
    return out.reshape(h, w, -1)


__all__ = ["COORDS", "grid_to_image", "pixel_grid", "pixel_index"]
