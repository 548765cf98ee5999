"""Where images come from: :func:`load_images` dispatches a data set name to the user's
files (MNIST / Fashion-MNIST IDX, CIFAR-10 Python batches, CelebA JPEGs, arrays;
:mod:`tnpx.data.images.files`) or to an offline stand-in built from packages
(:mod:`tnpx.data.images.standins`), each with a fixed, seeded, disjoint train/test split. The
package :mod:`tnpx.data.images` names the loaders, the stand-ins and the task sampler."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .files import (
    DATA_SPLITS,
    _check_choice,
    load_array_file,
    load_celeba,
    load_cifar10,
    load_mnist,
)
from .standins import (
    FASHION_MNIST_DEBIAN,
    celeba_standin,
    cifar_standin,
    fashion_mnist_debian,
    mnist_standin,
)

STANDINS = ("mnist-standin", "fashion-mnist-debian", "cifar-standin", "celeba-standin")
FILE_DATASETS = ("mnist", "fashion-mnist", "cifar10", "celeba", "file")
DATASETS = STANDINS + FILE_DATASETS


# --- dispatcher ---------------------------------------------------------------------------


def load_images(
    dataset: str,
    path: str | Path | None = None,
    split_data: str = "train",
    *,
    test_fraction: float = 0.2,
    split_seed: int = 0,
    image_size: int = 32,
    max_images: int | None = None,
) -> np.ndarray:
    """The images ``[N, H, W, C]`` (uint8) of one split of ``dataset``.

    ``dataset``:
        ``mnist-standin`` / ``cifar-standin`` / ``celeba-standin``: offline stand-ins
        (:func:`mnist_standin`, :func:`cifar_standin`, :func:`celeba_standin`) split with
        ``test_fraction`` and ``split_seed``. ``fashion-mnist-debian``: the Debian package's
        files (``path`` overrides their folder). ``mnist`` / ``fashion-mnist``: IDX files in the
        folder ``path`` (:func:`load_mnist`). ``cifar10``: Python batches in ``path``
        (:func:`load_cifar10`). ``celeba``: aligned JPEGs in ``path`` (:func:`load_celeba`,
        resized to ``image_size``). ``file``: one ``.npy`` / ``.npz`` / IDX file
        (:func:`load_array_file`).
    ``max_images`` keeps only the first images of the split.
    """
    _check_choice("dataset", dataset, DATASETS)
    _check_choice("split_data", split_data, DATA_SPLITS)
    if dataset in FILE_DATASETS and path is None:
        raise ValueError(f"dataset {dataset!r} reads user files: set path")
    if dataset in ("mnist-standin", "cifar-standin", "celeba-standin") and path is not None:
        raise ValueError(f"dataset {dataset!r} is built from a package; path is not used")
    if dataset == "mnist-standin":
        images = mnist_standin(split_data, test_fraction, split_seed)
    elif dataset == "fashion-mnist-debian":
        images = fashion_mnist_debian(split_data, path or FASHION_MNIST_DEBIAN)
    elif dataset == "cifar-standin":
        images = cifar_standin(split_data, test_fraction=test_fraction, seed=split_seed)
    elif dataset == "celeba-standin":
        images = celeba_standin(split_data, test_fraction, split_seed, size=image_size)
    elif dataset in ("mnist", "fashion-mnist"):
        images = load_mnist(path, split_data)[0]
    elif dataset == "cifar10":
        images = load_cifar10(path, split_data)[0]
    elif dataset == "celeba":
        images = load_celeba(
            path,
            split_data,
            image_size=image_size,
            max_images=max_images,
            test_fraction=test_fraction,
            split_seed=split_seed,
        )[0]
    else:
        images = load_array_file(path, split_data, test_fraction, split_seed)
    return images if max_images is None else images[:max_images]


__all__ = ["DATASETS", "load_images"]
