"""GP task sampler layouts (tnpx.data): KR-1 and KR-3 (context among the targets, a grid,
context noise) and TE-1 (uniform inputs drawn per task), and shifted input ranges."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tnpx.data import batch_at, build_sampler
from tnpx.gp.kernels import KERNELS

# --- GP layouts -------------------------------------------------------------------------


def test_kr1_layout():
    sampler = build_sampler("gp", batch_size=2, seed=0, kernels=["rbf", "periodic", "matern32"])
    n_ctx_seen = set()
    for step in range(25):
        b = batch_at(sampler, step)
        n_ctx = b.xc.shape[1]
        n_ctx_seen.add(n_ctx)
        assert 3 <= n_ctx <= 49
        assert b.xt.shape == (2, 150, 1) and b.yt.shape == (2, 150, 1)
        assert b.yc.shape == (2, n_ctx, 1)
        assert b.xc.dtype == b.yc.dtype == b.xt.dtype == b.yt.dtype == torch.float32
        # context locations are the first n_ctx target locations, shared by the batch
        assert torch.equal(b.xc, b.xt[:, :n_ctx])
        assert torch.equal(b.xt, b.xt[:1].expand_as(b.xt))
        assert b.xt.min() >= -2 and b.xt.max() <= 2
        # the last 100 targets are the evenly spaced grid on [-2, 2]
        assert_close(b.xt[0, 50:, 0], torch.linspace(-2, 2, 100))
        for k in ("kernel", "lengthscale", "period", "variance", "noise_ctx", "noise_tgt"):
            assert b.info[k].shape == (2,)
    assert len(n_ctx_seen) > 10


def test_kr_context_noise_and_noiseless_targets():
    sampler = build_sampler("gp", batch_size=64, seed=1)
    diffs = []
    for step in range(10):
        b = batch_at(sampler, step)
        diffs.append((b.yc - b.yt[:, : b.xc.shape[1]]).flatten())
    diffs = torch.cat(diffs)
    assert diffs.numel() > 2000
    assert diffs.std().item() == pytest.approx(0.1, abs=0.01)
    assert diffs.mean().abs().item() < 0.01


def test_kr_targets_carry_noise_tgt():
    sampler = build_sampler("gp", batch_size=64, seed=1, noise_ctx=0.0, noise_tgt=0.3)
    diffs = torch.cat(
        [
            (b.yt[:, : b.xc.shape[1]] - b.yc).flatten()
            for b in (batch_at(sampler, s) for s in range(10))
        ]
    )
    assert diffs.std().item() == pytest.approx(0.3, abs=0.03)


def test_kr3_2d_layout():
    sampler = build_sampler(
        "gp", batch_size=2, seed=0, dim_x=2, n_random=128, n_grid=16, min_ctx=12, max_ctx=127
    )
    assert sampler.dim_x == 2 and sampler.dim_y == 1
    b = batch_at(sampler, 0)
    n_ctx = b.xc.shape[1]
    assert 12 <= n_ctx <= 127
    assert b.xt.shape == (2, 384, 2) and b.yt.shape == (2, 384, 1)
    assert b.xc.shape == (2, n_ctx, 2)
    assert torch.equal(b.xc, b.xt[:, :n_ctx])
    grid = b.xt[0, 128:]
    axis = torch.linspace(-2, 2, 16)
    assert_close(grid.unique(dim=0).shape[0], 256)
    assert_close(grid[:, 0].unique(), axis)
    assert_close(grid[:, 1].unique(), axis)
    assert b.xt.abs().max() <= 2


def te1_config(**kw) -> dict:
    cfg = dict(
        kernels=["se", "periodic", "matern52"],
        lengthscale_prior="loguniform",
        lengthscale_a=0.25,
        lengthscale_b=4.0,
        period_prior="lengthscale",
        noise_ctx=0.2,
        noise_tgt=0.2,
        layout="uniform",
        n_tgt=128,
        min_ctx=1,
        max_ctx=64,
    )
    return {**cfg, **kw}


def test_te1_layout():
    sampler = build_sampler("gp", batch_size=8, seed=0, **te1_config())
    for step in range(5):
        b = batch_at(sampler, step)
        assert 1 <= b.xc.shape[1] <= 64
        assert b.xt.shape == (8, 128, 1)
        assert b.xc.min() >= -2 and b.xc.max() <= 2
        assert b.xt.min() >= -3 and b.xt.max() <= 3
        ls = b.info["lengthscale"]
        periodic = b.info["kernel"] == KERNELS.index("periodic")
        # periodic tasks: the period is the sampled lengthscale and the kernel's l is 1
        assert (ls[periodic] == 1).all()
        assert ((ls[~periodic] >= 0.25) & (ls[~periodic] <= 4)).all()
        assert ((b.info["period"] >= 0.25) & (b.info["period"] <= 4)).all()
    # the inputs are drawn per task, not shared
    assert not torch.equal(b.xt[0], b.xt[1])


@pytest.mark.parametrize("shift", [0.4, 1.0])
def test_te1_shift_moves_input_ranges(shift):
    plain = batch_at(build_sampler("gp", batch_size=8, seed=0, **te1_config()), 2)
    moved = batch_at(build_sampler("gp", batch_size=8, seed=0, **te1_config(shift=shift)), 2)
    assert_close(moved.xc, plain.xc + shift, atol=1e-6, rtol=0)
    assert_close(moved.xt, plain.xt + shift, atol=1e-6, rtol=0)
    assert moved.xc.min() >= -2 + shift and moved.xc.max() <= 2 + shift
    assert moved.xt.min() >= -3 + shift and moved.xt.max() <= 3 + shift
    assert moved.xt.max() > 3  # really outside the training range
    # stationary kernels: the same draws give (numerically) the same function values
    assert_close(moved.yt, plain.yt, atol=1e-3, rtol=1e-3)


def test_kr_shift_moves_locations():
    plain = batch_at(build_sampler("gp", batch_size=2, seed=0), 0)
    moved = batch_at(build_sampler("gp", batch_size=2, seed=0, shift=0.5), 0)
    assert_close(moved.xt, plain.xt + 0.5)
