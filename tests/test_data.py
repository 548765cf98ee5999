"""Task samplers (tnpx.data) and the shared kernels (tnpx.kernels)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from tnpx.batch import Batch
from tnpx.data import (
    SPLITS,
    GPConfig,
    GPSampler,
    SawtoothConfig,
    SawtoothSampler,
    batch_at,
    build_sampler,
    sampler_options,
    task_generator,
)
from tnpx.kernels import KERNELS, canonical_kernel, kernel_matrix, kernel_matrix_mixed

SAMPLER_NAMES = ["gp", "sawtooth"]


def assert_batches_equal(a: Batch, b: Batch):
    for name in ("xc", "yc", "xt", "yt"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert a.info.keys() == b.info.keys()
    for k in a.info:
        assert torch.equal(a.info[k], b.info[k]), k


def batches_differ(a: Batch, b: Batch) -> bool:
    if a.xt.shape != b.xt.shape or a.xc.shape != b.xc.shape:
        return True
    return not (torch.equal(a.xt, b.xt) and torch.equal(a.yt, b.yt) and torch.equal(a.yc, b.yc))


# --- reproducibility --------------------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_batch_is_a_function_of_seed_step_rank_split(name):
    sampler = build_sampler(name, batch_size=4, seed=7)
    ref = batch_at(sampler, step=3, rank=1, split="train")
    assert_batches_equal(ref, batch_at(sampler, step=3, rank=1, split="train"))
    # a freshly built sampler with the same seed gives the same stream
    assert_batches_equal(ref, batch_at(build_sampler(name, batch_size=4, seed=7), 3, 1, "train"))
    assert batches_differ(ref, batch_at(sampler, step=4, rank=1, split="train"))
    assert batches_differ(ref, batch_at(sampler, step=3, rank=0, split="train"))
    assert batches_differ(ref, batch_at(sampler, step=3, rank=1, split="val"))
    assert batches_differ(ref, batch_at(sampler, step=3, rank=1, split="test"))
    assert batches_differ(ref, batch_at(build_sampler(name, batch_size=4, seed=8), 3, 1, "train"))


def test_splits_never_share_a_stream():
    draws = {
        (split, step, rank): torch.rand(4, generator=task_generator(0, split, step, rank))
        for split in SPLITS
        for step in range(3)
        for rank in range(2)
    }
    values = list(draws.values())
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            assert not torch.equal(values[i], values[j])


def test_task_generator_rejects_unknown_split():
    with pytest.raises(ValueError, match="train"):
        task_generator(0, "validation", 0)


def test_batch_size_override():
    sampler = build_sampler("gp", batch_size=4, seed=0)
    assert batch_at(sampler, 0).batch_size == 4
    assert batch_at(sampler, 0, batch_size=2).batch_size == 2


def test_sampler_uses_only_its_generator():
    sampler = build_sampler("gp", batch_size=3, seed=0)
    torch.manual_seed(0)
    a = batch_at(sampler, 5)
    torch.manual_seed(123)
    torch.rand(10)
    assert_batches_equal(a, batch_at(sampler, 5))


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


# --- GP priors --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_sample_covariance_matches_kernel(kernel):
    ls = 0.6
    sampler = build_sampler(
        "gp",
        batch_size=4000,
        seed=0,
        kernels=[kernel],
        lengthscale_prior="fixed",
        lengthscale_a=ls,
        period_min=1.0,
        period_max=1.0,
        n_random=4,
        n_grid=4,
        min_ctx=1,
        max_ctx=4,
    )
    b = batch_at(sampler, 0)
    y = b.yt[..., 0].double()  # [4000, 8], noiseless f at shared inputs
    cov = y.T @ y / y.shape[0]  # zero-mean prior
    x = b.xt[:1].double()
    k = kernel_matrix(
        kernel,
        x,
        x,
        torch.tensor([ls], dtype=torch.float64),
        period=torch.tensor([1.0], dtype=torch.float64),
    )[0]
    assert (cov - k).abs().max().item() < 0.1
    assert y.mean(0).abs().max().item() < 0.1


def test_variance_option_scales_the_prior():
    sampler = build_sampler(
        "gp", batch_size=2000, seed=0, variance=4.0, n_random=3, n_grid=3, min_ctx=1, max_ctx=3
    )
    y = batch_at(sampler, 0).yt
    assert y.var().item() == pytest.approx(4.0, rel=0.1)


def test_beta_lengthscale_prior():
    sampler = build_sampler(
        "gp", batch_size=5000, seed=0, n_random=3, n_grid=2, min_ctx=1, max_ctx=3
    )
    ls = batch_at(sampler, 0).info["lengthscale"]
    assert ((ls > 0) & (ls < 1)).all()
    assert ls.mean().item() == pytest.approx(0.3, abs=0.01)  # Beta(3, 7) mean
    assert ls.var().item() == pytest.approx(21 / (100 * 11), rel=0.1)  # ab / ((a+b)^2 (a+b+1))


def test_loguniform_lengthscale_prior():
    sampler = build_sampler(
        "gp",
        batch_size=5000,
        seed=0,
        lengthscale_prior="loguniform",
        lengthscale_a=0.25,
        lengthscale_b=4.0,
        n_random=3,
        n_grid=2,
        min_ctx=1,
        max_ctx=3,
    )
    log_ls = batch_at(sampler, 0).info["lengthscale"].log()
    assert log_ls.min() >= math.log(0.25) and log_ls.max() <= math.log(4.0)
    assert log_ls.mean().item() == pytest.approx(0.0, abs=0.05)


def test_period_uniform_prior():
    sampler = build_sampler(
        "gp",
        batch_size=2000,
        seed=0,
        kernels=["periodic"],
        n_random=3,
        n_grid=2,
        min_ctx=1,
        max_ctx=3,
    )
    period = batch_at(sampler, 0).info["period"]
    assert period.min() >= 0.5 and period.max() <= 2.0
    assert period.mean().item() == pytest.approx(1.25, abs=0.03)


def test_kernel_mixture_uses_every_kernel():
    sampler = build_sampler(
        "gp",
        batch_size=300,
        seed=0,
        kernels=["rbf", "periodic", "matern52"],
        n_random=3,
        n_grid=2,
        min_ctx=1,
        max_ctx=3,
    )
    ids = batch_at(sampler, 0).info["kernel"]
    expected = {KERNELS.index(k) for k in ("rbf", "periodic", "matern52")}
    assert set(ids.tolist()) == expected


# --- kernels ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["rbf", "matern12", "matern32", "matern52", "periodic", "se", "eq", "RBF"]
)
def test_every_kernel_name_samples(name):
    sampler = build_sampler("gp", batch_size=3, seed=0, kernels=[name])
    b = batch_at(sampler, 0)
    assert torch.isfinite(b.yt).all() and torch.isfinite(b.yc).all()
    assert (b.info["kernel"] == KERNELS.index(canonical_kernel(name))).all()


def test_aliases():
    assert canonical_kernel("se") == canonical_kernel("eq") == "rbf"
    x = torch.randn(2, 5, 1)
    ls = torch.tensor([0.5, 1.0])
    assert torch.equal(kernel_matrix("se", x, x, ls), kernel_matrix("rbf", x, x, ls))


def test_unknown_kernel_lists_valid_ones():
    for make in (
        lambda: canonical_kernel("cosine"),
        lambda: GPSampler(GPConfig(kernels=["cosine"])),
        lambda: build_sampler("gp", kernels=["rbf", "cosine"]),
    ):
        with pytest.raises(ValueError) as err:
            make()
        for k in KERNELS:
            assert k in str(err.value)
        assert "cosine" in str(err.value)


@pytest.mark.parametrize("name", ["rbf", "matern12", "matern32", "matern52", "periodic"])
@pytest.mark.parametrize("dim_x", [1, 2])
def test_kernel_matrix_symmetric_psd_unit_diagonal(name, dim_x):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(3, 20, dim_x, generator=g, dtype=torch.float64) * 4 - 2
    ls = torch.tensor([0.2, 0.5, 1.5], dtype=torch.float64)
    period = torch.tensor([0.7, 1.0, 2.0], dtype=torch.float64)
    for variance in (None, torch.ones(3, dtype=torch.float64)):
        k = kernel_matrix(name, x, x, ls, period=period, variance=variance)
        assert k.shape == (3, 20, 20)
        assert_close(k, k.transpose(1, 2))
        assert_close(k.diagonal(dim1=1, dim2=2), torch.ones(3, 20, dtype=torch.float64))
        assert torch.linalg.eigvalsh(k).min().item() > -1e-8
        assert (k <= 1 + 1e-12).all()
    k2 = kernel_matrix(
        name, x, x, ls, period=period, variance=torch.full((3,), 2.5, dtype=torch.float64)
    )
    assert_close(k2.diagonal(dim1=1, dim2=2), torch.full((3, 20), 2.5, dtype=torch.float64))


def test_kernel_values_at_known_distances():
    x1 = torch.zeros(1, 1, 1, dtype=torch.float64)
    x2 = torch.full((1, 1, 1), 0.6, dtype=torch.float64)
    ls = torch.tensor([0.3], dtype=torch.float64)
    r = 2.0  # 0.6 / 0.3
    s3, s5 = math.sqrt(3) * r, math.sqrt(5) * r
    expected = {
        "rbf": math.exp(-0.5 * r * r),
        "matern12": math.exp(-r),
        "matern32": (1 + s3) * math.exp(-s3),
        "matern52": (1 + s5 + s5 * s5 / 3) * math.exp(-s5),
    }
    for name, value in expected.items():
        assert kernel_matrix(name, x1, x2, ls).item() == pytest.approx(value, rel=1e-12)
    period = torch.tensor([2.5], dtype=torch.float64)
    per = math.exp(-2 * math.sin(math.pi * 0.6 / 2.5) ** 2 / 0.3**2)
    assert kernel_matrix("periodic", x1, x2, ls, period=period).item() == pytest.approx(per)
    # periodic: one period apart is perfectly correlated
    assert kernel_matrix("periodic", x1, x1 + 2.5, ls, period=period).item() == pytest.approx(1.0)


def test_periodic_kernel_needs_period():
    x = torch.zeros(1, 2, 1)
    with pytest.raises(ValueError, match="period"):
        kernel_matrix("periodic", x, x, torch.ones(1))


def test_kernel_matrix_mixed_matches_per_kernel():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(5, 6, 1, generator=g, dtype=torch.float64)
    ids = torch.tensor([0, 4, 2, 0, 3])
    params = {
        "lengthscale": torch.rand(5, generator=g, dtype=torch.float64) + 0.2,
        "period": torch.rand(5, generator=g, dtype=torch.float64) + 0.5,
        "variance": torch.rand(5, generator=g, dtype=torch.float64) + 0.5,
    }
    k = kernel_matrix_mixed(ids, x, x, **params)
    for i, kid in enumerate(ids.tolist()):
        one = kernel_matrix(
            KERNELS[kid], x[i : i + 1], x[i : i + 1], **{n: v[i : i + 1] for n, v in params.items()}
        )
        assert_close(k[i : i + 1], one)


# --- configuration errors ---------------------------------------------------------------


def test_unknown_sampler_lists_valid_ones():
    with pytest.raises(ValueError) as err:
        build_sampler("mnist")
    for name in SAMPLER_NAMES:
        assert name in str(err.value)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_unknown_option_lists_valid_ones(name):
    with pytest.raises(ValueError) as err:
        build_sampler(name, not_an_option=1)
    msg = str(err.value)
    assert "not_an_option" in msg
    for option in sampler_options(name):
        assert option in msg


@pytest.mark.parametrize(
    "options",
    [
        {"layout": "grid"},
        {"lengthscale_prior": "gamma"},
        {"period_prior": "beta"},
        {"min_ctx": 10, "max_ctx": 5},
        {"min_ctx": -1},
        {"max_ctx": 60},  # exceeds n_random=50 in the kr layout
    ],
)
def test_invalid_gp_options(options):
    with pytest.raises(ValueError) as err:
        build_sampler("gp", **options)
    value = next(iter(options.values()))
    assert str(value) in str(err.value)


@pytest.mark.parametrize(
    "options",
    [
        {"dim_x": 1, "direction": "restricted"},
        {"dim_x": 3},
        {"dim_x": 2, "direction": "diagonal"},
    ],
)
def test_invalid_sawtooth_options(options):
    with pytest.raises(ValueError):
        build_sampler("sawtooth", **options)


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


# --- Batch ------------------------------------------------------------------------------


def test_batch_select_and_to():
    b = batch_at(build_sampler("gp", batch_size=4, seed=0), 0)
    sub = b.select(slice(1, 3))
    assert sub.batch_size == 2
    assert torch.equal(sub.xc, b.xc[1:3]) and torch.equal(sub.yt, b.yt[1:3])
    assert torch.equal(sub.info["lengthscale"], b.info["lengthscale"][1:3])
    idx = torch.tensor([3, 0])
    assert torch.equal(b.select(idx).yc, b.yc[idx])
    moved = b.to("cpu")
    assert_batches_equal(moved, b)
    assert moved.mask_c is None
