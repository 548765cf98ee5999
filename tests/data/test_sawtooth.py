"""The sawtooth task sampler (tnpx.data.synthetic.sawtooth), 1D and 2D, full and restricted."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from tnpx.batch import Batch
from tnpx.data import (
    GPConfig,
    GPSampler,
    SawtoothConfig,
    SawtoothSampler,
    batch_at,
    build_sampler,
)

# --- sawtooth ---------------------------------------------------------------------------


def _phase_consistent(b: Batch):
    """With no noise, ``(y - d.x) mod T`` is the task's phase: one constant per task."""
    period = b.info["period"].double().view(-1, 1)
    d = b.info["direction"].double()
    for x, y in ((b.xc, b.yc), (b.xt, b.yt)):
        u = (x.double() * d[:, None, :]).sum(-1)
        phase = torch.remainder(y[..., 0].double() - u, period)
        # compare on the circle of circumference T
        gap = torch.remainder(phase - phase[:, :1] + period / 2, period) - period / 2
        assert gap.abs().max().item() < 1e-4


@pytest.mark.parametrize("dim_x", [1, 2])
def test_sawtooth_values_lie_in_one_period(dim_x):
    sampler = build_sampler("sawtooth", batch_size=16, seed=0, dim_x=dim_x, noise=0.0)
    for step in range(3):
        b = batch_at(sampler, step)
        assert 1 <= b.xc.shape[1] <= 64
        assert b.xt.shape == (16, 128, dim_x) and b.yt.shape == (16, 128, 1)
        period = b.info["period"].view(-1, 1, 1)
        assert ((period >= 0.5) & (period <= 2.0)).all()
        for y in (b.yc, b.yt):
            assert (y >= 0).all()
            assert (y < period + 1e-5).all()
        assert b.xt.abs().max() <= 2
        _phase_consistent(b)


def test_sawtooth_noise():
    clean = batch_at(build_sampler("sawtooth", batch_size=8, seed=0, noise=0.0), 0)
    noisy = batch_at(build_sampler("sawtooth", batch_size=8, seed=0, noise=0.1), 0)
    assert_close(noisy.xt, clean.xt)
    diff = (noisy.yt - clean.yt).flatten()
    assert diff.std().item() == pytest.approx(0.1, abs=0.02)


def test_sawtooth_1d_directions_are_signs():
    d = batch_at(build_sampler("sawtooth", batch_size=64, seed=0), 0).info["direction"]
    assert d.shape == (64, 1)
    assert set(d.flatten().tolist()) == {-1.0, 1.0}


def test_sawtooth_full_2d_directions_are_unit_vectors():
    d = batch_at(build_sampler("sawtooth", batch_size=64, seed=0, dim_x=2), 0).info["direction"]
    assert_close(d.norm(dim=-1), torch.ones(64, dtype=d.dtype))
    assert not torch.allclose(d[:, 0].abs(), d[:, 1].abs())  # not only diagonals


def test_sawtooth_restricted_directions_on_diagonals():
    sampler = build_sampler(
        "sawtooth", batch_size=64, seed=0, dim_x=2, direction="restricted", noise=0.0
    )
    b = batch_at(sampler, 0)
    d = b.info["direction"]
    assert_close(d.abs(), torch.full_like(d, 1 / math.sqrt(2)))
    signs = {tuple(s) for s in torch.sign(d).tolist()}
    assert signs == {(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)}
    _phase_consistent(b)


def test_sawtooth_shift():
    plain = batch_at(build_sampler("sawtooth", batch_size=4, seed=0), 1)
    moved = batch_at(build_sampler("sawtooth", batch_size=4, seed=0, shift=1.0), 1)
    assert_close(moved.xt, plain.xt + 1.0)
    assert moved.xt.max() > 2


def test_sampler_classes_directly():
    gp = GPSampler(GPConfig(), batch_size=2, seed=0)
    saw = SawtoothSampler(SawtoothConfig(dim_x=2), batch_size=2, seed=0)
    assert batch_at(gp, 0).xt.shape == (2, 150, 1)
    assert batch_at(saw, 0).xt.shape == (2, 128, 2)
    assert (gp.dim_x, gp.dim_y, saw.dim_x, saw.dim_y) == (1, 1, 2, 1)
