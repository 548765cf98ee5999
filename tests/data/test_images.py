"""Image-completion samplers (tnpx.data.images): pixel coordinates, the KR-4 / TE-2 layouts,
scaling, translation and config errors. The image sources (file loaders, stand-ins) are tested
in ``test_images_sources.py``, the image plots in ``test_images_plot.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.image_arrays import random_images
from tnpx.data.base import batch_at, task_generator
from tnpx.data.images import (
    ImageConfig,
    ImageSampler,
    grid_to_image,
    load_images,
    pixel_grid,
    pixel_index,
    translate_images,
    translation_offsets,
)

# --- helpers ------------------------------------------------------------------------------


def expected_values(images: np.ndarray, batch, which: str, value_range) -> torch.Tensor:
    """Scaled source pixels of ``batch``'s context (``c``) or targets (``t``), read through
    the coordinates (coordinates -> pixel index), not through the sampler's info."""
    x = batch.xc if which == "c" else batch.xt
    _, h, w, c = images.shape
    flat = torch.from_numpy(images.reshape(len(images), h * w, c)).double()
    if images.dtype == np.uint8:
        flat = flat / 255
    idx = pixel_index(x, h, w)
    img = batch.info["image_index"]
    lo, hi = value_range
    return (lo + (hi - lo) * flat[img[:, None], idx]).float()


# --- coordinates ----------------------------------------------------------------------------


@pytest.mark.parametrize("coords", ["unit", "pixel"])
def test_pixel_grid_round_trips_through_pixel_index(coords):
    h, w = 5, 7
    grid = pixel_grid(h, w, coords)
    assert grid.shape == (h * w, 2)
    assert torch.equal(pixel_index(grid, h, w, coords), torch.arange(h * w))
    if coords == "unit":
        assert grid.min().item() == -1 and grid.max().item() == 1
        assert torch.allclose(grid[w + 2], torch.tensor([-1 + 2 / (h - 1), -1 + 2 * 2 / (w - 1)]))
    else:
        assert torch.allclose(grid[0], torch.tensor([-(h - 1) / 2, -(w - 1) / 2]))
        assert torch.allclose(grid[1] - grid[0], torch.tensor([0.0, 1.0]))


# --- KR mode --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "channels, value_range, coords",
    [(1, [-0.5, 0.5], "unit"), (3, [0.0, 1.0], "unit"), (3, [-0.5, 0.5], "pixel")],
)
def test_kr_shapes_ranges_and_context_in_targets(channels, value_range, coords):
    images = random_images(c=channels)
    cfg = ImageConfig(value_range=value_range, coords=coords)
    sampler = ImageSampler.from_array(images, cfg, batch_size=6, seed=1)
    assert (sampler.dim_x, sampler.dim_y) == (2, channels)
    bound = 1.0 if coords == "unit" else 13.5
    sizes = set()
    for step in range(12):
        b = batch_at(sampler, step)
        n_ctx = b.xc.shape[1]
        sizes.add(n_ctx)
        assert 3 <= n_ctx <= 100
        assert b.xc.shape == (6, n_ctx, 2) and b.yc.shape == (6, n_ctx, channels)
        assert b.xt.shape == (6, 200, 2) and b.yt.shape == (6, 200, channels)
        assert all(t.dtype == torch.float32 for t in (b.xc, b.yc, b.xt, b.yt))
        assert b.xt.abs().max() <= bound
        assert value_range[0] <= b.yt.min() and b.yt.max() <= value_range[1]
        # context = the first n_ctx targets, and the 200 targets are distinct pixels
        assert torch.equal(b.xc, b.xt[:, :n_ctx]) and torch.equal(b.yc, b.yt[:, :n_ctx])
        idx = pixel_index(b.xt, 28, 28, coords)
        assert all(len(set(row.tolist())) == 200 for row in idx)
    assert len(sizes) > 3  # N_c varies between batches


def test_context_size_bounds_are_inclusive():
    images = random_images(n=3, h=20, w=20)
    fixed = ImageSampler.from_array(images, ImageConfig(min_ctx=7, max_ctx=7), 2)
    assert {batch_at(fixed, s).xc.shape[1] for s in range(5)} == {7}
    two = ImageSampler.from_array(images, ImageConfig(min_ctx=99, max_ctx=100), 2)
    assert {batch_at(two, s).xc.shape[1] for s in range(30)} == {99, 100}
    half = ImageSampler.from_array(images, ImageConfig(mode="te", ctx_fraction=[0.5, 0.5]), 2)
    assert {batch_at(half, s).xc.shape[1] for s in range(5)} == {200}


@pytest.mark.parametrize("dtype", ["uint8", "float"])
def test_values_at_coordinates_are_the_source_pixels(dtype):
    images = random_images(n=5, h=12, w=9, c=3, seed=3)
    if dtype == "float":
        images = images.astype(np.float64) / 255
    vr = [-0.5, 0.5]
    sampler = ImageSampler.from_array(images, ImageConfig(n_points=50, max_ctx=40), 4)
    for step in range(3):
        b = batch_at(sampler, step)
        assert torch.allclose(b.yt, expected_values(images, b, "t", vr), atol=1e-6)
        assert torch.allclose(b.yc, expected_values(images, b, "c", vr), atol=1e-6)
        assert torch.equal(pixel_index(b.xt, 12, 9), b.info["tgt_index"])


def test_batches_are_reproducible_from_the_generator_only():
    sampler = ImageSampler.from_array(random_images(), ImageConfig(), batch_size=4, seed=7)
    torch.manual_seed(0)
    a = batch_at(sampler, 3)
    torch.manual_seed(123)  # global RNG state must not matter
    b = sampler.sample(task_generator(7, "train", 3))
    c = batch_at(sampler, 4)
    for name in ("xc", "yc", "xt", "yt"):
        assert torch.equal(getattr(a, name), getattr(b, name))
    for k in a.info:
        assert torch.equal(a.info[k], b.info[k])
    assert not torch.equal(a.xt, c.xt)
    assert batch_at(sampler, 0, batch_size=9).xt.shape[0] == 9


# --- TE mode --------------------------------------------------------------------------------


def test_te_context_and_targets_partition_the_image():
    images = random_images(n=6, h=20, w=20, c=1, seed=4)
    sampler = ImageSampler.from_array(images, ImageConfig(mode="te"), batch_size=3)
    n = 400
    assert sampler.ctx_range == (4, 200)
    sizes = []
    for step in range(15):
        b = batch_at(sampler, step)
        n_ctx, n_tgt = b.xc.shape[1], b.xt.shape[1]
        sizes.append(n_ctx)
        assert n / 100 <= n_ctx <= n / 2 and n_ctx + n_tgt == n
        ic, it = pixel_index(b.xc, 20, 20), pixel_index(b.xt, 20, 20)
        for k in range(3):
            both = torch.cat([ic[k], it[k]])
            assert torch.equal(both.sort().values, torch.arange(n))  # disjoint, all pixels
        assert torch.allclose(b.yt, expected_values(images, b, "t", [-0.5, 0.5]), atol=1e-6)
    assert max(sizes) - min(sizes) > 30
    capped = ImageSampler.from_array(images, ImageConfig(mode="te", max_tgt=50), 2)
    assert batch_at(capped, 0).xt.shape[1] == 50


def test_grid_to_image_rebuilds_the_image_from_a_te_task():
    images = random_images(n=2, h=6, w=5, c=3, seed=5)
    cfg = ImageConfig(mode="te", value_range=[0.0, 1.0])
    sampler = ImageSampler.from_array(images, cfg, batch_size=1)
    b = batch_at(sampler, 0)
    x = torch.cat([b.xc[0], b.xt[0]])
    y = torch.cat([b.yc[0], b.yt[0]])
    order = pixel_index(x, 6, 5).argsort()
    img = grid_to_image(y[order], 6, 5, value_range=[0.0, 1.0])
    assert img.shape == (6, 5, 3)
    np.testing.assert_allclose(img, images[b.info["image_index"][0]] / 255, atol=1e-6)
    # the context alone, the other pixels blank
    ctx = grid_to_image(b.yc[0], 6, 5, [0.0, 1.0], index=b.info["ctx_index"][0])
    assert np.isnan(ctx).all(-1).sum() == 30 - b.xc.shape[1]


# --- translation ----------------------------------------------------------------------------


def test_translate_images_places_each_image_inside_a_zero_canvas():
    images = random_images(n=40, low=1)  # every digit pixel non-zero
    out = translate_images(images, 56, 14, seed=3)
    offsets = translation_offsets(40, 14, seed=3)
    assert out.shape == (40, 56, 56, 1) and out.dtype == np.uint8
    assert np.abs(offsets).max() <= 14 and len(np.unique(offsets, axis=0)) > 20
    for k, (v, h) in enumerate(offsets):
        top, left = 14 + v, 14 + h
        assert np.array_equal(out[k, top : top + 28, left : left + 28], images[k])
        assert (out[k] != 0).sum() == 28 * 28  # zero everywhere else
    assert np.array_equal(out, translate_images(images, 56, 14, seed=3))
    assert not np.array_equal(out, translate_images(images, 56, 14, seed=4))
    with pytest.raises(ValueError, match="does not fit"):
        translate_images(images, 50, 14, seed=0)


def test_translation_is_fixed_per_image_across_samplers_and_tasks():
    images = random_images(n=8, low=1)
    cfg = ImageConfig(mode="te", translate=True, translation_seed=11)
    s1 = ImageSampler.from_array(images, cfg, batch_size=16, seed=0)
    s2 = ImageSampler.from_array(images, cfg, batch_size=16, seed=5)
    assert (s1.height, s1.width) == (56, 56)  # T-MNIST defaults: 56x56 canvas, offsets <= 14
    assert s1.ctx_range == (32, 1568)  # N_c ~ U{ceil(3136 / 100), ..., 3136 / 2}
    assert torch.equal(s1.offsets, s2.offsets) and s1.offsets.abs().max() <= 14
    assert torch.equal(s1.images, s2.images)
    seen = {}
    for step in range(4):
        b = batch_at(s1, step)
        n_ctx = b.xc.shape[1]
        assert 32 <= n_ctx <= 1568 and n_ctx + b.xt.shape[1] == 56 * 56
        for k, img in enumerate(b.info["image_index"].tolist()):
            off = tuple(b.info["offset"][k].tolist())
            assert seen.setdefault(img, off) == off  # same offset in every task
            # the task's values show the digit at that offset and zero (lo) elsewhere
            x = torch.cat([b.xc[k], b.xt[k]])
            y = torch.cat([b.yc[k], b.yt[k]])
            canvas = grid_to_image(y[pixel_index(x, 56, 56).argsort()], 56, 56)
            top, left = 14 + off[0], 14 + off[1]
            np.testing.assert_allclose(
                canvas[top : top + 28, left : left + 28], images[img] / 255, atol=1e-6
            )
            canvas[top : top + 28, left : left + 28] = 0
            assert np.all(canvas == 0)
    cifar = ImageSampler.from_array(random_images(n=3, h=32, w=32, c=3), cfg, 2)
    assert (cifar.height, cifar.dim_y) == (64, 3) and cifar.offsets.abs().max() <= 16


# --- config errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, match",
    [
        ({"mode": "grid"}, "unknown mode"),
        ({"coords": "polar"}, "unknown coords"),
        ({"split_data": "val"}, "unknown split_data"),
        ({"dataset": "imagenet"}, "unknown dataset"),
        ({"min_ctx": 50, "max_ctx": 10}, "min_ctx <= max_ctx"),
        ({"max_ctx": 300}, "max_ctx <= n_points"),
        ({"value_range": [1.0, 0.0]}, "value_range"),
        ({"mode": "te", "ctx_fraction": [0.6, 0.5]}, "ctx_fraction"),
        ({"test_fraction": 1.0}, "test_fraction"),
        ({"canvas": 56}, "translate=True"),
        ({"n_points": 1000, "max_ctx": 10}, "exceeds the 784 pixels"),
        ({"translate": True, "canvas": 40}, "does not fit"),
    ],
)
def test_config_errors(options, match):
    with pytest.raises(ValueError, match=match):
        ImageSampler.from_array(random_images(n=2), ImageConfig(**options))


def test_data_source_errors():
    with pytest.raises(ValueError, match="set path"):
        ImageSampler(ImageConfig(dataset="cifar10"))
    with pytest.raises(ValueError, match="path is not used"):
        load_images("cifar-standin", path="x")
    with pytest.raises(ValueError, match="uint8 or float"):
        ImageSampler.from_array(np.zeros((2, 4, 4), np.int16), ImageConfig(n_points=10, max_ctx=5))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ImageSampler.from_array(np.full((2, 4, 4), 2.0), ImageConfig(n_points=10, max_ctx=5))
