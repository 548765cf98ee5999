"""nn/setconv_channels.py: the per-channel read-out in bounded blocks computes the einsum's
function and gradients; every other set-convolution path is unchanged."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call
from torch.testing import assert_close

import tnpx
from tests.helpers.reference_ops import masked_task, randomise
from tnpx.nn import SetConvFromGrid
from tnpx.nn.setconv import rbf_axis_weights
from tnpx.nn.setconv_channels import _blocks, channel_rbf_sum

F64 = torch.float64
EXACT = dict(atol=1e-12, rtol=0)


def read_out(density: bool, channels: int = 5, seed: int = 0) -> SetConvFromGrid:
    """A float64 per-channel read-out, 1D, 4 points per unit, with distinct length scales."""
    torch.manual_seed(seed)
    module = SetConvFromGrid(1, 4.0, n_scales=channels + density, density=density).double()
    with torch.no_grad():
        module.log_length_scale.add_(0.4 * torch.randn(channels + density, dtype=F64))
    return module


def inputs(b=3, n=7, channels=5, grid=20, seed=1):
    """Targets ``x [b, n, 1]`` (on and beyond the grid), grid values ``z [b, channels, grid]``,
    box starts ``[b, 1]`` and a valid mask ``[b, 1, grid]`` (each task's box a prefix)."""
    gen = torch.Generator().manual_seed(seed)
    x = 6 * torch.rand(b, n, 1, generator=gen, dtype=F64) - 0.5
    z = torch.randn(b, channels, grid, generator=gen, dtype=F64)
    start = torch.tensor([[0], [-3], [2]])[:b]
    sizes = torch.tensor([grid, grid - 4, grid - 9])[:b]
    valid = (torch.arange(grid) < sizes[:, None]).to(F64)[:, None]
    return x, z, start, valid


def value_and_grads(module, x, z, start, valid=None):
    """The read-out and the gradients of a non-linear loss w.r.t. x, z and the log scales."""
    x, z = x.clone().requires_grad_(), z.clone().requires_grad_()
    out = module(x, z, start, valid)
    loss = (out * torch.cos(out)).sum()
    return out, torch.autograd.grad(loss, (x, z, module.log_length_scale))


@pytest.mark.parametrize("density", [False, True])
@pytest.mark.parametrize("with_valid", [False, True])
def test_fused_read_out_equals_the_einsum(density, with_valid):
    module = read_out(density)
    x, z, start, valid = inputs()
    valid = valid if with_valid else None
    module.chunk_elements = 50  # several blocks, some of them ragged
    assert module.fuses_channels
    fused, fused_grads = value_and_grads(module, x, z, start, valid)
    module.fused = False
    assert not module.fuses_channels
    einsum, einsum_grads = value_and_grads(module, x, z, start, valid)
    assert fused.shape == (3, 7, 5 + density)
    assert einsum.abs().max() > 0.1  # the comparison is not vacuous
    assert_close(fused, einsum, **EXACT)
    for a, b in zip(fused_grads, einsum_grads):
        assert b.abs().max() > 1e-3
        assert_close(a, b, **EXACT)


def test_density_channel_sums_the_weights_of_valid_grid_points():
    module = read_out(density=True)
    x, z, start, valid = inputs()
    out = module(x, z, start, valid)
    scale = module.length_scale[0]
    weights = rbf_axis_weights(x[..., 0], start[:, 0], z.shape[-1], scale, module.points_per_unit)
    assert_close(out[..., 0], (weights * valid).sum(-1), **EXACT)


def test_gradcheck_of_the_function():
    gen = torch.Generator().manual_seed(3)
    offset = (8 * torch.rand(2, 3, generator=gen, dtype=F64)).requires_grad_()
    rate = (-0.05 - 0.3 * torch.rand(4, generator=gen, dtype=F64)).requires_grad_()
    z = torch.randn(2, 4, 9, generator=gen, dtype=F64, requires_grad=True)
    for chunk in (1, 40, 10**6):
        assert torch.autograd.gradcheck(
            lambda a, r, v, c=chunk: channel_rbf_sum(a, r, v, c), (offset, rate, z)
        )


def test_gradcheck_through_the_module():
    """Gradients reach the targets, the grid values and the log length scales."""
    module = read_out(density=True, channels=2)
    module.chunk_elements = 30
    x, z, start, valid = inputs(b=2, n=3, channels=2, grid=8)
    log_scale = module.log_length_scale.detach().clone()

    def f(x, z, log_scale):
        return functional_call(module, {"log_length_scale": log_scale}, (x, z, start, valid))

    args = (x.requires_grad_(), z.requires_grad_(), log_scale.requires_grad_())
    assert torch.autograd.gradcheck(f, args)


def test_chunk_budget_changes_nothing():
    module = read_out(density=True)
    x, z, start, valid = inputs()
    results = []
    pair = 6 * 20  # weights per (task, target): 6 channels, 20 grid points
    # one pair per block; runs of 3 of a task's 7 targets; 2 of the 3 tasks; everything
    for chunk in (1, 3 * pair + 5, 2 * 7 * pair, 10**9):
        module.chunk_elements = chunk
        results.append(value_and_grads(module, x, z, start, valid))
    for out, grads in results[1:]:
        assert_close(out, results[0][0], **EXACT)
        for a, b in zip(grads, results[0][1]):
            assert_close(a, b, **EXACT)


@pytest.mark.parametrize("b,n,per_pair,budget", [(3, 7, 10, 1), (3, 7, 10, 35), (3, 7, 10, 150),
                                                  (4, 5, 10, 10**6), (2, 0, 10, 100)])  # fmt: skip
def test_blocks_cover_every_pair_once_within_the_budget(b, n, per_pair, budget):
    seen = torch.zeros(b, n, dtype=torch.long)
    for bs, ns in _blocks(b, n, per_pair, budget):
        block = seen[bs, ns]
        assert block.numel() * per_pair <= max(budget, per_pair)
        block += 1
    assert bool((seen == 1).all())


def test_fused_only_where_it_applies():
    """1D per-channel read-outs fuse; per-dimension scales and 2D grids keep the einsum."""
    assert SetConvFromGrid(1, 4.0, n_scales=3).fuses_channels
    assert not SetConvFromGrid(1, 4.0).fuses_channels
    assert not SetConvFromGrid(2, 4.0, n_scales=3).fuses_channels
    assert not SetConvFromGrid(1, 4.0, n_scales=3, fused=False).fuses_channels


# --- in the ConvCNP -----------------------------------------------------------------------


def tiny_convcnp(dim_x=1, **options):
    model = tnpx.build_model("convcnp", dim_x, 2, dim_model=8, n_layers=2, kernel_size=5,
                             points_per_unit=4, **options)  # fmt: skip
    return randomise(model, 0.4)


def prediction_and_grads(model, xc, yc, xt, mask):
    """Mean, std and the gradient of the NLL w.r.t. every parameter."""
    pred = model(xc, yc, xt, mask_c=mask)
    loss = -pred.log_prob(torch.zeros_like(pred.mean)).sum()
    params = [p for p in model.parameters() if p.requires_grad]
    return pred.mean, pred.stddev, torch.autograd.grad(loss, params)


def test_kr_code_convcnp_is_the_same_fused_or_not():
    model = tiny_convcnp(preset="kr-code")
    model.readout.chunk_elements = 64  # blocks of a few targets
    xc, yc, xt, mask = masked_task(dim_x=1, dim_y=2)
    assert model.readout.fuses_channels
    fused = prediction_and_grads(model, xc, yc, xt, mask)
    model.readout.fused = False
    einsum = prediction_and_grads(model, xc, yc, xt, mask)
    assert einsum[0].std(1).min() > 1e-3  # the targets see the context
    assert_close(fused[0], einsum[0], atol=1e-10, rtol=0)
    assert_close(fused[1], einsum[1], atol=1e-10, rtol=0)
    for a, b in zip(fused[2], einsum[2]):
        assert_close(a, b, atol=1e-10, rtol=0)


@pytest.mark.parametrize(
    "dim_x,options",
    [(1, {}), (2, {}), (1, {"preset": "te-code"}), (2, {"setconv_scales": "per-channel"})],
)
def test_other_convcnps_are_bitwise_unchanged(dim_x, options):
    """Per-dimension scales and 2D grids read out through the einsum, fused option or not,
    and the read-out is the einsum of the per-axis weights, bit for bit."""
    model = tiny_convcnp(dim_x, **options)
    assert not model.readout.fuses_channels
    xc, yc, xt, mask = masked_task(dim_x=dim_x, dim_y=2)
    first = prediction_and_grads(model, xc, yc, xt, mask)
    model.readout.fused = False
    second = prediction_and_grads(model, xc, yc, xt, mask)
    for a, b in zip(first[:2] + first[2], second[:2] + second[2]):
        assert torch.equal(a, b)
    readout, z = model.readout, torch.randn(3, 8, *([12] * dim_x), dtype=F64)
    start = torch.zeros(3, dim_x, dtype=torch.long)
    weights = readout.axis_weights(xt, start, z.shape[2:])
    ins, axes = readout.subscripts()
    expected = torch.einsum(f"{ins},bc{axes}->bnc", *weights, z)
    with torch.no_grad():
        assert torch.equal(readout._read(xt, z, start), expected)


def test_no_targets():
    module = read_out(density=True)
    x, z, start, valid = inputs()
    assert module(x[:, :0], z, start, valid).shape == (3, 0, 6)


def test_fixed_length_scales():
    """``trainable=False`` (scales in a buffer): no rate gradient is asked for; the read-out
    and the gradients w.r.t. x and z are still the einsum's."""
    module = SetConvFromGrid(1, 4.0, n_scales=5, trainable=False, chunk_elements=50).double()
    x, z, start, _ = inputs()
    results = []
    for fused in (True, False):
        module.fused = fused
        xg, zg = x.clone().requires_grad_(), z.clone().requires_grad_()
        out = module(xg, zg, start)
        results.append((out, *torch.autograd.grad(out.square().sum(), (xg, zg))))
    for a, b in zip(*results):
        assert_close(a, b, **EXACT)
