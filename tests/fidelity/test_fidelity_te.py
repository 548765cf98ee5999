"""The TE paper's models compute the function of its authors' code (``docs/fidelity.md``).

Each reference forward pass is re-derived here, in float64, from the code's equations:
explicit per-head attention (TE attention: logits from an MLP of ``[x_n - x_m, q.k / sqrt(d)]``),
explicit LayerNorm and MLPs, reading the tnpx model's ``state_dict()`` by name and never calling
its layers. The code ignores context masks (every task of its batches has the same context
size), so each task is computed on its own valid context points, which is what tnpx's key mask
must reproduce.

- ``te-tnp`` ``released-code``, ``te-pt-tnp`` ``released-code``: cambridge-mlg/tetnp @
  9f1f38d0a7360a2ee19485c2c1b0032f2ab8c46e (``experiments/configs/models/tetnp.yml``,
  ``teist.yml``; ``tetnp/networks/{teattention,teattention_layers,tetransformer,tept_init}.py``,
  ``tetnp/models/tetnp.py``);
- ``pt-tnp-ist``, ``pt-tnp-perceiver`` ``te-code``: cambridge-mlg/tnp @
  e2adb62406a2382b47c4a10f06b2d38c7aa97001 (``experiments/configs/models/ist.yml``,
  ``lbanp.yml``; ``tnp/networks/transformer.py``, ``attention_layers.py``, ``attention.py``,
  ``tnp/models/tnp.py``, ``tnp/likelihoods/gaussian.py``).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.reference_ops import (
    TOL,
    flag,
    head_columns,
    layer_norm,
    linear,
    masked_task,
    mlp,
    randomise,
    reference_prediction,
    softmax,
    softmax_attention,
    softplus,
)
from tests.helpers.reference_ops import count_parameters as count

TINY = dict(dim_model=8, n_layers=2, n_heads=2, dim_head=4, dim_ff=12)
TINY_PT = dict(TINY, n_pseudo=3)


# --- the code's layers, written out -----------------------------------------------------------


def te_attention(zq, zk, xq, xk, sd, prefix, n_heads, phi):
    """tetnp BaseMultiHeadTEAttention.propagate for one task (zq ``[n_q, d]``, zk = zv
    ``[n_k, d]``): diff = xq_n - xk_m; per-head dots q.k * head_dim^-1/2 with q, k, v projected
    without bias; logits = kernel(cat(diff, dots)); softmax over keys; to_out with bias. With a
    phi: xq + mean over keys of diff * phi(attn) (TE Eq. 10)."""
    q = linear(zq, sd, f"{prefix}.to_q", bias=False)
    k = linear(zk, sd, f"{prefix}.to_k", bias=False)
    v = linear(zk, sd, f"{prefix}.to_v", bias=False)
    diff = xq[:, None, :] - xk[None, :, :]  # [n_q, n_k, dim_x]
    dots = []
    for h in range(n_heads):
        qh, kh = head_columns(q, h, n_heads), head_columns(k, h, n_heads)
        dots.append(qh @ kh.T / math.sqrt(qh.shape[-1]))
    logits = mlp(torch.cat([diff, torch.stack(dots, -1)], -1), sd, f"{prefix}.logits.rho", 3)
    attn = torch.stack([softmax(logits[..., h]) for h in range(n_heads)], -1)  # [n_q, n_k, H]
    out = torch.cat([attn[..., h] @ head_columns(v, h, n_heads) for h in range(n_heads)], -1)
    if phi:
        xq = xq + (diff * mlp(attn, sd, f"{prefix}.phi", 3)).mean(1)
    return linear(out, sd, f"{prefix}.to_out"), xq


def te_layer(zq, zk, xq, xk, sd, prefix, h):
    """tetnp MultiHeadCrossTEAttentionLayer, norm_first: zq + attn(norm1(zq), norm1(zk));
    zq + ff(norm2(zq)). (MultiHeadSelfTEAttentionLayer is the same with zk = zq.)"""
    q, k = layer_norm(zq, sd, f"{prefix}.norm_attn"), layer_norm(zk, sd, f"{prefix}.norm_attn")
    update, xq = te_attention(q, k, xq, xk, sd, f"{prefix}.attn", h["n_heads"],
                              h["location_update"])  # fmt: skip
    zq = zq + update
    return zq + mlp(layer_norm(zq, sd, f"{prefix}.norm_ff"), sd, f"{prefix}.ff", 2), xq


def cross_layer(zq, zkv, sd, prefix, h):
    """tnp MultiHeadCrossAttentionLayer, norm_first (MultiHeadSelfAttentionLayer: zkv = zq)."""
    q, kv = layer_norm(zq, sd, f"{prefix}.norm_attn"), layer_norm(zkv, sd, f"{prefix}.norm_attn")
    zq = zq + softmax_attention(q, kv, sd, f"{prefix}.attn", h["n_heads"], qkv_bias=False)
    return zq + mlp(layer_norm(zq, sd, f"{prefix}.norm_ff"), sd, f"{prefix}.ff", 2)


def y_tokens(sd, yc, n_tgt, h):
    """tetnp TETNPEncoder: y_encoder([yc, 0]), y_encoder([0, 1]) (preprocess_observations)."""
    n_embed = h["n_embed_hidden"] + 1
    zc = mlp(torch.cat([yc, flag(len(yc), 0, yc)], -1), sd, "embed.mlp", n_embed)
    yt = torch.zeros(n_tgt, yc.shape[-1], dtype=yc.dtype)
    zt = mlp(torch.cat([yt, flag(n_tgt, 1, yc)], -1), sd, "embed.mlp", n_embed)
    return zc, zt


def xy_tokens(sd, xc, yc, xt, h):
    """tnp TNPEncoder: xy_encoder([xc, yc, 0]), xy_encoder([xt, 0, 1])."""
    n_embed = h["n_embed_hidden"] + 1
    zc = mlp(torch.cat([xc, yc, flag(len(xc), 0, xc)], -1), sd, "embed.mlp", n_embed)
    yt = torch.zeros(len(xt), yc.shape[-1], dtype=xt.dtype)
    zt = mlp(torch.cat([xt, yt, flag(len(xt), 1, xt)], -1), sd, "embed.mlp", n_embed)
    return zc, zt


def head(sd, zt, h):
    """TNPDecoder's z_decoder, then HeteroscedasticNormalLikelihood(min_noise=0)."""
    loc, raw = mlp(zt, sd, "decoder", h["n_decoder_hidden"] + 1).chunk(2, -1)
    return loc, softplus(raw) ** 0.5 + 0.0


# --- the references -----------------------------------------------------------------------------


def te_tnp_reference(sd, xc, yc, xt, h):
    """tetnp TETNP (tetnp.yml): TETNPTransformerEncoder, per layer ``zc, xc = mhsa(zc, xc)``
    then ``zt, xt = mhca(zt, zc, xt, xc)``; with no mhsa_layer the context reuses the mhca
    layer (shared weights). Separate weights: the code's mhsa_layer argument."""
    zc, zt = y_tokens(sd, yc, len(xt), h)
    for layer in range(h["n_layers"]):
        ctx = f"stack.blocks.{layer}"
        tgt = ctx if h["share_weights"] else f"stack.target_blocks.{layer}"
        zc, xc = te_layer(zc, zc, xc, xc, sd, ctx, h)
        zt, xt = te_layer(zt, zc, xt, xc, sd, tgt, h)
    return head(sd, zt, h)


def pseudo_location_init(sd, u, zc, xc, h):
    """tetnp PseudoTokenInitialiser (TE Eq. 11): per head SDPA(q = to_q(u), k = to_k(zc),
    v = xc) with scale head_dim^-1/2, then the heads weighted by softmax(raw_head_weights)."""
    n_heads = h["n_heads"]
    q = linear(u, sd, "loc_init.to_q", bias=False)
    k = linear(zc, sd, "loc_init.to_k", bias=False)
    weights = softmax(sd["loc_init.head_logits"])
    offset = 0
    for i in range(n_heads):
        qh, kh = head_columns(q, i, n_heads), head_columns(k, i, n_heads)
        offset = offset + weights[i] * softmax(qh @ kh.T / math.sqrt(qh.shape[-1])) @ xc
    return offset


def te_pt_tnp_reference(sd, xc, yc, xt, h):
    """tetnp TEISTEncoder (teist.yml): latents and latent_inputs; without a
    pseudo_token_initialiser ``xq + mean(xc)``; per layer ``zq, xq = ctoq(zq, zc, xq, xc)``,
    ``zc, xc = qtoc(zc, zq, xc, xq)``, ``zt, xt = qtot(zt, zq, xt, xq)``."""
    zc, zt = y_tokens(sd, yc, len(xt), h)
    u = sd["pseudo"]
    if h["pseudo_init"] == "mean":
        v = sd["pseudo_loc"] + xc.mean(0, keepdim=True)
    else:
        v = sd["pseudo_loc"] + pseudo_location_init(sd, u, zc, xc, h)
    for layer in range(h["n_layers"]):
        p = f"layers.{layer}"
        u, v = te_layer(u, zc, v, xc, sd, f"{p}.0", h)
        zc, xc = te_layer(zc, u, xc, v, sd, f"{p}.1", h)
        zt, xt = te_layer(zt, u, xt, v, sd, f"{p}.2", h)
    return head(sd, zt, h)


def ist_reference(sd, xc, yc, xt, h):
    """tnp ISTEncoder (ist.yml): per layer i ``xq = ctoq(xq, xc)``, ``xt = qtot(xt, xq)``, and
    for i < num_layers - 1 ``xc = qtoc(xc, xq)``."""
    zc, zt = xy_tokens(sd, xc, yc, xt, h)
    u = sd["pseudo"]
    for layer in range(h["n_layers"]):
        p = f"layers.{layer}"
        u = cross_layer(u, zc, sd, f"{p}.0", h)
        zt = cross_layer(zt, u, sd, f"{p}.2", h)
        if layer < h["n_layers"] - 1:
            zc = cross_layer(zc, u, sd, f"{p}.1", h)
    return head(sd, zt, h)


def perceiver_reference(sd, xc, yc, xt, h):
    """tnp PerceiverEncoder (lbanp.yml): per layer ``xq = ctoq(xq, xc)``, ``xq = mhsa(xq)``,
    ``xt = qtot(xt, xq)``."""
    zc, zt = xy_tokens(sd, xc, yc, xt, h)
    u = sd["pseudo"]
    for layer in range(h["n_layers"]):
        p = f"layers.{layer}"
        u = cross_layer(u, zc, sd, f"{p}.0", h)
        u = cross_layer(u, u, sd, f"{p}.1", h)
        zt = cross_layer(zt, u, sd, f"{p}.2", h)
    return head(sd, zt, h)


# (model, preset, options beyond the preset) -> reference. The second and fourth rows are the
# code's classes in constructions no config uses: TETNPTransformerEncoder given an mhsa_layer
# and the TE attention given a phi (the paper's TE-TNP), and TEISTEncoder given tept_init's
# PseudoTokenInitialiser (Eq. 11) and a phi; the phi MLP (H -> two hidden layers -> dim_x) is
# tnpx's, since the code leaves it to the caller.
CASES = {
    ("te-tnp", "released-code", ()): te_tnp_reference,
    ("te-tnp", "released-code", (("share_weights", False), ("location_update", True))): (
        te_tnp_reference
    ),
    ("te-pt-tnp", "released-code", ()): te_pt_tnp_reference,
    ("te-pt-tnp", "released-code", (("pseudo_init", "attention"), ("location_update", True))): (
        te_pt_tnp_reference
    ),
    ("pt-tnp-ist", "te-code", ()): ist_reference,
    ("pt-tnp-perceiver", "te-code", ()): perceiver_reference,
}


def tiny(name, preset, options=(), **extra):
    sizes = TINY_PT if "pt-tnp" in name else TINY
    model = tnpx.build_model(name, 2, 2, preset=preset, **sizes, **dict(options), **extra)
    return randomise(model)


@pytest.mark.parametrize("name, preset, options", list(CASES), ids=lambda v: str(v))
def test_preset_equals_the_reference_forward(name, preset, options):
    model = tiny(name, preset, options)
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
        streamed = model.predict_streamed(xc, yc, xt, mask_c=mask, chunk_size=2)
    mean, std = reference_prediction(model, CASES[name, preset, options], xc, yc, xt, mask)
    assert_close(pred.mean, mean, **TOL)
    assert_close(pred.stddev, std, **TOL)
    assert_close(streamed.mean, mean, **TOL)
    assert_close(streamed.stddev, std, **TOL)


def test_the_reference_sees_the_choices():
    """The TE code's choices each change the function (so the test above can fail): rho's
    input order, the head and the location update."""
    xc, yc, xt, mask = masked_task()
    base = tiny("te-tnp", "released-code")
    with torch.no_grad():
        ref = reference_prediction(base, te_tnp_reference, xc, yc, xt, mask)[0]
        for change in (dict(rho_order="dots-first"), dict(location_update=True)):
            other = tiny("te-tnp", "released-code", **change)
            other.load_state_dict(base.state_dict(), strict=not change.get("location_update"))
            assert not torch.allclose(other(xc, yc, xt, mask_c=mask).mean, ref)
        default_head = tiny("te-tnp", "released-code", scale_transform="softplus", min_std=0.1)
        default_head.load_state_dict(base.state_dict())
        std = reference_prediction(base, te_tnp_reference, xc, yc, xt, mask)[1]
        assert not torch.allclose(default_head(xc, yc, xt, mask_c=mask).stddev, std)


# --- sizes and structure ------------------------------------------------------------------------


def test_parameter_counts_at_the_reference_sizes():
    # dim_x = dim_y = 1, the configs' params (E 128, 8 heads of 16, 5 layers, 32 latents).
    # TE layer (tetnp MultiHeadCrossTEAttentionLayer): q, k, v 3 * 128 * 128 without bias,
    # to_out 128 * 128 + 128, kernel MLP (8 + 1) -> 128 -> 128 -> 8: 1,280 + 16,512 + 1,032,
    # FF 2 * (128 * 128 + 128), two LayerNorms 512: 118,024. y_encoder 2 -> 128 -> 128 -> 128:
    # 33,408; z_decoder 128 -> 128 -> 128 -> 2: 33,282.
    te_layer_params, y_encoder, z_decoder = 118_024, 33_408, 33_282
    # tetnp.yml: 5 shared layers.
    te = tnpx.build_model("te-tnp", preset="released-code")
    assert count(te) == 5 * te_layer_params + y_encoder + z_decoder == 656_810
    # teist.yml: 3 * 5 layers, latent_tokens 32 x 128, latent_inputs 32 x 1.
    te_pt = tnpx.build_model("te-pt-tnp", preset="released-code")
    assert count(te_pt) == 15 * te_layer_params + 4_096 + 32 + y_encoder + z_decoder
    # tnp attention layer: q, k, v without bias, to_out, FF, two LayerNorms: 99,200;
    # xy_encoder 3 -> 128 -> 128 -> 128: 33,536; ISTEncoder holds 5 + 4 + 5 layers,
    # PerceiverEncoder 3 * 5; latents 32 x 128.
    layer, xy_encoder = 99_200, 33_536
    ist = tnpx.build_model("pt-tnp-ist", preset="te-code")
    assert count(ist) == 14 * layer + 4_096 + xy_encoder + z_decoder == 1_459_714
    perceiver = tnpx.build_model("pt-tnp-perceiver", preset="te-code")
    assert count(perceiver) == 15 * layer + 4_096 + xy_encoder + z_decoder == 1_558_914


def test_presets_fix_the_structure():
    te = tnpx.build_model("te-tnp", preset="released-code", **TINY)
    attn = te.stack.blocks[0].attn
    assert te.stack.share_weights and te.stack.targets_read == "updated"
    assert attn.to_q.bias is None and attn.phi is None and attn.logits.rho_order == "rel-first"
    assert te.likelihood.transform == "sqrt_softplus" and te.likelihood.min_std == 0.0
    te_pt = tnpx.build_model("te-pt-tnp", preset="released-code", **TINY_PT)
    assert te_pt.loc_init is None and te_pt.layers[0][0].attn.phi is None
    ist = tnpx.build_model("pt-tnp-ist", preset="te-code", **TINY_PT)
    assert isinstance(ist.layers[-1][1], torch.nn.Identity) and ist.embed.kind == "target-flagged"
    assert ist.layers[0][0].attn.to_q.bias is None
    with pytest.raises(ValueError, match="IST"):
        tnpx.build_model("pt-tnp-perceiver", final_context_block=False)
    with pytest.raises(ValueError, match="tokens"):
        tnpx.build_model("te-pt-tnp", tokens="flagged")
    with pytest.raises(ValueError, match="rho_order"):
        tnpx.build_model("te-tnp", rho_order="sideways")


def test_defaults_are_unchanged():
    for name in ("te-tnp", "te-pt-tnp"):
        h = tnpx.build_model(name).hyper
        assert (h.qkv_bias, h.rho_order, h.location_update) == (True, "dots-first", True)
        assert (h.scale_transform, h.min_std) == ("softplus", 1e-3)
    te = tnpx.build_model("te-tnp")
    assert not te.stack.share_weights and te.stack.blocks[0].attn.to_q.bias is not None
    assert tnpx.build_model("te-pt-tnp").hyper.pseudo_init == "attention"
    for name in ("pt-tnp-ist", "pt-tnp-perceiver"):
        model = tnpx.build_model(name)
        h = model.hyper
        assert (h.tokens, h.qkv_bias, h.final_context_block) == ("flagged", True, True)
        assert all(len(list(layer[1].parameters())) > 0 for layer in model.layers)


@pytest.mark.parametrize("name, preset", [(n, p) for n, p, o in CASES if not o])
def test_preset_models_save_and_load(tmp_path, name, preset):
    model = tiny(name, preset).float()
    path = tmp_path / "model.pt"
    tnpx.save(model, path)
    loaded = tnpx.load(path)
    assert loaded.hyper == model.hyper
    xc, yc, xt, mask = (t.float() if t.is_floating_point() else t for t in masked_task())
    with torch.no_grad():
        a, b = model(xc, yc, xt, mask_c=mask), loaded(xc, yc, xt, mask_c=mask)
    assert_close(a.mean, b.mean, atol=0, rtol=0)
    assert_close(a.stddev, b.stddev, atol=0, rtol=0)


# --- RCNP: the TE paper's text (no code of it is public; docs/fidelity.md) -------------------


def rcnp_reference(sd, xc, yc, xt, h):
    """TE App. F.1, Eq. 38: e(x_t) = mean_n phi([x_t - x_c,n, y_c,n]), phi an MLP of five
    hidden layers of D_z; tnpx's decoder MLP from e alone and its default head
    ``sqrt(softplus(raw) + min_std^2)``."""
    pairs = torch.cat(
        [
            xt[:, None, :] - xc[None, :, :],
            yc[None, :, :].expand(len(xt), -1, -1),
        ],
        -1,
    )  # [n_tgt, n_ctx, dim_x + dim_y]
    e = mlp(pairs, sd, "phi", h["n_encoder_hidden"] + 1).mean(1)
    loc, raw = mlp(e, sd, "decoder", h["n_decoder_hidden"] + 1).chunk(2, -1)
    return loc, (softplus(raw) + h["min_std"] ** 2).sqrt()


def test_rcnp_equals_the_te_paper_equation():
    model = randomise(tnpx.build_model("rcnp", 2, 2, dim_model=8, min_std=0.05))
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
        streamed = model.predict_streamed(xc, yc, xt, mask_c=mask, chunk_size=2)
    mean, std = reference_prediction(model, rcnp_reference, xc, yc, xt, mask)
    for got in (pred, streamed):
        assert_close(got.mean, mean, **TOL)
        assert_close(got.stddev, std, **TOL)
    # TE F.1 sizes (dim_x = dim_y = 1): phi 2 -> 128 (x5) -> 128, decoder 128 -> 128 x2 -> 2
    phi = 2 * 128 + 128 + 5 * (128 * 128 + 128)
    assert count(tnpx.build_model("rcnp")) == phi + 2 * (128 * 128 + 128) + 128 * 2 + 2
