"""Image loaders for files a user has: MNIST / Fashion-MNIST IDX files, CIFAR-10 Python
batches, a folder of aligned CelebA JPEGs, and ``.npy`` / ``.npz`` / IDX arrays, each read
into ``[N, H, W, C]`` uint8 with a fixed, seeded, disjoint train/test split where the files
have none.

The split and the checks (:func:`split_indices`, :func:`_check_choice`,
:func:`_as_image_array`) live here, below the stand-ins (:mod:`tnpx.data.images.standins`) and
the dispatcher (:mod:`tnpx.data.images.sources`), so that both can import them without a cycle.
"""

from __future__ import annotations

import gzip
import math
import pickle
import zlib
from pathlib import Path

import numpy as np
import torch

from ...extras import require

DATA_SPLITS = ("train", "test")
IDX_IMAGES_MAGIC = 0x00000803  # unsigned bytes, 3 dimensions
IDX_LABELS_MAGIC = 0x00000801  # unsigned bytes, 1 dimension
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_RESAMPLE = "BILINEAR"


# --- shared by the stand-ins and the dispatcher ------------------------------------------


def _check_choice(name: str, value, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose from {', '.join(choices)}")


def _as_image_array(images: np.ndarray | torch.Tensor) -> np.ndarray:
    """Validate ``images`` and return ``[N, H, W, C]`` uint8, or float32 in [0, 1]."""
    if isinstance(images, torch.Tensor):
        images = images.detach().cpu().numpy()
    images = np.asarray(images)
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4 or images.shape[0] == 0 or min(images.shape[1:]) < 1:
        raise ValueError(f"images must be a non-empty [N, H, W, C] array, got {images.shape}")
    if images.dtype == np.uint8:
        return images
    if np.issubdtype(images.dtype, np.floating):
        if not np.isfinite(images).all() or images.min() < 0 or images.max() > 1:
            raise ValueError("float images must have finite values in [0, 1]")
        return images.astype(np.float32)
    raise ValueError(f"images must be uint8 or float in [0, 1], got dtype {images.dtype}")


def split_indices(n: int, split_data: str, test_fraction: float, seed: int) -> np.ndarray:
    """Indices of ``split_data`` in a seeded split of ``n`` items: a permutation from
    ``seed``, whose first ``round(test_fraction * n)`` entries are the test part and the rest
    the train part (both in permuted order, so the parts are disjoint and shuffled)."""
    _check_choice("split_data", split_data, DATA_SPLITS)
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(test_fraction * n))
    part = perm[:n_test] if split_data == "test" else perm[n_test:]
    if len(part) == 0:
        raise ValueError(
            f"the {split_data} split of {n} items with test_fraction={test_fraction} is empty"
        )
    return part


# --- user files ---------------------------------------------------------------------------


def read_idx(path: str | Path, expected_magic: int | None = None) -> np.ndarray:
    """Read an IDX file (the MNIST format; gzip-compressed or not) into a NumPy array.

    The header is the magic number (two zero bytes, a type code, the number of dimensions),
    then one big-endian uint32 per dimension, then the data. Raises FileNotFoundError for a
    missing file and ValueError for a bad magic number (or one other than
    ``expected_magic``), a corrupt gzip stream, or a size that disagrees with the header.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"IDX file not found: {p}")
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise ValueError(f"{p}: corrupt or truncated gzip data ({err})") from err
    if len(raw) < 4:
        raise ValueError(f"{p}: truncated IDX file ({len(raw)} bytes, no header)")
    magic = int.from_bytes(raw[:4], "big")
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES or raw[3] == 0:
        raise ValueError(f"{p} is not an IDX file: bad magic number 0x{magic:08x}")
    if expected_magic is not None and magic != expected_magic:
        raise ValueError(
            f"{p}: wrong IDX magic number 0x{magic:08x}, expected 0x{expected_magic:08x}"
        )
    ndim = raw[3]
    start = 4 + 4 * ndim
    if len(raw) < start:
        raise ValueError(f"{p}: truncated IDX header")
    dims = [int(d) for d in np.frombuffer(raw, ">u4", ndim, 4)]
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    count = math.prod(dims)
    expected = start + count * dtype.itemsize
    if len(raw) != expected:
        kind = "truncated" if len(raw) < expected else "over-long"
        raise ValueError(
            f"{p}: {kind} IDX file: header {dims} needs {expected} bytes, found {len(raw)}"
        )
    data = np.frombuffer(raw, dtype, count, start).reshape(dims)
    return data.astype(dtype.newbyteorder("="))


def _data_folder(path: str | Path, what: str, inner: str) -> Path:
    """The ``what`` data folder ``path``, or its subfolder ``inner`` when it has one (the user
    may name the data folder or its parent)."""
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"{what} folder not found: {p}")
    return p / inner if (p / inner).is_dir() else p


def _first_file(folder: Path, names: list[str]) -> Path | None:
    for name in names:
        for candidate in (folder / name, folder / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    return None


def load_mnist(path: str | Path, split_data: str = "train") -> tuple[np.ndarray, np.ndarray | None]:
    """MNIST-format IDX files (MNIST, Fashion-MNIST, ...): ``(images [N, 28, 28, 1] uint8,
    labels [N] int64 or None)``.

    ``path`` is a folder holding ``train-images-idx3-ubyte`` / ``t10k-images-idx3-ubyte``
    (``.gz`` or not; the ``*-images.idx3-ubyte`` spelling too) and optionally the matching
    ``*-labels-idx1-ubyte``; or the images file itself (its labels are looked up beside it).
    """
    _check_choice("split_data", split_data, DATA_SPLITS)
    p = Path(path)
    prefix = "train" if split_data == "train" else "t10k"
    if p.is_dir():
        images_file = _first_file(p, [f"{prefix}-images-idx3-ubyte", f"{prefix}-images.idx3-ubyte"])
        if images_file is None:
            raise FileNotFoundError(
                f"no {prefix}-images-idx3-ubyte[.gz] in {p} (the MNIST {split_data} images)"
            )
        labels_file = _first_file(p, [f"{prefix}-labels-idx1-ubyte", f"{prefix}-labels.idx1-ubyte"])
    elif p.is_file():
        images_file, labels_file = p, None
        name = p.name.removesuffix(".gz")
        for a, b in (("images-idx3", "labels-idx1"), ("images.idx3", "labels.idx1")):
            if a in name:
                labels_file = _first_file(p.parent, [name.replace(a, b)])
    else:
        raise FileNotFoundError(f"MNIST path not found: {p}")
    images = read_idx(images_file, IDX_IMAGES_MAGIC)[..., None]
    labels = None
    if labels_file is not None:
        labels = read_idx(labels_file, IDX_LABELS_MAGIC).astype(np.int64)
        if len(labels) != len(images):
            raise ValueError(
                f"{labels_file} has {len(labels)} labels for {len(images)} images in {images_file}"
            )
    return images, labels


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One pickled CIFAR-10 batch: ``(images [n, 32, 32, 3] uint8, labels [n] int64)``.

    Pickle runs code from the file: read only CIFAR batches from a trusted source."""
    if not path.is_file():
        raise FileNotFoundError(f"CIFAR-10 batch not found: {path}")
    try:
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
    except Exception as err:  # truncated / corrupt pickles raise many different types
        raise ValueError(f"{path} is not a readable CIFAR-10 batch ({err!r})") from err
    if not isinstance(batch, dict):
        raise ValueError(f"{path} is not a CIFAR-10 batch (a pickled dict)")
    data = batch.get(b"data", batch.get("data"))
    labels = batch.get(b"labels", batch.get("labels"))
    if data is None or labels is None:
        raise ValueError(f"{path} is not a CIFAR-10 batch: no b'data' / b'labels' entries")
    data, labels = np.asarray(data), np.asarray(labels, dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise ValueError(
            f"{path}: CIFAR-10 data must be uint8 [n, 3072], got {data.dtype} {data.shape}"
        )
    if labels.shape != (len(data),):
        raise ValueError(f"{path}: {labels.shape[0]} labels for {len(data)} images")
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


def load_cifar10(path: str | Path, split_data: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 "python version" batches: ``(images [N, 32, 32, 3] uint8, labels [N] int64)``.

    ``path`` is the ``cifar-10-batches-py`` folder (or its parent). The train split is
    ``data_batch_1`` ... ``data_batch_5`` (50,000 images), the test split ``test_batch``
    (10,000). Each batch is a pickled dict with ``b"data"`` ``[n, 3072]`` uint8 (the 1024
    red, then green, then blue values of each image in row-major order) and ``b"labels"``.
    """
    _check_choice("split_data", split_data, DATA_SPLITS)
    p = _data_folder(path, "CIFAR-10", "cifar-10-batches-py")
    names = [f"data_batch_{i}" for i in range(1, 6)] if split_data == "train" else ["test_batch"]
    missing = [n for n in names if not (p / n).is_file()]
    if missing:
        raise FileNotFoundError(f"CIFAR-10 batch(es) {', '.join(missing)} not found in {p}")
    parts = [_read_cifar_batch(p / n) for n in names]
    return np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])


def _celeba_partition(folder: Path) -> dict[str, int] | None:
    """The official partition (file name -> 0 train / 1 val / 2 test) when
    ``list_eval_partition.txt`` is found beside or above the image folder."""
    for candidate in (
        folder / "list_eval_partition.txt",
        folder.parent / "list_eval_partition.txt",
        folder.parent / "Eval" / "list_eval_partition.txt",
    ):
        if candidate.is_file():
            out = {}
            for line in candidate.read_text().split("\n"):
                parts = line.split()
                if len(parts) == 2 and parts[1] in ("0", "1", "2"):
                    out[parts[0]] = int(parts[1])
            return out
    return None


def load_celeba(
    path: str | Path,
    split_data: str = "train",
    image_size: int = 32,
    crop: int = 178,
    max_images: int | None = None,
    test_fraction: float = 0.2,
    split_seed: int = 0,
) -> tuple[np.ndarray, None]:
    """Aligned CelebA JPEGs (``img_align_celeba``): ``(images [N, s, s, 3] uint8, None)``.

    Each image is centre-cropped to ``crop x crop`` (178: the full width of the 178x218 aligned
    images; smaller images are cropped to their shorter side) and resized to
    ``image_size x image_size`` with PIL's antialiased bilinear filter.

    ``path`` is the folder of images (``*.jpg``, ``*.jpeg``, ``*.png``, sorted by name) or its
    parent holding ``img_align_celeba/``. When ``list_eval_partition.txt`` lies beside or
    above it, the official split is used (train = partition 0, test = partition 2);
    otherwise a seeded split (:func:`split_indices`). ``max_images`` loads only the first
    images of the split (the full set takes minutes and ~0.6 GB at 32x32).
    """
    require("PIL", "images", "reading CelebA images")
    from PIL import Image, UnidentifiedImageError

    _check_choice("split_data", split_data, DATA_SPLITS)
    p = _data_folder(path, "CelebA", "img_align_celeba")
    files = sorted(f for f in p.iterdir() if f.suffix.lower() in (".jpg", ".jpeg", ".png"))
    if not files:
        raise FileNotFoundError(f"no .jpg / .jpeg / .png images in {p}")
    partition = _celeba_partition(p)
    if partition is not None:
        want = 0 if split_data == "train" else 2
        files = [f for f in files if partition.get(f.name) == want]
        if not files:
            raise ValueError(f"no image of {p} is in the {split_data} part of its partition file")
    else:
        files = [files[i] for i in split_indices(len(files), split_data, test_fraction, split_seed)]
    if max_images is not None:
        files = files[:max_images]
    resample = getattr(Image.Resampling, _RESAMPLE)
    out = np.empty((len(files), image_size, image_size, 3), dtype=np.uint8)
    for k, f in enumerate(files):
        try:
            with Image.open(f) as im:
                im = im.convert("RGB")
                w, h = im.size
                s = min(crop, w, h)
                left, top = (w - s) // 2, (h - s) // 2
                im = im.crop((left, top, left + s, top + s))
                out[k] = np.asarray(im.resize((image_size, image_size), resample))
        except (UnidentifiedImageError, OSError) as err:
            raise ValueError(f"cannot read image {f}: {err}") from err
    return out, None


def load_array_file(
    path: str | Path, split_data: str = "train", test_fraction: float = 0.2, split_seed: int = 0
) -> np.ndarray:
    """Images ``[N, H, W, C]`` uint8 from one ``.npy``, ``.npz`` or IDX file.

    A ``.npz`` with ``x_train`` / ``x_test`` arrays (the Keras layout) gives that split
    directly; otherwise the array (``images`` entry, or the only one) is split with
    :func:`split_indices` unless ``test_fraction`` is 0 (whole file, e.g. for separate train
    and test files). Arrays may be ``[N, H, W]`` or ``[N, H, W, C]``, uint8 or float in [0, 1]
    (rounded to uint8).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"image file not found: {p}")
    whole = False
    if p.suffix == ".npy":
        images = np.load(p, allow_pickle=False)
    elif p.suffix == ".npz":
        with np.load(p, allow_pickle=False) as z:
            if f"x_{split_data}" in z.files:
                images, whole = z[f"x_{split_data}"], True
            elif "images" in z.files:
                images = z["images"]
            elif len(z.files) == 1:
                images = z[z.files[0]]
            else:
                raise ValueError(
                    f"{p}: cannot tell which array holds the images (entries {z.files}); name "
                    "it 'images' or use x_train / x_test"
                )
    else:
        images = read_idx(p)
    images = _as_image_array(images)
    if images.dtype != np.uint8:
        images = np.round(images * 255).astype(np.uint8)
    if whole or test_fraction == 0:
        return images
    return images[split_indices(len(images), split_data, test_fraction, split_seed)]


__all__ = [
    "DATA_SPLITS",
    "load_array_file",
    "load_celeba",
    "load_cifar10",
    "load_mnist",
    "read_idx",
    "split_indices",
]
