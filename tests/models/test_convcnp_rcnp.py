"""ConvCNP and RCNP (models/convcnp.py, models/rcnp.py): shapes, translation equivariance (exact
for RCNP; for ConvCNP exact for shifts by multiples of the grid spacing), grids that follow the
data, chunking, and a few training steps. The grid box and the masked UNet they are built on are
tested in ``tests/nn/test_setconv.py`` and ``tests/nn/test_cnn.py``."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import loss_and_grads

PPU = 16  # grid spacing h = 1/16: every dyadic shift below is a multiple of it
SMALL = {
    "rcnp": {"dim_model": 16},
    "convcnp": {"dim_model": 16, "n_layers": 5, "points_per_unit": PPU, "margin": 0.5},
}
VARIANTS = [
    ("rcnp", {}),
    ("convcnp", {}),
    ("convcnp", {"cnn": "plain", "n_layers": 3}),
    ("convcnp", {"grid": "union"}),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for n, kw in VARIANTS]


def build(name, dim_x=1, dim_y=1, **kw):
    torch.manual_seed(0)
    return tnpx.build_model(name, dim_x, dim_y, **{**SMALL[name], **kw}).eval()


def dyadic(shape, generator):
    """Inputs on a 2^-10 grid in [-2, 2): integer shifts up to 10^3 are exact in float32."""
    return torch.randint(-2048, 2048, shape, generator=generator).float() / 1024


def task(dim_x, b=2, n_ctx=10, n_tgt=7, dim_y=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    yc = torch.randn(b, n_ctx, dim_y, generator=g)
    return dyadic((b, n_ctx, dim_x), g), yc, dyadic((b, n_tgt, dim_x), g)


def predict(model, xc, yc, xt, mask_c=None):
    with torch.no_grad():
        return model(xc, yc, xt, mask_c=mask_c)


def assert_same(p, q, atol=1e-5, rtol=1e-5):
    assert_close(p.mean, q.mean, atol=atol, rtol=rtol)
    assert_close(p.stddev, q.stddev, atol=atol, rtol=rtol)


@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
@pytest.mark.parametrize("dim_x, dim_y", [(1, 1), (2, 1), (2, 3)])
def test_shapes(name, kw, dim_x, dim_y):
    model = build(name, dim_x, dim_y, **kw)
    pred = predict(model, *task(dim_x, b=3, dim_y=dim_y))
    assert pred.mean.shape == pred.stddev.shape == (3, 7, dim_y)
    assert torch.isfinite(pred.mean).all() and (pred.stddev > 0).all()


@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
@pytest.mark.parametrize("offset", [1.0, 10.0, 100.0, 1000.0, 3 / PPU])
@pytest.mark.parametrize("dim_x", [1, 2])
def test_translation_equivariance_is_exact_on_the_grid(name, kw, offset, dim_x):
    """RCNP for any shift; ConvCNP for shifts that are multiples of h = 1/points_per_unit."""
    model = build(name, dim_x, **kw)
    assert model.translation_equivariant
    xc, yc, xt = task(dim_x)
    shift = torch.tensor([offset, -offset])[:dim_x]
    assert_same(predict(model, xc + shift, yc, xt + shift), predict(model, xc, yc, xt))


@pytest.mark.parametrize("dim_x", [1, 2])
@pytest.mark.parametrize("ppu, cells", [(10.0, 30), (6.0, 18), (16.0, 48)])
def test_convcnp_whole_cell_shifts_are_exact_for_data_on_the_lattice(dim_x, ppu, cells):
    """Data on the lattice (gridded data) shifted by whole cells (3.0 here) at grid densities
    whose spacing float32 cannot hold (1/10, 1/6; the thesis configs use 6): each point lands
    a rounding either side of its lattice point. The box must move by the same cells, not
    flip an edge cell (which moved the mean of this model by up to 2e-2 in 2D)."""
    model = build("convcnp", dim_x, points_per_unit=ppu, margin=1.0)
    g = torch.Generator().manual_seed(0)
    worst = 0.0
    for _ in range(4):
        xc = torch.randint(-40, 41, (2, 15, dim_x), generator=g).float() / ppu
        yc, xt = torch.randn(2, 15, 1, generator=g), torch.rand(2, 9, dim_x, generator=g) * 4 - 2
        shift = cells / ppu
        base, moved = predict(model, xc, yc, xt), predict(model, xc + shift, yc, xt + shift)
        worst = max(worst, (base.mean - moved.mean).abs().max().item())
        assert_same(moved, base)
    assert worst < 1e-5


@pytest.mark.parametrize("dim_x", [1, 2])
def test_convcnp_grid_follows_inputs_far_from_the_origin(dim_x):
    model = build("convcnp", dim_x)
    xc, yc, xt = task(dim_x, n_ctx=6)
    far = torch.full((dim_x,), 500.0)  # 8000 grid spacings
    start, shape, _ = model.grid(xc, xt, None)
    start_far, shape_far, _ = model.grid(xc + far, xt + far, None)
    assert shape_far == shape and all(0 < n <= (4 + 2 * 0.5) * PPU + 4 for n in shape)
    assert torch.equal(start_far, start + 500 * PPU)
    assert_same(predict(model, xc + far, yc, xt + far), predict(model, xc, yc, xt))


def test_convcnp_off_grid_shift_is_close_but_not_exact():
    model = build("convcnp", 1)
    xc, yc, xt = task(1)
    base, moved = predict(model, xc, yc, xt), predict(model, xc + 0.5 / PPU, yc, xt + 0.5 / PPU)
    assert (base.mean - moved.mean).abs().max() > 1e-7  # the discretisation changed


@pytest.mark.parametrize("dim_x", [1, 2])
@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5, 0.75])
def test_convcnp_off_grid_error_is_bounded(dim_x, fraction):
    """A shift by a fraction of h moves the prediction by a discretisation error only: for
    this small model measured up to 2.2e-2 (the grid multiples above: 0), against predictions
    of order 1; a grid that did not follow the data would move them by O(1)."""
    model = build("convcnp", dim_x)
    xc, yc, xt = task(dim_x)
    shift = fraction / PPU
    base, moved = predict(model, xc, yc, xt), predict(model, xc + shift, yc, xt + shift)
    assert (base.mean - moved.mean).abs().max() < 0.1
    assert (base.stddev - moved.stddev).abs().max() < 0.1


def test_convcnp_declares_grid_exact_equivariance():
    cls = tnpx.models.REGISTRY["convcnp"]
    assert cls.translation_equivariant and "grid-exact" in cls.equivariance_note
    assert all(c.equivariance_note == "" for n, c in tnpx.models.REGISTRY.items() if n != "convcnp")


@pytest.mark.parametrize("dim_x", [1, 2])
def test_convcnp_tasks_with_different_grids_share_a_batch(dim_x):
    """Tasks whose boxes differ in size go through the masked UNet (2 poolings here) together;
    each must get the prediction it gets alone, and padding must change nothing."""
    model = build("convcnp", dim_x)
    xc, yc, xt = task(dim_x, b=3, n_ctx=8, seed=3)
    xc[1] = xc[1] * 0.3  # a narrow box
    xc[2] = xc[2] * 0.5 + 40.0  # a narrower box far from the others
    xt[2] = xt[2] * 0.5 + 40.0
    mask = torch.ones(3, 8, dtype=torch.bool)
    mask[0, 5:] = False
    _, _, valid = model.grid(xc, xt, mask)
    assert valid is not None  # the boxes differ, so the masked path runs
    batch = predict(model, xc, yc, xt, mask)
    for i in range(3):
        n = int(mask[i].sum())
        alone = predict(model, xc[i : i + 1, :n], yc[i : i + 1, :n], xt[i : i + 1])
        assert_close(batch.mean[i : i + 1], alone.mean, atol=1e-5, rtol=1e-5)
        assert_close(batch.stddev[i : i + 1], alone.stddev, atol=1e-5, rtol=1e-5)
        one_target = predict(model, xc[i : i + 1, :n], yc[i : i + 1, :n], xt[i : i + 1, 3:4])
        assert_close(one_target.mean, alone.mean[:, 3:4], atol=1e-5, rtol=1e-5)


def test_convcnp_far_targets_get_the_empty_context_prior():
    model = build("convcnp", 1)
    xc, yc, xt = task(1, n_ctx=5)
    far = xt + 100.0
    prior = predict(model, xc[:, :0], yc[:, :0], far)
    assert_same(predict(model, xc, yc, far), prior)
    assert not torch.allclose(predict(model, xc, yc, xt).mean, prior.mean, atol=1e-4)


@pytest.mark.parametrize("name", ["rcnp", "convcnp"])
def test_chunked_and_unchunked_agree_forward_and_backward(name):
    xc, yc, xt = task(1, n_ctx=9, n_tgt=13)
    yt = torch.randn(2, 13, 1)
    results = []
    for chunk_elements in (2**30, 1):  # one chunk vs one target per chunk (+ checkpointing)
        model = build(name, 1, chunk_elements=chunk_elements).train()
        results.append(loss_and_grads(model, xc, yc, xt, yt))
    (loss_a, grads_a), (loss_b, grads_b) = results
    assert_close(loss_a, loss_b, atol=1e-6, rtol=1e-6)
    for ga, gb in zip(grads_a, grads_b):
        assert_close(ga, gb, atol=1e-5, rtol=1e-4)


def test_rcnp_chunk_size_bounds_pair_features():
    model = build("rcnp", chunk_elements=2**16)
    size = model.chunk_size(batch=4, n_ctx=100)
    assert size * 4 * 100 * 16 <= 2**16 and size >= 1
    assert model.chunk_size(batch=1, n_ctx=10**9) == 1


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"dim_x": 3}, "dim_x 1..2"),
        ({"cnn": "resnext"}, "cnn must be"),
        ({"grid": "targets"}, "grid must be"),
        ({"kernel_size": 4}, "kernel_size must be odd"),
        ({"points_per_unit": 0}, "points_per_unit must be > 0"),
    ],
)
def test_convcnp_bad_options_fail_clearly(kw, message):
    kw = dict(kw)
    dim_x = kw.pop("dim_x", 1)
    with pytest.raises(ValueError, match=message):
        tnpx.build_model("convcnp", dim_x, 1, **kw)


def test_rotation_flags():
    for name in ("rcnp", "convcnp"):
        assert tnpx.models.REGISTRY[name].rotation_equivariant is False


@pytest.mark.parametrize("name, lr", [("rcnp", 1e-2), ("convcnp", 3e-3)])
def test_a_few_training_steps_lower_the_loss(name, lr):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(8, 24, 1, generator=g) * 4 - 2
    y = torch.sin(3 * x) + 0.05 * torch.randn(8, 24, 1, generator=g)
    xc, yc, xt, yt = x[:, :12], y[:, :12], x[:, 12:], y[:, 12:]
    model = build(name, 1).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(40):
        loss = -model(xc, yc, xt).log_prob(yt).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert sum(losses[-5:]) / 5 < losses[0] - 0.2


def test_the_grid_density_defaults_by_dimension_and_is_stored():
    """64 points per unit in 1D (the papers'), 16 in 2D (a 384^2 grid at 64 took 7-37 s a
    forward); the resolved number goes into the config, so a checkpoint rebuilds it."""
    from tnpx.models.convcnp import DEFAULT_POINTS_PER_UNIT

    assert DEFAULT_POINTS_PER_UNIT == {1: 64.0, 2: 16.0}
    for dim_x, ppu in DEFAULT_POINTS_PER_UNIT.items():
        model = tnpx.build_model("convcnp", dim_x, 1, dim_model=8, n_layers=3)
        assert model.config["hyper"]["points_per_unit"] == ppu
    assert tnpx.build_model("convcnp", 2, 1, points_per_unit=6).hyper.points_per_unit == 6
