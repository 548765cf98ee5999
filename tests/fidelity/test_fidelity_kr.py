"""The ``kr-code`` presets compute the function of the TNP-KR paper's code (``docs/fidelity.md``).

The reference is MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c (JAX/Flax):
``dl4bi/meta_regression/{tnp_kr,tnp_d,cnp}.py``, ``dl4bi/core/{transformer,attention,mlp}.py``
and the model configs ``benchmarks/meta_regression/configs/gp/model/*.yaml``. Each forward
pass is re-derived here in float64 from those equations: explicit per-head softmax attention,
explicit FAVOR+ features, explicit LayerNorm (Flax's epsilon, 1e-6) and MLPs, reading the tnpx
model's ``state_dict()`` by name and never calling its layers. The reference masks the context
with ``valid_lens`` (the first ``n`` points of a task), so each task is computed here on its
own valid points, which is what tnpx's key mask (any pattern of padding) must reproduce.
"""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers import reference_ops
from tests.helpers.reference_ops import (
    FLAX_EPS,
    TOL,
    assert_reloads_identically,
    head_columns,
    linear,
    masked_task,
    mlp,
    randomise,
    reference_prediction,
    softmax_attention,
    softplus,
)
from tests.helpers.reference_ops import count_parameters as count
from tnpx.nn.performer import orthogonal_features

TINY_KR = dict(
    dim_model=8, n_layers=2, n_heads=2, dim_head=4, dim_ff=12, dim_embed_hidden=10,
    dim_decoder_hidden=9,
)  # fmt: skip
TINY_TNPD = dict(
    dim_model=8, n_layers=2, n_heads=2, dim_head=None, dim_ff=12, dim_decoder_hidden=12
)
TINY_CNP = dict(dim_model=10)


# --- the reference's operations, written out ---------------------------------------------


# flax ``nn.LayerNorm``: biased variance over the last axis, epsilon 1e-6
layer_norm = partial(reference_ops.layer_norm, eps=FLAX_EPS)


def project_keys(xkv, sd, prefix):
    return linear(xkv, sd, f"{prefix}.to_k"), linear(xkv, sd, f"{prefix}.to_v")


def favor_attention(xq, xkv, sd, prefix, n_heads):
    """``MultiHeadAttention(FastAttention())`` of one task: the same projections; per head,
    ``phi(x) = exp(x W^T - |x|^2 / 2) / sqrt(m)`` of ``x d^-1/4`` (``build_stable_positive_
    softmax_phi``: no max-subtraction), ``fast_attend``: ``phi_q (phi_k^T [v, 1])``, the last
    column (the normaliser) replaced by 1e-6 where below it."""
    q, k, v = (linear(xq, sd, f"{prefix}.to_q"), *project_keys(xkv, sd, prefix))
    w = sd[f"{prefix}.projection"]  # [n_heads, m, d_head]
    out = []
    for h in range(n_heads):
        qh, kh, vh = (
            head_columns(q, h, n_heads),
            head_columns(k, h, n_heads),
            head_columns(v, h, n_heads),
        )
        m, d = w[h].shape

        def phi(x, d=d, m=m, h=h):
            x = x / d**0.25
            return torch.exp(x @ w[h].T - (x**2).sum(-1, keepdim=True) / 2) / math.sqrt(m)

        buf = phi(qh) @ (phi(kh).T @ torch.cat([vh, torch.ones(len(vh), 1, dtype=vh.dtype)], -1))
        num, den = buf[:, :-1], buf[:, -1:]
        out.append(num / torch.where(den < 1e-6, torch.full_like(den, 1e-6), den))
    return linear(torch.cat(out, -1), sd, f"{prefix}.to_out")


# --- the three references -------------------------------------------------------------------


def tnp_kr_reference(sd, xc, yc, xt, h, attention):
    """dl4bi ``TNPKR``: ``embed_s_f = MLP([256, 64])`` on ``[x, y]`` / ``[x, 0]``; ``KRStack``
    of ``KRBlock`` s: ``qs, ks = norm(qs), norm(ks)`` (one LayerNorm), ``qs += attn(qs, ks,
    ks)``, ``ks += attn(ks, ks, ks)`` (one attention module), then a second LayerNorm and
    ``MLP([128, 64])`` on both with residuals; final LayerNorm of the targets; ``head =
    MLP([128, 2])``; ``std = min_std + (1 - min_std) exp(log_var / 2)``."""
    yt = torch.zeros(len(xt), yc.shape[-1], dtype=xt.dtype)
    zc = mlp(torch.cat([xc, yc], -1), sd, "embed.mlp", 2)
    zt = mlp(torch.cat([xt, yt], -1), sd, "embed.mlp", 2)
    for layer in range(h["n_layers"]):
        b = f"stack.blocks.{layer}"
        q, kv = layer_norm(zt, sd, f"{b}.norm_attn"), layer_norm(zc, sd, f"{b}.norm_attn")
        zt = zt + attention(q, kv, sd, f"{b}.attn", h["n_heads"])
        zc = zc + attention(kv, kv, sd, f"{b}.attn", h["n_heads"])
        zt = zt + mlp(layer_norm(zt, sd, f"{b}.norm_ff"), sd, f"{b}.ff", 2)
        zc = zc + mlp(layer_norm(zc, sd, f"{b}.norm_ff"), sd, f"{b}.ff", 2)
    raw = mlp(layer_norm(zt, sd, "norm"), sd, "decoder", 2)
    mu, log_var = raw.chunk(2, -1)
    return mu, h["min_std"] + (1 - h["min_std"]) * torch.exp(log_var / 2)


def tnp_d_reference(sd, xc, yc, xt, h):
    """dl4bi ``TNPD``: ``MLP([64] * 4)`` on ``[context [x, y]; targets [x, 0]]``;
    ``TransformerEncoder`` of post-norm ``TransformerEncoderBlock`` s (``x = norm(x + attn(x,
    x, x, valid_lens_ctx))``, ``x = norm'(x + MLP([128, 64])(x))``; no final norm) where every
    token attends to the valid context only; ``head = MLP([128, 2])``; ``std = exp(raw)`` if
    ``min_std == 0`` else ``min_std + (1 - min_std) softplus(raw)``."""
    yt = torch.zeros(len(xt), yc.shape[-1], dtype=xt.dtype)
    z = mlp(torch.cat([torch.cat([xc, yc], -1), torch.cat([xt, yt], -1)]), sd, "embed.mlp", 4)
    n_ctx = len(xc)
    for layer in range(h["n_layers"]):
        b = f"stack.blocks.{layer}"
        z = layer_norm(z + softmax_attention(z, z[:n_ctx], sd, f"{b}.attn", h["n_heads"]),
                       sd, f"{b}.norm_attn")  # fmt: skip
        z = layer_norm(z + mlp(z, sd, f"{b}.ff", 2), sd, f"{b}.norm_ff")
    mu, raw = mlp(z[n_ctx:], sd, "decoder", 2).chunk(2, -1)
    if h["min_std"]:
        return mu, h["min_std"] + (1 - h["min_std"]) * softplus(raw)
    return mu, torch.exp(raw)


def cnp_reference(sd, xc, yc, xt, h):
    """dl4bi ``CNP``: ``r = mean over the valid context of MLP([128] * 6)([x, y])``;
    ``dec = MLP([128] * 4 + [2])`` on ``[r, x_t]``; ``std = min_std + (1 - min_std)
    softplus(raw)``."""
    r = mlp(torch.cat([xc, yc], -1), sd, "encoder.mlp", 6).mean(0)
    q = torch.cat([r.expand(len(xt), -1), xt], -1)
    mu, raw = mlp(q, sd, "decoder", 5).chunk(2, -1)
    return mu, h["min_std"] + (1 - h["min_std"]) * softplus(raw)


CASES = {
    "tnp-kr-full": (TINY_KR, lambda *a: tnp_kr_reference(*a, softmax_attention)),
    "tnp-kr-fast": ({**TINY_KR, "n_features": 6}, lambda *a: tnp_kr_reference(*a, favor_attention)),
    "tnp-d": (TINY_TNPD, tnp_d_reference),
    "cnp": (TINY_CNP, cnp_reference),
}


# --- helpers --------------------------------------------------------------------------------


def tiny_kr_code(name, min_std, dim_x=2, dim_y=2, scale=0.4):
    """The ``kr-code`` preset at tiny sizes, float64, every parameter (LayerNorms included)
    random; FAVOR+ features as drawn."""
    sizes, _ = CASES[name]
    model = tnpx.build_model(name, dim_x, dim_y, preset="kr-code", **sizes, min_std=min_std)
    return randomise(model, scale)


# --- the presets compute the references' functions --------------------------------------------


@pytest.mark.parametrize("min_std", [0.0, 0.05])  # GPs / MNIST in the TNP-KR code
@pytest.mark.parametrize("name", list(CASES))
def test_kr_code_equals_the_reference_forward(name, min_std):
    model = tiny_kr_code(name, min_std, scale=0.3 if name == "tnp-kr-fast" else 0.4)
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
        streamed = model.predict_streamed(xc, yc, xt, mask_c=mask, chunk_size=2)
    mean, std = reference_prediction(model, CASES[name][1], xc, yc, xt, mask)
    assert std.min() > 0 and std.max() < 1e3  # the check is not vacuous
    for p in (pred, streamed):
        assert_close(p.mean, mean, **TOL)
        assert_close(p.stddev, std, **TOL)


def test_the_tnp_kr_defaults_differ_from_the_code_only_in_the_layer_norm_epsilon():
    """At ``min_std = 0`` the default ``tnp-kr-full`` is the code's function but for the
    LayerNorm epsilon (1e-5 against Flax's 1e-6): equal with that one option changed."""
    model = tiny_kr_code("tnp-kr-full", 0.0)
    options = {k: v for k, v in model.config["hyper"].items() if k not in ("scale_transform",)}
    default = tnpx.build_model("tnp-kr-full", 2, 2, **{**options, "norm_eps": 1e-5}).double()
    default.load_state_dict(model.state_dict())
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        a, b = model(xc, yc, xt, mask_c=mask), default.eval()(xc, yc, xt, mask_c=mask)
    assert not torch.equal(a.mean, b.mean)  # the epsilon is visible ...
    assert_close(a.mean, b.mean, atol=1e-3, rtol=0)  # ... and small
    same_eps = tnpx.build_model("tnp-kr-full", 2, 2, **options).double().eval()
    same_eps.load_state_dict(model.state_dict())  # exp and affine_exp agree at min_std = 0
    with torch.no_grad():
        c = same_eps(xc, yc, xt, mask_c=mask)
    assert_close(a.mean, c.mean, **TOL)
    assert_close(a.stddev, c.stddev, **TOL)


# --- FAVOR+ features as the code draws them ---------------------------------------------------


def test_kr_code_favor_features_are_one_plain_qr_draw_per_layer():
    """dl4bi ``gaussian_orf``: blocks ``Q^T`` of ``jnp.linalg.qr`` of Gaussian ``d x d``
    matrices (no sign correction), the first ``m`` rows, each scaled to norm ``sqrt(d)``; one
    ``[m, d]`` matrix per ``FastAttention`` (per layer), used by every head."""
    model = tnpx.build_model("tnp-kr-fast", preset="kr-code")
    for block in model.stack.blocks:
        w = block.attn.projection  # [n_heads, 64, 16]
        assert w.shape == (4, 64, 16)
        assert all(torch.equal(w[0], w[h]) for h in range(4))
        assert_close(w[0].norm(dim=-1), torch.full((64,), 4.0), atol=1e-5, rtol=0)
        gen = torch.Generator().manual_seed(block.attn.seed)
        blocks = [torch.linalg.qr(torch.randn(16, 16, generator=gen)).Q.T for _ in range(4)]
        assert_close(w[0], torch.cat(blocks) * 4.0, atol=0, rtol=0)
    assert [b.attn.seed for b in model.stack.blocks] == list(range(6))  # independent layers


def test_plain_and_haar_features_share_the_gaussian_draws():
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    haar = orthogonal_features(6, 4, g1, qr="haar")
    plain = orthogonal_features(6, 4, g2, qr="plain")
    # the same directions up to the sign of each row
    assert_close(haar.abs(), plain.abs(), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="qr"):
        orthogonal_features(6, 4, qr="householder")


# --- sizes and defaults ---------------------------------------------------------------------


def test_parameter_counts_at_the_code_sizes():
    # TNP-KR (dx = dy = 1): embed 2 -> 256 -> 64: 17,216; per KRBlock q/k/v/out 4 * 4,160, FF
    # 64 -> 128 -> 64 16,576, two LayerNorms 256: 33,472; final LayerNorm 128; head
    # 64 -> 128 -> 2: 8,578. FAVOR+ features are a buffer (the code's "projections").
    kr = 17_216 + 6 * 33_472 + 128 + 8_578
    assert kr == 226_754
    assert count(tnpx.build_model("tnp-kr-full", preset="kr-code")) == kr
    assert count(tnpx.build_model("tnp-kr-fast", preset="kr-code")) == kr
    # TNP-D: embed 2 -> 64 x4: 12,672; 6 post-norm blocks of 33,472; head 64 -> 128 -> 2.
    assert count(tnpx.build_model("tnp-d", preset="kr-code")) == 12_672 + 6 * 33_472 + 8_578
    assert count(tnpx.build_model("tnp-d", preset="kr-code")) == 222_082
    # CNP: encoder 2 -> 128 (x6 Dense): 82,944; decoder 129 -> 128 x4 -> 2: 66,434.
    assert count(tnpx.build_model("cnp", preset="kr-code")) == 82_944 + 66_434 == 149_378
    # 2D inputs (KR-3) and 3 channels (CelebA, CIFAR-10) change only the first and last layers
    assert count(tnpx.build_model("tnp-kr-full", 2, 3, preset="kr-code")) == kr + 3 * 256 + 4 * 129


def test_kr_code_presets_set_the_code_choices():
    full = tnpx.build_model("tnp-kr-full", preset="kr-code")
    assert full.stack.blocks[0].norm_attn.eps == 1e-6 and full.norm.eps == 1e-6
    assert full.likelihood.transform == "affine_exp" and full.likelihood.min_std == 0.0
    fast = tnpx.build_model("tnp-kr-fast", preset="kr-code")
    attn = fast.stack.blocks[0].attn
    assert (attn.stabilise, attn.feature_heads, attn.feature_qr, attn.redraw_every) == (
        False, "shared", "plain", 0,
    )  # fmt: skip
    d = tnpx.build_model("tnp-d", preset="kr-code")
    assert not d.stack.blocks[0].norm_first and d.embed.kind == "plain" and d.norm is None
    assert d.stack.blocks[0].norm_ff.eps == 1e-6 and d.hyper.dim_head == 16
    assert d.likelihood.transform == "exp_raw_or_affine_softplus"
    cnp = tnpx.build_model("cnp", preset="kr-code")
    assert cnp.likelihood.transform == "affine_softplus" and cnp.hyper.n_decoder_hidden == 4


def test_defaults_are_unchanged():
    for name in ("tnp-kr-full", "tnp-kr-fast"):
        model = tnpx.build_model(name)
        assert model.hyper.norm_eps == 1e-5 and model.norm.eps == 1e-5
        assert model.likelihood.transform == "exp"
    attn = tnpx.build_model("tnp-kr-fast").stack.blocks[0].attn
    assert (attn.stabilise, attn.feature_heads, attn.feature_qr) == (True, "per-head", "haar")
    assert not torch.equal(attn.projection[0], attn.projection[1])  # heads drawn apart
    for name in ("tnp", "tnp-d"):
        block = tnpx.build_model(name).stack.blocks[0]
        assert block.norm_attn.eps == block.norm_ff.eps == 1e-5
    assert tnpx.build_model("cnp").likelihood.transform == "softplus"


@pytest.mark.parametrize("name", list(CASES))
def test_kr_code_models_save_and_load(tmp_path, name):
    model = tiny_kr_code(name, 0.05).float()
    assert_reloads_identically(model, tmp_path / "model.pt")


# --- NP: the same function given the latent draw ----------------------------------------------


def np_reference(sd, xc, yc, xt, h, eps):
    """dl4bi ``NP`` (``n_z = 1``): ``r = mean MLP([128] * 6)([x, y])``; ``q(z | C)``: ``(mu,
    s) = MLP([128, 256])(mean MLP([128] * 3)([x, y]))``, ``sigma = 0.1 + 0.9 sigmoid(s)``, ``z
    = mu + sigma eps``; ``dec = MLP([128] * 4 + [2])`` on ``[r, z, x_t]``; ``std = min_std +
    (1 - min_std) softplus(raw)``."""
    xy = torch.cat([xc, yc], -1)
    r = mlp(xy, sd, "deterministic.mlp", 6).mean(0)
    mu, s = mlp(mlp(xy, sd, "latent.embed", 3).mean(0), sd, "latent.head", 2).chunk(2, -1)
    z = mu + (0.1 + 0.9 / (1 + torch.exp(-s))) * eps
    q = torch.cat([r.expand(len(xt), -1), z.expand(len(xt), -1), xt], -1)
    mean, raw = mlp(q, sd, "decoder", 5).chunk(2, -1)
    return mean, h["min_std"] + (1 - h["min_std"]) * softplus(raw)


@pytest.mark.parametrize("min_std", [0.0, 0.05])
def test_np_kr_code_equals_the_reference_given_the_latent_draw(monkeypatch, min_std):
    """The draw of ``z`` comes from another generator than the code's ``random.normal``; with
    the standard-normal draws shared, the prediction is the code's (one sample, ``K = 1``)."""
    model = tnpx.build_model("np", 2, 2, preset="kr-code", dim_model=7, dim_latent=3)
    model = model.double()
    model.likelihood.min_std = min_std
    gen = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.4 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    eps = torch.randn(3, generator=gen, dtype=torch.float64)
    monkeypatch.setattr(model, "draw", lambda q, k: (q.loc + q.scale * eps)[None])
    assert model.hyper.n_samples == 1 and model.eval().n_components == 1
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
    sd = model.state_dict()
    ref = [
        np_reference(sd, xc[i, mask[i]], yc[i, mask[i]], xt[i], {"min_std": min_std}, eps)
        for i in range(3)
    ]
    assert_close(pred.mean, torch.stack([m for m, _ in ref]), **TOL)
    assert_close(pred.stddev, torch.stack([s for _, s in ref]), **TOL)
