"""``convcnp`` ``te-code`` on a fixed pixel grid with fixed length scales computes the TE
code's gridded ConvCNP for images (TE-2's ConvCNP row, ``docs/fidelity.md``).

Reference: cambridge-mlg/tetnp @ 9f1f38d0a7360a2ee19485c2c1b0032f2ab8c46e
``experiments/configs/models/gridded-convcnp.yml`` on cambridge-mlg/tnp @
e2adb62406a2382b47c4a10f06b2d38c7aa97001 ``tnp/models/convcnp.py`` (``GriddedConvCNPEncoder``,
``GriddedConvCNP``), ``tnp/networks/cnn.py`` (``CNN``, ``ConvBlock``), ``tnp/models/tnp.py``
(``TNPDecoder``), ``tnp/likelihoods/gaussian.py``. The image is its own grid: no set
convolution, the context a pixel mask ``mc`` and the targets a pixel mask ``mt``.

tnpx reads a task's points, not an image, so the row puts a fixed grid on the canvas pixels
(``grid_min=-1, grid_max=1, grid_points=canvas``) with both length scales fixed
(``setconv_trainable=False``) at a tenth of a pixel: a neighbouring pixel's weight is
``exp(-50) ~ 2e-22``, so each grid point reads only its own pixel. The reference below is
written from the code's equations in float64, reading the tnpx model's ``state_dict()`` by name.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import tnpx
from tests.helpers.reference_ops import TOL, mlp, randomise, relu, softplus
from tests.helpers.reference_ops import count_parameters as count

F64 = torch.float64
CANVAS = 8  # a tiny canvas: 8 x 8 pixels on [-1, 1]^2


def pixel_grid_options(canvas: int) -> dict:
    """The fixed grid on the canvas pixels, length scales a tenth of a pixel and fixed."""
    return dict(
        grid_min=-1.0,
        grid_max=1.0,
        grid_points=canvas,
        init_length_scale=0.1 * 2 / (canvas - 1),
        setconv_trainable=False,
    )


def gridded_reference(sd, image, mc, mt, h):
    """``GriddedConvCNP`` on one image ``[n, n, dy]``, context mask ``mc [n, n]`` and target
    mask ``mt [n, n]``: ``z = z_encoder(cat[y * mc, mc])`` per pixel (the config's ``in_dim``
    is ``dy + 1``: one mask channel); ``CNN`` of ``ConvBlock`` s ``conv(relu(z))`` (bias,
    zero padding ``k // 2``); ``z`` at the target pixels (row-major, ``z_grid[mt]``);
    ``TNPDecoder`` MLP; ``HeteroscedasticNormalLikelihood``: ``softplus(raw) ** 0.5 + 0``."""
    m = mc[..., None].to(F64)
    z = mlp(torch.cat([image * m, m], -1), sd, "grid_encoder", h["n_grid_encoder_hidden"] + 1)
    z = z.permute(2, 0, 1)  # channels first [C, n, n]
    for i in range(h["n_layers"]):
        w, b = sd[f"cnn.convs.{i}.weight"], sd[f"cnn.convs.{i}.bias"]
        z = F.conv2d(relu(z)[None], w, b, padding=w.shape[-1] // 2)[0]
    zt = z.permute(1, 2, 0)[mt]  # [n_tgt, C]
    loc, raw = mlp(zt, sd, "decoder", h["n_decoder_hidden"] + 1).chunk(2, -1)
    return loc, softplus(raw) ** 0.5


def tiny(dim_y: int, **extra):
    options = {**pixel_grid_options(CANVAS), **extra}
    model = tnpx.build_model(
        "convcnp", 2, dim_y, preset="te-code", dim_model=6, n_layers=3, kernel_size=3, **options
    )
    return randomise(model, 0.4)


def image_tasks(dim_y: int, seed: int = 3):
    """Three images with 20, 7 and 1 context pixels (padded to 20, masked) and 10 target
    pixels each: the images ``[3, n, n, dy]``, pixel masks, and tnpx's ``xc, yc, xt, mask``."""
    gen = torch.Generator().manual_seed(seed)
    n = CANVAS
    images = torch.randn(3, n, n, dim_y, generator=gen, dtype=F64)
    axis = torch.linspace(-1, 1, n, dtype=F64)
    coords = torch.stack(torch.meshgrid(axis, axis, indexing="ij"), -1).reshape(-1, 2)
    xc = torch.zeros(3, 20, 2, dtype=F64)
    yc = torch.zeros(3, 20, dim_y, dtype=F64)
    mask = torch.zeros(3, 20, dtype=torch.bool)
    mc = torch.zeros(3, n, n, dtype=torch.bool)
    mt = torch.zeros(3, n, n, dtype=torch.bool)
    xt = torch.zeros(3, 10, 2, dtype=F64)
    for task, n_ctx in enumerate((20, 7, 1)):
        pixels = torch.randperm(n * n, generator=gen)
        ctx, tgt = pixels[:n_ctx], pixels[n_ctx : n_ctx + 10].sort().values  # row-major
        slots = torch.randperm(20, generator=gen)[:n_ctx]  # padding scattered
        xc[task, slots], yc[task, slots] = coords[ctx], images[task].reshape(-1, dim_y)[ctx]
        mask[task, slots] = True
        mc[task].view(-1)[ctx] = True
        mt[task].view(-1)[tgt] = True
        xt[task] = coords[tgt]
    return images, mc, mt, (xc, yc, xt, mask)


@pytest.mark.parametrize("dim_y", [1, 3])
def test_pixel_grid_te_code_equals_the_gridded_convcnp(dim_y):
    model = tiny(dim_y)
    images, mc, mt, (xc, yc, xt, mask) = image_tasks(dim_y)
    sd, h = model.state_dict(), vars(model.hyper)
    refs = [gridded_reference(sd, images[i], mc[i], mt[i], h) for i in range(3)]
    mean, std = torch.stack([m for m, _ in refs]), torch.stack([s for _, s in refs])
    assert std.min() > 0 and mean.std(1).min() > 1e-3  # not vacuous: targets differ
    with torch.no_grad():
        for p in (
            model(xc, yc, xt, mask_c=mask),
            model.predict_streamed(xc, yc, xt, mask_c=mask, chunk_size=3),
        ):
            assert_close(p.mean, mean, **TOL)
            assert_close(p.stddev, std, **TOL)


def test_trainable_length_scales_read_the_neighbours():
    """The same grid with trainable length scales that moved away from a tenth of a pixel is
    no longer the gridded model: the fixed scale is what makes it one."""
    model = tiny(1)
    images, mc, mt, (xc, yc, xt, mask) = image_tasks(1)
    wide = tiny(1, setconv_trainable=True)
    with torch.no_grad():
        wide.encoder.raw_length_scale.fill_(0.0)  # softplus(0) = 0.69: several pixels
        a, b = model(xc, yc, xt, mask_c=mask), wide(xc, yc, xt, mask_c=mask)
    assert (a.mean - b.mean).abs().max() > 1e-3


def test_fixed_length_scales_are_buffers_that_training_leaves_and_checkpoints_keep(tmp_path):
    model = tnpx.build_model("convcnp", 2, 1, preset="te-code", **pixel_grid_options(56))
    names = {n for n, _ in model.named_parameters()}
    assert not {"encoder.raw_length_scale", "readout.raw_length_scale"} & names
    scale = 1e-5 + 0.1 * 2 / 55
    assert_close(model.encoder.length_scale, torch.full((2,), scale))
    assert_close(model.readout.length_scale, torch.full((2,), scale))
    # the code's sizes (dx = 2, dy = 1, C = 32, kernel 9): z_encoder 2 -> 32 -> 32 -> 32
    # (96 + 2 * 1,056), CNN 5 x (32 * 32 * 81 + 32), decoder 32 -> 32 -> 32 -> 2 (2 * 1,056 + 66)
    assert count(model) == 96 + 2 * 1_056 + 5 * (32 * 32 * 81 + 32) + 2 * 1_056 + 66 == 419_266
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    xc, xt = 2 * torch.rand(2, 9, 2, generator=g) - 1, 2 * torch.rand(2, 4, 2, generator=g) - 1
    yc, yt = torch.randn(2, 9, 1, generator=g), torch.randn(2, 4, 1, generator=g)
    (-model(xc, yc, xt).log_prob(yt).mean()).backward()
    opt.step()
    assert_close(model.encoder.length_scale, torch.full((2,), scale))
    tnpx.save(model, tmp_path / "model.pt")
    loaded = tnpx.load(tmp_path / "model.pt")
    assert loaded.hyper.setconv_trainable is False
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in model.state_dict().items())
    # the default stays trainable
    assert "encoder.raw_length_scale" in dict(
        tnpx.build_model("convcnp", preset="te-code").named_parameters()
    )
