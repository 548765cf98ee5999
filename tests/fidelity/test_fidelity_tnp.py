"""The TNP presets compute the function of the authors' code (``docs/fidelity.md``).

Each reference forward pass is re-derived here, in float64, from the reference's equations:
explicit per-head softmax attention, explicit LayerNorm, explicit MLPs, reading the tnpx
model's ``state_dict()`` by name and never calling its layers. The references cannot take a
context mask (every task of their batches has the same context size), so each task is
computed on its own valid context points, which is what tnpx's key mask must reproduce.

- ``tnp`` ``te-code`` / ``tnp-kr-yml``: cambridge-mlg/tnp @ e2adb62406a2382b47c4a10f06b2d38c7aa97001
  (``experiments/configs/models/tnp.yml`` / ``tnp_kr.yml``);
- ``tnp-d`` ``tnpd-code``: tung-nd/TNP-pytorch @ 73df9225ab584b6148645851d82f96df518da78a
  (``regression/models/tnp.py``, ``tnpd.py``, ``regression/configs/gp/tnpd.yaml``).
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.reference_ops import (
    TOL,
    flag,
    layer_norm,
    masked_task,
    mlp,
    randomise,
    reference_prediction,
    softmax_attention,
    softplus,
)
from tests.helpers.reference_ops import count_parameters as count
from tnpx.likelihoods import HeteroscedasticGaussian
from tnpx.models.registry import PRESETS

TINY = dict(dim_model=8, n_layers=2, n_heads=2, dim_head=4, dim_ff=12)


# --- the three references -------------------------------------------------------------------


def te_code_reference(sd, xc, yc, xt, h):
    """cambridge-mlg/tnp tnp.yml: TNPEncoder (tokens [x, y, 0] / [x, 0, 1], xy_encoder MLP),
    TNPTransformerEncoder with separate pre-norm MultiHeadSelfAttentionLayer and
    MultiHeadCrossAttentionLayer per layer, targets attending to the context after the layer's
    self-attention; TNPDecoder MLP; HeteroscedasticNormalLikelihood(min_noise=0)."""
    n_embed = h["n_embed_hidden"] + 1
    zc = mlp(torch.cat([xc, yc, flag(len(xc), 0, xc)], -1), sd, "embed.mlp", n_embed)
    yt = torch.zeros(len(xt), yc.shape[-1], dtype=xt.dtype)
    zt = mlp(torch.cat([xt, yt, flag(len(xt), 1, xt)], -1), sd, "embed.mlp", n_embed)
    n_heads = h["n_heads"]
    for layer in range(h["n_layers"]):
        sa, ca = f"stack.blocks.{layer}", f"stack.target_blocks.{layer}"
        # MultiHeadSelfAttentionLayer, norm_first: x + attn(norm1(x)); x + ff(norm2(x))
        normed = layer_norm(zc, sd, f"{sa}.norm_attn")
        zc = zc + softmax_attention(normed, normed, sd, f"{sa}.attn", n_heads, qkv_bias=False)
        zc = zc + mlp(layer_norm(zc, sd, f"{sa}.norm_ff"), sd, f"{sa}.ff", 2)
        # MultiHeadCrossAttentionLayer, norm_first: xq + attn(norm1(xq), norm1(xkv)); ...
        q, kv = layer_norm(zt, sd, f"{ca}.norm_attn"), layer_norm(zc, sd, f"{ca}.norm_attn")
        zt = zt + softmax_attention(q, kv, sd, f"{ca}.attn", n_heads, qkv_bias=False)
        zt = zt + mlp(layer_norm(zt, sd, f"{ca}.norm_ff"), sd, f"{ca}.ff", 2)
    raw = mlp(zt, sd, "decoder", h["n_decoder_hidden"] + 1)
    loc, log_var = raw.chunk(2, -1)
    return loc, softplus(log_var) ** 0.5 + 0.0


def tnp_kr_yml_reference(sd, xc, yc, xt, h):
    """cambridge-mlg/tnp tnp_kr.yml: as tnp.yml, but TNPKRTransformerEncoder of pre-norm
    MultiHeadKRAttentionLayer: queries [norm1(xt); norm1(xc)] attend to keys and values
    norm1(xc) with one set of weights; both streams get residual, norm2 and ff."""
    n_embed = h["n_embed_hidden"] + 1
    zc = mlp(torch.cat([xc, yc, flag(len(xc), 0, xc)], -1), sd, "embed.mlp", n_embed)
    yt = torch.zeros(len(xt), yc.shape[-1], dtype=xt.dtype)
    zt = mlp(torch.cat([xt, yt, flag(len(xt), 1, xt)], -1), sd, "embed.mlp", n_embed)
    for layer in range(h["n_layers"]):
        b = f"stack.blocks.{layer}"
        q, kv = layer_norm(zt, sd, f"{b}.norm_attn"), layer_norm(zc, sd, f"{b}.norm_attn")
        both = softmax_attention(torch.cat([q, kv]), kv, sd, f"{b}.attn", h["n_heads"], False)
        zt, zc = zt + both[: len(zt)], zc + both[len(zt) :]
        zt = zt + mlp(layer_norm(zt, sd, f"{b}.norm_ff"), sd, f"{b}.ff", 2)
        zc = zc + mlp(layer_norm(zc, sd, f"{b}.norm_ff"), sd, f"{b}.ff", 2)
    raw = mlp(zt, sd, "decoder", h["n_decoder_hidden"] + 1)
    loc, log_var = raw.chunk(2, -1)
    return loc, softplus(log_var) ** 0.5 + 0.0


def tnpd_code_reference(sd, xc, yc, xt, h):
    """tung-nd/TNP-pytorch TNPD: embedder build_mlp([x, y] / [x, 0]); nn.TransformerEncoder of
    post-norm nn.TransformerEncoderLayer over [context; targets] with a mask that lets every
    token attend to the context only: x = norm1(x + sa(x)); x = norm2(x + ff(x)); predictor
    Linear(d, dim_ff), ReLU, Linear(dim_ff, 2 dim_y); std = exp(raw)."""
    n_embed = h["n_embed_hidden"] + 1
    yt = torch.zeros(len(xt), yc.shape[-1], dtype=xt.dtype)
    z = mlp(torch.cat([torch.cat([xc, yc], -1), torch.cat([xt, yt], -1)]), sd, "embed.mlp", n_embed)
    n_ctx = len(xc)
    for layer in range(h["n_layers"]):
        b = f"stack.blocks.{layer}"
        z = layer_norm(z + softmax_attention(z, z[:n_ctx], sd, f"{b}.attn", h["n_heads"]),
                       sd, f"{b}.norm_attn")  # fmt: skip
        z = layer_norm(z + mlp(z, sd, f"{b}.ff", 2), sd, f"{b}.norm_ff")
    raw = mlp(z[n_ctx:], sd, "decoder", h["n_decoder_hidden"] + 1)
    mean, log_std = raw.chunk(2, -1)
    return mean, torch.exp(log_std)


REFERENCES = {
    ("tnp", "te-code"): te_code_reference,
    ("tnp", "tnp-kr-yml"): tnp_kr_yml_reference,
    ("tnp-d", "tnpd-code"): tnpd_code_reference,
}


# --- helpers --------------------------------------------------------------------------------


def tiny_preset(name, preset, dim_x=2, dim_y=2, **extra):
    """The preset at tiny sizes, float64, every parameter (LayerNorms included) random."""
    sizes = dict(TINY)
    if preset == "tnpd-code":
        sizes.update(dim_head=None, dim_decoder_hidden=TINY["dim_ff"])
    return randomise(tnpx.build_model(name, dim_x, dim_y, preset=preset, **sizes, **extra))


# --- the presets compute the references' functions --------------------------------------------


@pytest.mark.parametrize("name, preset", list(REFERENCES), ids=lambda v: str(v))
def test_preset_equals_the_reference_forward(name, preset):
    model = tiny_preset(name, preset)
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
        streamed = model.predict_streamed(xc, yc, xt, mask_c=mask, chunk_size=2)
    mean, std = reference_prediction(model, REFERENCES[name, preset], xc, yc, xt, mask)
    assert_close(pred.mean, mean, **TOL)
    assert_close(pred.stddev, std, **TOL)
    assert_close(streamed.mean, mean, **TOL)
    assert_close(streamed.stddev, std, **TOL)


def test_tnpd_code_through_torch_transformer_encoder():
    """The TNP-D reference builds its stack from torch's own layer; with tnpx's weights
    copied into ``nn.TransformerEncoderLayer`` (post-norm, ReLU, dropout 0) it gives the same
    target tokens as the tnp-d preset's stack."""
    model = tiny_preset("tnp-d", "tnpd-code")
    h = model.hyper
    xc, yc, xt, _ = masked_task()
    layers = []
    for block in model.stack.blocks:
        layer = torch.nn.TransformerEncoderLayer(
            h.dim_model, h.n_heads, h.dim_ff, 0.0, batch_first=True, dtype=torch.float64
        )
        a = block.attn
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(
                torch.cat([a.to_q.weight, a.to_k.weight, a.to_v.weight])
            )
            layer.self_attn.in_proj_bias.copy_(torch.cat([a.to_q.bias, a.to_k.bias, a.to_v.bias]))
            layer.self_attn.out_proj.load_state_dict(a.to_out.state_dict())
            layer.linear1.load_state_dict(block.ff[0].state_dict())
            layer.linear2.load_state_dict(block.ff[2].state_dict())
            layer.norm1.load_state_dict(block.norm_attn.state_dict())
            layer.norm2.load_state_dict(block.norm_ff.state_dict())
        layers.append(layer.eval())
    n_ctx, n_tgt = xc.shape[1], xt.shape[1]
    attn_mask = torch.zeros(n_ctx + n_tgt, n_ctx + n_tgt, dtype=torch.float64)
    attn_mask[:, n_ctx:] = float("-inf")
    with torch.no_grad():
        z = torch.cat([model.embed.context(xc, yc), model.embed.targets(xt)], 1)
        for layer in layers:
            z = layer(z, src_mask=attn_mask)
        ours = model.stack(model.embed.context(xc, yc), model.embed.targets(xt))
    assert_close(ours, z[:, n_ctx:], **TOL)


def test_tnpd_code_stream_form_is_the_masked_form():
    """``tnp`` with the same options and weights computes ``tnp-d``'s function per layer
    (post-norm keeps the two forms equal: targets read the layer's input context)."""
    masked = tiny_preset("tnp-d", "tnpd-code")
    options = {**PRESETS["tnp-d"]["tnpd-code"], **TINY, "dim_head": None, "dim_decoder_hidden": 12}
    streams = tnpx.build_model("tnp", 2, 2, **options).double().eval()
    streams.load_state_dict(masked.state_dict())
    assert masked.uses_masked_joint and not streams.uses_masked_joint
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        a, b = masked(xc, yc, xt, mask_c=mask), streams(xc, yc, xt, mask_c=mask)
    assert_close(a.mean, b.mean, **TOL)
    assert_close(a.stddev, b.stddev, **TOL)


def test_tnp_d_uses_the_stream_form_where_the_masked_form_differs():
    model = tnpx.build_model("tnp-d", **TINY, share_weights=False, targets_read="updated")
    assert not model.uses_masked_joint
    assert tnpx.build_model("tnp-d", **TINY).uses_masked_joint


# --- sizes and defaults ---------------------------------------------------------------------


def test_parameter_counts_at_the_reference_sizes():
    # TE sizes, dim_x = dim_y = 1. Per attention layer of cambridge-mlg/tnp: q, k, v without
    # bias 3 * 128 * 128, out 128 * 128 + 128, FF 2 * (128 * 128 + 128), two LayerNorms 512:
    # 99,200. xy_encoder 3 -> 128 -> 128 -> 128: 33,536; z_decoder 128 -> 128 -> 128 -> 2: 33,282.
    assert count(tnpx.build_model("tnp", preset="te-code")) == 10 * 99_200 + 33_536 + 33_282
    assert count(tnpx.build_model("tnp", preset="te-code")) == 1_058_818
    assert count(tnpx.build_model("tnp", preset="tnp-kr-yml")) == 5 * 99_200 + 33_536 + 33_282
    # tnpx's default: q, k, v with biases (+384 per layer), one block per layer.
    assert count(tnpx.build_model("tnp")) == 564_738
    assert count(tnpx.build_model("tnp-d")) == 564_738
    # tung-nd TNP-D, regression/configs/gp/tnpd.yaml: embedder 2 -> 64 x3 -> 64: 12,672;
    # nn.TransformerEncoderLayer(64, 4, 128): 33,472 each; predictor 64 -> 128 -> 2: 8,578.
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, 0.0, batch_first=True)
    assert count(layer) == 33_472
    assert count(tnpx.build_model("tnp-d", preset="tnpd-code")) == 12_672 + 6 * 33_472 + 8_578


def test_presets_fix_the_structure():
    te = tnpx.build_model("tnp", preset="te-code", **TINY)
    assert not te.stack.share_weights and te.stack.targets_read == "updated"
    assert te.embed.kind == "target-flagged" and te.stack.blocks[0].attn.to_q.bias is None
    assert te.likelihood.transform == "sqrt_softplus" and te.likelihood.min_std == 0.0
    d = tnpx.build_model("tnp-d", preset="tnpd-code")
    assert not d.stack.blocks[0].norm_first and d.embed.kind == "plain"
    assert d.hyper.dim_head == 16 and d.decoder[0].out_features == 128
    # sizes from a config replace the preset's; dim_head follows d_model / nhead
    wide = tnpx.build_model("tnp-d", preset="tnpd-code", dim_model=128, n_heads=8)
    assert wide.hyper.dim_head == 16 and wide.stack.blocks[0].attn.inner == 128


def test_defaults_are_unchanged():
    for name in ("tnp", "tnp-d"):
        model = tnpx.build_model(name)
        h = model.hyper
        assert (h.share_weights, h.targets_read, h.norm, h.tokens, h.qkv_bias) == (
            True, "input", "pre", "flagged", True,
        )  # fmt: skip
        assert model.stack.blocks[0].norm_first and model.embed.kind == "flagged"
        assert h.scale_transform == "softplus" and h.min_std == 1e-3
    te = tnpx.build_model("te-tnp")
    assert not te.stack.share_weights and te.stack.targets_read == "updated"


def test_dim_head_none_needs_divisible_heads():
    with pytest.raises(ValueError, match="dim_head=None"):
        tnpx.build_model("tnp", dim_model=10, n_heads=4, dim_head=None)


def test_te_tnp_update_order_is_the_old_name_of_targets_read():
    for old, new in (("sequential", "updated"), ("parallel", "input")):
        model = tnpx.build_model("te-tnp", **TINY, update_order=old)
        assert model.stack.targets_read == new
        assert model.hyper.targets_read == new and model.hyper.update_order is None
        rebuilt = tnpx.build_model("te-tnp", **model.config["hyper"])
        assert rebuilt.stack.targets_read == new
    with pytest.raises(ValueError, match="contradicts"):
        tnpx.build_model("te-tnp", update_order="sequential", targets_read="input")


# --- heads ----------------------------------------------------------------------------------


def test_scale_transforms():
    raw = torch.tensor([[[0.3, -1.2, 0.7, 2.0]]], dtype=torch.float64)
    mean, r = raw.split(2, -1)
    cases = {
        ("softplus", 0.1): (softplus(r) + 0.01).sqrt(),
        ("exp", 0.1): torch.exp(r / 2).clamp_min(0.1),
        ("sqrt_softplus", 0.1): softplus(r).sqrt() + 0.1,
        ("exp_raw", 0.0): torch.exp(r),
        ("affine_softplus", 0.05): 0.05 + 0.95 * softplus(r),
    }
    for (transform, min_std), std in cases.items():
        pred = HeteroscedasticGaussian(2, min_std, transform)(raw)
        assert_close(pred.mean, mean, **TOL)
        assert_close(pred.stddev, std, **TOL)
    with pytest.raises(ValueError, match="min_std < 1"):
        HeteroscedasticGaussian(1, 1.0, "affine_softplus")


@pytest.mark.parametrize("name, preset", list(REFERENCES), ids=lambda v: str(v))
def test_preset_models_save_and_load(tmp_path, name, preset):
    model = tiny_preset(name, preset).float()
    path = tmp_path / "model.pt"
    tnpx.save(model, path)
    loaded = tnpx.load(path)
    assert loaded.hyper == model.hyper
    xc, yc, xt, mask = (t.float() if t.is_floating_point() else t for t in masked_task())
    with torch.no_grad():
        a, b = model(xc, yc, xt, mask_c=mask), loaded(xc, yc, xt, mask_c=mask)
    assert_close(a.mean, b.mean, atol=0, rtol=0)
    assert_close(a.stddev, b.stddev, atol=0, rtol=0)
