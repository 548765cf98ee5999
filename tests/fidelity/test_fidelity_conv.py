"""The ``convcnp`` presets compute the function of the authors' code (``docs/fidelity.md``).

Each reference forward pass is re-derived here in float64 from the reference's equations:
explicit set convolutions (RBF weights written out), BatchNorm written out, depthwise and
pointwise convolutions written out (full convolutions through ``torch.nn.functional.conv1d`` /
``conv2d`` with the reference's shapes), explicit MLPs, reading the tnpx model's
``state_dict()`` by name and never calling its layers. The references take no context mask,
so each task is computed on its own valid context points.

- ``kr-code``: MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c
  (``dl4bi/meta_regression/convcnp.py``, ``dl4bi/core/conv.py`` ``ConvDeepSet``,
  ``ConvCNPBlock``, ``ConvCNPNet``; ``benchmarks/meta_regression/configs/gp/model/
  convcnp.yaml``). 1D only: the code's grid has one axis (``reproduce_paper.py`` excludes
  ConvCNP from the 2D runs).
- ``te-code``: cambridge-mlg/tnp @ e2adb62406a2382b47c4a10f06b2d38c7aa97001
  (``experiments/configs/models/convcnp.yml`` with ``generators/synthetic-1d.yml``;
  ``tnp/models/convcnp.py``, ``tnp/networks/setconv.py``, ``tnp/networks/cnn.py``,
  ``tnp/utils/grids.py``, ``tnp/likelihoods/gaussian.py``).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import tnpx
from tests.helpers.reference_ops import (
    TOL,
    assert_reloads_identically,
    linear,
    masked_task,
    mlp,
    randomise,
    reference_prediction,
    relu,
    softplus,
)
from tests.helpers.reference_ops import count_parameters as count

F64 = torch.float64
# tiny sizes: kr-code's grid linspace(-2.5, 2.5, int(4 * 5)) = 20 points, te-code's 12 points
TINY = {
    "kr-code": dict(dim_model=8, n_layers=2, kernel_size=5, points_per_unit=4),
    "te-code": dict(dim_model=6, n_layers=3, kernel_size=3, grid_points=12),
}


# --- the reference's operations, written out -----------------------------------------------


def conv_deep_set(s_out, s_in, f_in, log_ls, sd, dense):
    """dl4bi ``ConvDeepSet`` (``use_density``): ``d_sq = |s_out - s_in|^2``; per channel ``c``
    of ``[1, f_in]`` a length scale ``exp(log_ls[c])`` and weights ``exp(-d_sq / (2 ls^2))``;
    sums over ``s_in``; ``[density, conv / (density + 1e-8)]``; ``Dense(d_out)``."""
    d_sq = ((s_out[:, None, :] - s_in[None, :, :]) ** 2).sum(-1)  # [L_out, L_in]
    ls = torch.exp(log_ls)  # [d_in]
    w = torch.exp(-d_sq[..., None] / (2 * ls**2))  # [L_out, L_in, d_in]
    f = torch.cat([torch.ones(len(s_in), 1, dtype=F64), f_in], -1)  # [L_in, d_in]
    h = (f[None] * w).sum(1)
    density, conv = h[:, :1], h[:, 1:]
    return linear(torch.cat([density, conv / (density + 1e-8)], -1), sd, dense)


def batch_norm(x, sd, name):
    """Flax ``BatchNorm(use_running_average=True)`` (epsilon 1e-5) of ``x [L, C]``."""
    mean, var = sd[f"{name}.running_mean"], sd[f"{name}.running_var"]
    return (x - mean) / torch.sqrt(var + 1e-5) * sd[f"{name}.weight"] + sd[f"{name}.bias"]


def depthwise_conv(x, sd, name):
    """Flax ``Conv(features=C, feature_group_count=C, kernel_size=(k,), use_bias=True)``,
    ``SAME`` zero padding, of ``x [L, C]``: ``out[i, c] = sum_j w[c, j] x[i + j - k // 2, c] +
    b[c]``."""
    w, b = sd[f"{name}.weight"][:, 0, :], sd[f"{name}.bias"]  # [C, k], [C]
    k = w.shape[-1]
    windows = F.pad(x.T, (k // 2, k // 2)).unfold(1, k, 1)  # [C, L, k]
    return (windows * w[:, None, :]).sum(-1).T + b


def pointwise_conv(x, sd, name):
    """Flax ``Conv(kernel_size=(1,), use_bias=True)`` of ``x [L, C_in]``: a Dense per point."""
    return x @ sd[f"{name}.weight"][:, :, 0].T + sd[f"{name}.bias"]


def sq_weights(x1, x2, ls):
    """cambridge-mlg/tnp ``compute_weights`` (``sq_dist``): ``exp(-0.5 sum_d (x1_d - x2_d)^2 /
    l_d^2)``, ``[n1, n2]``."""
    return torch.exp(-0.5 * ((x1[:, None, :] - x2[None]) ** 2 / ls**2).sum(-1))


# --- the two references ---------------------------------------------------------------------


def kr_code_reference(sd, xc, yc, xt, h):
    """dl4bi ``ConvCNP``: ``s_grid = linspace(s_min, s_max, int(ppu (s_max - s_min)))``;
    ``enc = ConvDeepSet(d_out=C)``; ``ConvCNPNet`` of ``ConvCNPBlock`` s (``r = x``; ``x =
    pw(dw(relu(bn(x))))``; ``x = dw'(relu(bn'(x)))``; ``pw'(x + r)``), whose BatchNorms use the
    running statistics (``conv_net`` is called without ``training``); ``dec =
    ConvDeepSet(d_out=C)`` from the grid to the targets; ``head = MLP([C] * 4 + [2 dy])``;
    ``std = min_std + (1 - min_std) softplus(raw)``."""
    n = int(h["points_per_unit"] * (h["grid_max"] - h["grid_min"]))
    s_grid = torch.linspace(h["grid_min"], h["grid_max"], n, dtype=F64)[:, None]  # [L, 1]
    z = conv_deep_set(s_grid, xc, yc, sd["encoder.log_length_scale"], sd, "grid_encoder.0")
    for i in range(h["n_layers"]):
        b = f"cnn.blocks.{i}"
        r = z
        z = relu(batch_norm(z, sd, f"{b}.norm1"))
        z = pointwise_conv(depthwise_conv(z, sd, f"{b}.depthwise1"), sd, f"{b}.pointwise1")
        z = relu(batch_norm(z, sd, f"{b}.norm2"))
        z = depthwise_conv(z, sd, f"{b}.depthwise2")
        z = pointwise_conv(z + r, sd, f"{b}.pointwise2")
    z = conv_deep_set(xt, s_grid, z, sd["readout.log_length_scale"], sd, "readout_map.0")
    mu, raw = mlp(z, sd, "decoder", h["n_decoder_hidden"] + 1).chunk(2, -1)
    return mu, h["min_std"] + (1 - h["min_std"]) * softplus(raw)


def te_code_reference(sd, xc, yc, xt, h):
    """cambridge-mlg/tnp ``ConvCNP``: ``yc -> [yc, 1]``; ``SetConvGridEncoder`` on
    ``construct_grid`` (``linspace`` per axis, ``meshgrid`` ``ij``), ``weights @ [yc, 1]``
    with ``l = 1e-5 + softplus(param)`` per input dimension; ``z_encoder`` MLP; ``CNN`` of
    ``ConvBlock`` s ``conv(relu(z))`` (bias, padding ``k // 2``); ``SetConvGridDecoder``:
    ``weights @ z`` over the flattened grid, its own length scale; ``TNPDecoder`` MLP;
    ``HeteroscedasticNormalLikelihood``: ``softplus(raw) ** 0.5 + 0``."""
    dx, n = xc.shape[-1], h["grid_points"]
    axis = torch.linspace(h["grid_min"], h["grid_max"], n, dtype=F64)
    grid = torch.stack(torch.meshgrid(*[axis] * dx, indexing="ij"), -1).reshape(-1, dx)
    ls = 1e-5 + softplus(sd["encoder.raw_length_scale"])
    ones = torch.ones(len(xc), 1, dtype=F64)
    z = sq_weights(grid, xc, ls) @ torch.cat([yc, ones], -1)  # [n^dx, dy + 1]
    z = mlp(z, sd, "grid_encoder", h["n_grid_encoder_hidden"] + 1)
    z = z.T.reshape(-1, *[n] * dx)  # channels first: [C, n, (n)]
    conv = F.conv1d if dx == 1 else F.conv2d
    for i in range(h["n_layers"]):
        w, b = sd[f"cnn.convs.{i}.weight"], sd[f"cnn.convs.{i}.bias"]
        z = conv(relu(z)[None], w, b, padding=w.shape[-1] // 2)[0]
    z = z.reshape(len(z), -1).T  # [n^dx, C], flattened as the grid
    zt = sq_weights(xt, grid, 1e-5 + softplus(sd["readout.raw_length_scale"])) @ z
    loc, raw = mlp(zt, sd, "decoder", h["n_decoder_hidden"] + 1).chunk(2, -1)
    return loc, softplus(raw) ** 0.5


REFERENCES = {"kr-code": kr_code_reference, "te-code": te_code_reference}


# --- helpers --------------------------------------------------------------------------------


def tiny(preset, dim_x=1, dim_y=2, **extra):
    """The preset at tiny sizes, float64, every parameter random, and random BatchNorm
    statistics (so the reference's reading of them is checked)."""
    model = tnpx.build_model("convcnp", dim_x, dim_y, preset=preset, **TINY[preset], **extra)
    model = randomise(model, 0.4)
    gen = torch.Generator().manual_seed(5)
    for name, buffer in model.named_buffers():
        if name.endswith("running_mean"):
            buffer.copy_(0.3 * torch.randn(buffer.shape, generator=gen, dtype=F64))
        elif name.endswith("running_var"):
            buffer.copy_(0.5 + torch.rand(buffer.shape, generator=gen, dtype=F64))
    return model


def predictions(model, xc, yc, xt, mask):
    with torch.no_grad():
        return model(xc, yc, xt, mask_c=mask), model.predict_streamed(
            xc, yc, xt, mask_c=mask, chunk_size=2
        )


# --- the presets compute the references' functions ------------------------------------------


@pytest.mark.parametrize("min_std", [0.0, 0.05])
def test_kr_code_equals_the_reference_forward(min_std):
    model = tiny("kr-code", min_std=min_std)
    xc, yc, xt, mask = masked_task(dim_x=1, dim_y=2)
    mean, std = reference_prediction(model, kr_code_reference, xc, yc, xt, mask)
    assert std.min() > min_std and std.max() < 1e3  # the check is not vacuous ...
    assert mean.std(1).min() > 1e-3  # ... and the targets see the context
    for p in predictions(model, xc, yc, xt, mask):
        assert_close(p.mean, mean, **TOL)
        assert_close(p.stddev, std, **TOL)


@pytest.mark.parametrize("dim_x", [1, 2])
def test_te_code_equals_the_reference_forward(dim_x):
    model = tiny("te-code", dim_x)
    xc, yc, xt, mask = masked_task(dim_x=dim_x, dim_y=2)
    xc, xt = 1.5 * xc, 1.5 * xt  # spread over the grid on [-4, 4]
    mean, std = reference_prediction(model, te_code_reference, xc, yc, xt, mask)
    assert std.min() > 0 and std.max() < 1e3
    assert mean.std(1).min() > 1e-3  # the targets see the context
    for p in predictions(model, xc, yc, xt, mask):
        assert_close(p.mean, mean, **TOL)
        assert_close(p.stddev, std, **TOL)


def test_kr_code_batch_norm_reads_its_running_statistics_in_training_too():
    """The code's ``ConvCNP`` calls ``conv_net(h)`` without ``training``, so its BatchNorms
    use the running statistics (never updated) in training steps as well: a training-mode
    forward is the eval-mode function and leaves the statistics as they were."""
    model = tiny("kr-code")
    xc, yc, xt, mask = masked_task(dim_x=1, dim_y=2)
    before = {k: v.clone() for k, v in model.named_buffers()}
    with torch.no_grad():
        evaluated = model.eval()(xc, yc, xt, mask_c=mask)
        trained = model.train()(xc, yc, xt, mask_c=mask)
    assert_close(trained.mean, evaluated.mean, atol=0, rtol=0)
    assert_close(trained.stddev, evaluated.stddev, atol=0, rtol=0)
    assert all(torch.equal(before[k], v) for k, v in model.named_buffers())
    # with batch statistics instead, a training step normalises by the batch and updates them
    batch = tiny("kr-code", batch_norm="batch").train()
    with torch.no_grad():
        moved = batch(xc, yc, xt, mask_c=mask)
    assert not torch.allclose(moved.mean, evaluated.mean, atol=1e-6)
    assert int(batch.cnn.blocks[0].norm1.num_batches_tracked) == 1


# --- sizes, choices, defaults ---------------------------------------------------------------


def test_parameter_counts_at_the_code_sizes():
    # dl4bi (dx = dy = 1, C = 128, kernel 19): encoder 2 length scales + Dense(2 -> 128) 384;
    # per ConvCNPBlock two BatchNorms (2 * 256), two depthwise convs (2 * (128 * 19 + 128)),
    # two pointwise convs (2 * (128 * 128 + 128)): 38,656, five blocks; read-out 129 length
    # scales + Dense(129 -> 128) 16,640; head 128 -> 128 x4 -> 2: 66,306.
    block = 2 * 256 + 2 * (128 * 19 + 128) + 2 * (128 * 128 + 128)
    kr = 2 + 384 + 5 * block + 129 + 16_640 + 4 * 16_512 + 258
    assert kr == 276_741
    assert count(tnpx.build_model("convcnp", preset="kr-code")) == kr
    # cambridge-mlg/tnp (dx = dy = 1, C = 32, kernel 9): encoder length scale 1 + z_encoder
    # 2 -> 32 -> 32 -> 32 (96 + 2 * 1,056); CNN 5 x (32 * 32 * 9 + 32); decoder length scale
    # 1 + z_decoder 32 -> 32 -> 32 -> 2 (2 * 1,056 + 66).
    te = 1 + 96 + 2 * 1_056 + 5 * (32 * 32 * 9 + 32) + 1 + 2 * 1_056 + 66
    assert te == 50_628
    assert count(tnpx.build_model("convcnp", preset="te-code")) == te


def test_presets_set_the_code_choices():
    kr = tnpx.build_model("convcnp", preset="kr-code")
    assert kr.grid_points == 320 and kr.hyper.grid == "fixed"
    assert kr.encoder.log_length_scale.shape == (2,)  # density and data channels
    assert kr.readout.log_length_scale.shape == (129,) and kr.readout.density
    assert_close(kr.encoder.length_scale, torch.full((2,), math.exp(-1.0)))
    assert kr.cnn.blocks[0].depthwise1.groups == 128 and kr.cnn.blocks[
        0
    ].depthwise1.kernel_size == (19,)
    assert kr.cnn.blocks[0].norm1.statistics == "frozen"
    assert kr.likelihood.transform == "affine_softplus" and kr.likelihood.min_std == 0.0
    te = tnpx.build_model("convcnp", preset="te-code")
    assert te.grid_points == 128 and te.encoder.density == "appended" and te.cnn.preactivate
    assert_close(te.encoder.length_scale, torch.full((1,), 0.1 + 1e-5))
    assert te.likelihood.transform == "sqrt_softplus" and te.likelihood.min_std == 0.0


def test_fixed_grids_are_not_translation_equivariant():
    """A fixed grid is not exact for any shift: a shift by a grid multiple that keeps the data
    well inside moves the prediction by edge effects only; leaving the grid moves it by O(1).
    The default (a grid per task) keeps its exact equivariance for grid multiples."""
    assert "fixed" in tnpx.models.REGISTRY["convcnp"].equivariance_note
    for preset in ("kr-code", "te-code"):
        torch.manual_seed(0)
        model = tnpx.build_model("convcnp", 1, 1, preset=preset, **TINY[preset]).double().eval()
        assert model.translation_equivariant is False
        g = torch.Generator().manual_seed(1)
        xc = torch.rand(2, 8, 1, generator=g, dtype=F64) - 0.5
        yc = torch.randn(2, 8, 1, generator=g, dtype=F64)
        xt = torch.rand(2, 5, 1, generator=g, dtype=F64) - 0.5
        step = (model.hyper.grid_max - model.hyper.grid_min) / (model.grid_points - 1)
        with torch.no_grad():
            base = model(xc, yc, xt)
            inside = model(xc + 2 * step, yc, xt + 2 * step)
            outside = model(xc + 20.0, yc, xt + 20.0)
        assert (inside.mean - base.mean).abs().max() < 0.5
        assert (outside.mean - base.mean).abs().max() > (inside.mean - base.mean).abs().max()
    assert tnpx.build_model("convcnp").translation_equivariant is True


@pytest.mark.parametrize("preset", list(REFERENCES))
def test_presets_save_and_load(tmp_path, preset):
    model = tiny(preset).float()
    loaded = assert_reloads_identically(model, tmp_path / "model.pt", 1, 2)
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in model.state_dict().items())


def test_defaults_are_unchanged():
    h = tnpx.build_model("convcnp").hyper
    assert (h.grid, h.cnn, h.setconv_scales, h.setconv_transform, h.density) == (
        "context", "unet", "per-dim", "exp", "normalised",
    )  # fmt: skip
    assert not h.readout_density and h.n_grid_encoder_hidden is None and h.n_readout_hidden is None
    model = tnpx.build_model("convcnp")
    assert model.grid_encoder is None and model.readout_map is None
    assert model.encoder.log_length_scale.shape == (1,)
    assert model.cnn.down[0].in_channels == 2 and model.decoder[0].in_features == 128


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"grid": "fixed"}, "grid_min < grid_max"),
        ({"grid": "fixed", "grid_min": 1.0, "grid_max": 0.0}, "grid_min < grid_max"),
        ({"grid": "fixed", "grid_min": 0.0, "grid_max": 1.0, "grid_points": 30}, "multiple of 4"),
        ({"setconv_scales": "per-axis"}, "setconv_scales must be"),
        ({"setconv_transform": "sigmoid"}, "length_scale_transform must be"),
        ({"density": "none"}, "density must be"),
        ({"cnn": "resnet", "batch_norm": "instance"}, "batch_norm must be"),
    ],
)
def test_bad_options_fail_clearly(kw, message):
    with pytest.raises(ValueError, match=message):
        tnpx.build_model("convcnp", 1, 1, n_layers=5, **kw)
