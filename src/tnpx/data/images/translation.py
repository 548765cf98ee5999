"""Translated images (TE-2): each image pasted on a larger zero canvas at its own offset.

One job: the canvases of the translation-equivariance image tasks. Each ``h x w`` image is
pasted on a zero canvas of ``canvas x canvas`` pixels at an offset
``(v, h) ~ U{-max_offset, ..., max_offset}^2`` (vertical, horizontal) from the centred
position. The offsets are drawn ONCE per image from a seed (:func:`translation_offsets`), so an
image keeps its position in every task and every call. The task sampler
(:class:`tnpx.data.images.ImageSampler`, ``translate=True``) builds its canvases with
:func:`translate_images` and re-exports these names.
"""

from __future__ import annotations

import numpy as np


def translation_offsets(n: int, max_offset: int, seed: int) -> np.ndarray:
    """Per-image offsets ``[n, 2]`` (int64; vertical, horizontal), each uniform on
    ``{-max_offset, ..., max_offset}``, a pure function of ``seed`` (image ``k`` always gets
    row ``k``)."""
    if max_offset < 0:
        raise ValueError(f"max_offset must be >= 0, got {max_offset}")
    rng = np.random.default_rng(seed)
    return rng.integers(-max_offset, max_offset, size=(n, 2), endpoint=True).astype(np.int64)


def translate_images(
    images: np.ndarray,
    canvas: int,
    max_offset: int,
    seed: int,
    offsets: np.ndarray | None = None,
) -> np.ndarray:
    """Place each image on a zero canvas at its own random offset (TE-2).

    Image ``k`` ``[h, w, C]`` is pasted with its top-left corner at
    ``((canvas - h) // 2 + v_k, (canvas - w) // 2 + h_k)`` where ``(v_k, h_k)`` is row ``k`` of
    ``translation_offsets(N, max_offset, seed)`` (or of ``offsets`` when given). Images must
    fit entirely for every offset.

    Args:
        images: ``[N, h, w, C]`` (or ``[N, h, w]``), any dtype.
    Returns:
        ``[N, canvas, canvas, C]`` of ``images``' dtype, zero outside the pasted images.
    """
    images = np.asarray(images)
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4:
        raise ValueError(f"images must be [N, h, w, C], got shape {images.shape}")
    n, h, w, c = images.shape
    top0, left0 = (canvas - h) // 2, (canvas - w) // 2
    if min(top0, left0) - max_offset < 0 or max(top0 + h, left0 + w) + max_offset > canvas:
        raise ValueError(
            f"a {h}x{w} image shifted by up to {max_offset} pixels does not fit a "
            f"{canvas}x{canvas} canvas (need canvas >= max(h, w) + 2 * max_offset)"
        )
    if offsets is None:
        offsets = translation_offsets(n, max_offset, seed)
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.shape != (n, 2) or np.abs(offsets).max(initial=0) > max_offset:
        raise ValueError(f"offsets must be [{n}, 2] within +-{max_offset}")
    out = np.zeros((n, canvas, canvas, c), dtype=images.dtype)
    rows = top0 + offsets[:, :1] + np.arange(h)  # [N, h]
    cols = left0 + offsets[:, 1:] + np.arange(w)  # [N, w]
    out[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]] = images
    return out


__all__ = ["translate_images", "translation_offsets"]
