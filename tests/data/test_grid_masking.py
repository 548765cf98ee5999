"""The ``grid`` source's missing cells: masked, never context or target, windows drawn while
``min_valid`` of their cells are valid, one warning counting what is dropped; and a complete
field (or ``min_valid: 1.0``) draws the very batches it drew before masking existed."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest
import torch

from tests.helpers.small_grids import CONFIG, grid, indices, make_dataset
from tnpx.data import batch_at


def _digest(batch) -> str:
    h = hashlib.sha256()
    for name in ("xc", "yc", "xt", "yt"):
        h.update(getattr(batch, name).numpy().tobytes())
    return h.hexdigest()[:16]


# Batches drawn by the sampler before missing cells were masked (commit 1d58530), pinned:
# (step, split, n_ctx, digest of xc, yc, xt, yt).
PINNED = {
    "full": [
        (0, "train", 17, "d2b0cad3cf1bfacd"),
        (5, "train", 19, "44a3168aac04abfe"),
        (1, "val", 10, "68e7d950a2aa084c"),
        (2, "test", 13, "70abbe7a3aaa1079"),
    ],
    "holes": [
        (0, "train", 17, "cd6e1f7fe50a5ac7"),
        (5, "train", 19, "d9387fbe94e7a79c"),
        (1, "val", 10, "f0bda3a1d755e370"),
        (2, "test", 13, "ca0d50af300e53f2"),
    ],
}


def _holes():
    data = make_dataset()
    data["t2m"][3:9, 0:5, 0:6] = np.nan
    data["z"][10, 12] = np.nan
    return data


@pytest.mark.parametrize(("name", "options"), [("full", {}), ("holes", {"min_valid": 1.0})])
def test_batches_are_those_drawn_before_masking(tmp_path, name, options):
    """A complete field draws the same batches bit for bit; ``min_valid: 1.0`` gives the old
    rule (a window with a missing cell is never drawn) and its batches. (Pinned with the
    uniform context sizes of that time: ``ctx_size: uniform``.)"""
    (make_dataset() if name == "full" else _holes()).to_netcdf(tmp_path / "t2m.nc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sampler = grid(tmp_path / "t2m.nc", static=["z"], ctx_size="uniform", **options)
    for step, split, n_ctx, digest in PINNED[name]:
        batch = batch_at(sampler, step, split=split)
        assert batch.xc.shape[1] == n_ctx and batch.mask_c is None and batch.mask_t is None
        assert _digest(batch) == digest, (step, split)


# --- missing cells masked -----------------------------------------------------------------------
def _land(n_time: int = 40):
    """:func:`make_dataset` with "land": the west columns missing throughout, a coastline that
    cuts windows, and one missing elevation (a static input missing makes its cell missing)."""
    data = make_dataset(n_time=n_time)
    land = np.zeros(data.t2m.shape[1:], bool)
    land[:, :4] = True  # 4 of 14 lon columns
    land[:5, 4:6] = True  # a headland
    data["t2m"] = data.t2m.where(~land[None])
    data["u"] = data.u.where(~land[None])
    data["z"][10, 12] = np.nan
    return data, land


def _missing(data) -> np.ndarray:
    """``[time, lat, lon]``: cells missing t2m or z."""
    return np.isnan(data.t2m.values) | np.isnan(data.z.values)[None]


def _window_counts(missing: np.ndarray, window, least: int) -> tuple[int, int]:
    """(windows with at least ``least`` valid cells, all windows) by brute force."""
    room = [n - w + 1 for n, w in zip(missing.shape, window)]
    kept = 0
    for origin in np.ndindex(*room):
        box = tuple(slice(o, o + w) for o, w in zip(origin, window))
        kept += (~missing[box]).sum() >= least
    return kept, int(np.prod(room))


@pytest.fixture(scope="module")
def land_nc(tmp_path_factory):
    data, _ = _land()
    path = tmp_path_factory.mktemp("land") / "land.nc"
    data.to_netcdf(path)
    return path


def _quiet(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return grid(path, static=["z"], **options)


def test_no_drawn_context_or_target_point_is_a_missing_cell(land_nc):
    data, _ = _land()
    missing = _missing(data)
    sampler = _quiet(land_nc, batch_size=16)
    masked = 0
    for step, split in [(s, "train") for s in range(8)] + [(0, "val"), (1, "test")]:
        batch = batch_at(sampler, step, split=split)
        if batch.mask_c is None:
            continue
        masked += 1
        for name in ("xc", "yc", "xt", "yt"):
            assert torch.isfinite(getattr(batch, name)).all(), name
        assert (batch.mask_t.sum(1) >= 1).all()  # every task keeps a valid target
        xc, yc = sampler.to_physical(batch.xc, batch.yc)
        xt, yt = sampler.to_physical(batch.xt, batch.yt)
        for b in range(16):
            real_c, real_t = batch.mask_c[b], batch.mask_t[b]
            x = torch.cat([xc[b][real_c], xt[b][real_t]]).numpy()
            y = torch.cat([yc[b][real_c], yt[b][real_t]]).numpy()
            at = indices(data, x)
            cells = (at["time"], at["lat"], at["lon"])
            assert not missing[cells].any()  # real points are valid cells only
            np.testing.assert_allclose(y[:, 0], data.t2m.values[cells], rtol=1e-5)
            first = indices(data, batch.info["origin"][b : b + 1].double().numpy())
            origin = [int(first[d][0]) for d in ("time", "lat", "lon")]
            box = tuple(slice(o, o + w) for o, w in zip(origin, (3, 4, 5)))
            assert len(set(zip(*cells))) == (~missing[box]).sum()  # every valid cell, once
            # the padded points are the window's missing cells, at their places, outputs 0
            real = torch.cat([real_c, real_t]).numpy()
            every = indices(data, torch.cat([xc[b], xt[b]]).numpy())
            places = (every["time"], every["lat"], every["lon"])
            assert len(set(zip(*places))) == 60 and (missing[places] == ~real).all()
            assert (torch.cat([batch.yc[b], batch.yt[b]])[~real] == 0).all()
    assert masked >= 5  # the coast is drawn


@pytest.mark.parametrize("min_valid", [0.3, 0.5, 0.9, 1.0])
def test_min_valid_sets_which_windows_are_drawn(land_nc, min_valid):
    data, _ = _land()
    missing = _missing(data)
    sampler = _quiet(land_nc, min_valid=min_valid)
    least = max(2, int(np.ceil(60 * min_valid - 1e-9)))
    spans = {"train": slice(0, 32), "val": slice(32, 36), "test": slice(36, 40)}
    for split, span in spans.items():
        kept, total = _window_counts(missing[span], (3, 4, 5), least)
        windows = sampler.windows(split)
        assert (len(windows), len(windows) + windows.excluded) == (kept, total), split


def test_one_warning_counts_the_windows_and_cells_dropped(land_nc):
    data, _ = _land()
    missing = _missing(data)
    with pytest.warns(UserWarning) as caught:
        grid(land_nc, static=["z"])
    counts = [str(w.message) for w in caught if "cells miss" in str(w.message)]
    assert len(counts) == 1
    spans = (slice(0, 32), slice(32, 36), slice(36, 40))
    kept = [_window_counts(missing[s], (3, 4, 5), 30) for s in spans]
    dropped, total = sum(t - k for k, t in kept), sum(t for _, t in kept)
    assert f"{dropped} of {total} time=3 × lat=4 × lon=5 windows have under 50%" in counts[0]
    assert f"{int(missing.sum())} of {missing.size} cells miss a value" in counts[0]
    assert "never context, never a target" in counts[0] and "min_valid" in counts[0]


def test_lazy_reading_draws_the_same_masked_batches(land_nc):
    memory, lazy = _quiet(land_nc, load="memory"), _quiet(land_nc, load="lazy")
    for step in range(4):
        a, b = batch_at(memory, step), batch_at(lazy, step)
        for name in ("xc", "yc", "xt", "yt", "mask_c", "mask_t"):
            one, other = getattr(a, name), getattr(b, name)
            assert (one is None and other is None) or torch.equal(one, other), name


def test_the_loss_reads_only_real_points(land_nc):
    """A model's training loss does not move when the padded points' values do."""
    from tests.helpers.small_models import small_model

    sampler = _quiet(land_nc, batch_size=8)
    batch = next(batch_at(sampler, s) for s in range(20) if batch_at(sampler, s).mask_c is not None)
    assert not batch.mask_c.all() or not batch.mask_t.all()
    model = small_model("tnp", dim_x=4, dim_y=1)
    loss = model.training_loss(batch)
    moved = type(batch)(
        batch.xc.masked_fill(~batch.mask_c[..., None], 7.0),
        batch.yc.masked_fill(~batch.mask_c[..., None], -5.0),
        batch.xt.masked_fill(~batch.mask_t[..., None], 3.0),
        batch.yt.masked_fill(~batch.mask_t[..., None], 9.0),
        mask_c=batch.mask_c,
        mask_t=batch.mask_t,
    )
    assert torch.isfinite(loss)
    torch.testing.assert_close(model.training_loss(moved), loss)


def test_a_field_with_land_trains_and_evaluates_on_its_ocean_windows(land_nc, tmp_path):
    from tnpx.config import load_config
    from tnpx.evaluation.protocol import build_test_sampler
    from tnpx.evaluation.user_tasks import evaluate_tasks
    from tnpx.training.loop import fit

    config = tmp_path / "land.yaml"
    config.write_text(CONFIG.format(path=land_nc, out=tmp_path / "run"))
    cfg = load_config(config)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit(cfg)
    said = [str(w.message) for w in caught]
    assert sum("must extrapolate in time" in m for m in said) == 1  # training says so once
    assert sum("cells miss a value" in m for m in said) == 1
    assert result.steps_done == 4 and np.isfinite(result.final_loss)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = build_test_sampler(cfg)
    rows = evaluate_tasks(result.model, test, n_batches=2, baselines=("context-moments",))
    assert all(np.isfinite([r.ll, *r.rmse, r.coverage95]).all() for r in rows)


def test_a_window_with_few_valid_cells_keeps_a_valid_target():
    """``masked_order``: the context is capped at ``V - 1`` valid cells, the missing cells pad
    it and end the targets, and a window without a missing cell gets ``rand.argsort()``."""
    from tnpx.data.grid.masking import masked_order

    g = torch.Generator().manual_seed(0)
    rand = torch.rand(3, 10, generator=g)
    missing = torch.zeros(3, 10, dtype=torch.bool)
    missing[1, [0, 2, 4, 6, 8, 9]] = True  # 4 valid cells
    missing[2, 3:] = True  # 3 valid cells
    order, mask_c, mask_t = masked_order(rand, missing, n_ctx=5)
    assert torch.equal(order[0], rand[0].argsort())
    assert (order.sort(1).values == torch.arange(10)).all()  # each a permutation
    assert mask_c.sum(1).tolist() == [5, 3, 2] and mask_t.sum(1).tolist() == [5, 1, 1]
    for b in range(3):
        valid = ~missing[b][order[b]]
        assert torch.equal(valid, torch.cat([mask_c[b], mask_t[b]]))  # masks mark valid cells
        assert set(order[b][torch.cat([mask_c[b], mask_t[b]])].tolist()) == set(
            torch.nonzero(~missing[b]).ravel().tolist()
        )


def test_a_low_min_valid_caps_the_context_per_task(land_nc):
    sampler = _quiet(land_nc, min_valid=0.05, max_ctx_frac=0.9, batch_size=32)
    capped = 0
    for step in range(6):
        batch = batch_at(sampler, step)
        if batch.mask_c is None:
            continue
        n_ctx = batch.xc.shape[1]
        valid = batch.mask_c.sum(1) + batch.mask_t.sum(1)
        assert torch.equal(batch.mask_c.sum(1), torch.clamp(valid - 1, max=n_ctx))
        assert (batch.mask_t.sum(1) >= 1).all()
        capped += int((batch.mask_c.sum(1) < n_ctx).sum())
    assert capped > 0


def test_window_maps_leave_missing_cells_blank(land_nc):
    """The maps ``tnpx plot`` draws: a missing cell is blank in the truth and never context."""
    from tests.helpers.small_models import small_model
    from tnpx.plot.grid import window_maps

    sampler = _quiet(land_nc, batch_size=8)
    batch = next(batch_at(sampler, s) for s in range(20) if batch_at(sampler, s).mask_c is not None)
    i = int(batch.mask_t.logical_not().sum(1).argmax())  # the task with the most land
    maps = window_maps({"tnp": small_model("tnp", dim_x=4, dim_y=1)}, sampler, batch, i)
    assert np.isnan(maps.truth).any() and not np.isnan(maps.means["tnp"]).any()
    assert not (maps.is_context & np.isnan(maps.truth)).any()
    assert len(maps.context_points) == int(batch.mask_c[i].sum())
