"""The ``kr-code`` presets of ``canp``, ``anp``, ``bnp`` and ``banp`` compute the TNP-KR paper's
code (``docs/fidelity.md``).

Reference: MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c (JAX/Flax),
``dl4bi/meta_regression/{canp,anp,bnp,banp}.py``, ``dl4bi/core/{attention,mlp,utils}.py``
(``MultiHeadAttention``, ``Attention``, ``DotScorer``, ``MLP``, ``bootstrap``),
``dl4bi/meta_regression/train_utils.py`` (``npf_elbo_train_step``, ``bootstrap_train_step``) and
``benchmarks/meta_regression/configs/gp/model/{canp,anp,bnp,banp}.yaml``. ``MLP(dims)`` is
``Dense, ReLU, ..., Dense``; ``MultiHeadAttention`` is ``proj_out(attention(proj_qs(q),
proj_ks(k), proj_vs(v)))`` with one biased Dense each and per-head scores ``q.k / sqrt(16)``,
with no residual, LayerNorm or feed-forward around it.

Each forward pass and training loss is re-derived here in float64 from those equations, reading
the tnpx model's parameters by name, per task on its own valid context points (the code's
``valid_lens``); latent draws and bootstrap indices are fixed and shared.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.reference_ops import (
    TOL,
    assert_reloads_identically,
    fix_bootstrap,
    fix_latent_draw,
    linear,
    logmeanexp,
    masked_task,
    mlp,
    normal_kl,
    normal_log_prob,
    randomise,
    reference_prediction,
    sigmoid,
    softmax_attention,
    softplus,
)
from tests.helpers.reference_ops import count_parameters as count
from tnpx.batch import Batch

ATTENTIVE = dict(dim_model=8, n_heads=2, dim_head=4)
SIZES = {
    "canp": ATTENTIVE,
    "anp": dict(**ATTENTIVE, dim_latent=3),
    "bnp": dict(dim_model=8),
    "banp": ATTENTIVE,
}
N_HEADS = ATTENTIVE["n_heads"]


def tiny(name, min_std=0.0, dim_y=2, **extra):
    sizes = {**SIZES[name], **extra}
    model = tnpx.build_model(name, 2, dim_y, preset="kr-code", **sizes, min_std=min_std)
    return randomise(model)


def head(raw, min_std):
    """``f_std = min_std + (1 - min_std) softplus(f_std)``."""
    mu, s = raw.chunk(2, -1)
    return mu, min_std + (1 - min_std) * softplus(s)


def attention(xq, xk, xv, sd, prefix):
    """``MultiHeadAttention`` (8 heads in the configs) with ``valid_lens``: bare."""
    return softmax_attention(xq, xk, sd, prefix, N_HEADS, xv=xv)


def self_attended_tokens(xc, yc, sd, prefix):
    """``encode_deterministic``: ``self_attn_det(enc_det([x, y]))``, ``enc_det =
    MLP([128] * 3)``."""
    h = mlp(torch.cat([xc, yc], -1), sd, f"{prefix}.embed_context", 3)
    return attention(h, h, h, sd, f"{prefix}.self_attention.0")


def cross(r_ctx, x_keys, xt, sd, prefix):
    """``cross_attn(embed_s(s_test), embed_s(s_ctx), r_ctx)``, ``embed_s = MLP([128, 128])``."""
    embed = f"{prefix}.embed_query"
    q, k = mlp(xt, sd, embed, 2), mlp(x_keys, sd, embed, 2)
    return attention(q, k, r_ctx, sd, f"{prefix}.cross_attention")


# --- CANP and ANP ---------------------------------------------------------------------------


def canp_reference(sd, xc, yc, xt, h):
    """``CANP.decode``: ``dec = MLP([128] * 4 + [2])`` on ``[r, s_test]``."""
    r = cross(self_attended_tokens(xc, yc, sd, "encoder"), xc, xt, sd, "encoder")
    return head(mlp(torch.cat([r, xt], -1), sd, "decoder", 5), h["min_std"])


def anp_latent(sd, x, y):
    """``encode_latent``: ``z_dist(mean self_attn_lat(enc_lat([x, y])))``, ``sigma = 0.1 +
    0.9 sigmoid``."""
    h = mlp(torch.cat([x, y], -1), sd, "latent.embed", 3)
    h = attention(h, h, h, sd, "latent.blocks.0")
    mu, s = mlp(h.mean(0), sd, "latent.head", 2).chunk(2, -1)
    return mu, 0.1 + 0.9 * sigmoid(s)


def anp_reference(sd, xc, yc, xt, z, min_std):
    """``ANP.decode`` (``n_z = 1``): ``dec`` on ``[s_test, r, z]``."""
    r = cross(self_attended_tokens(xc, yc, sd, "deterministic"), xc, xt, sd, "deterministic")
    q = torch.cat([xt, r, z.expand(len(xt), -1)], -1)
    return head(mlp(q, sd, "decoder", 5), min_std)


@pytest.mark.parametrize("min_std", [0.0, 0.05])
def test_canp_kr_code_equals_the_reference_forward(min_std):
    model = tiny("canp", min_std)
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
        streamed = model.predict_streamed(xc, yc, xt, mask_c=mask, chunk_size=2)
    mean, std = reference_prediction(model, canp_reference, xc, yc, xt, mask)
    assert std.min() > 0 and mean.abs().max() > 1e-2
    for p in (pred, streamed):
        assert_close(p.mean, mean, **TOL)
        assert_close(p.stddev, std, **TOL)


@pytest.mark.parametrize("min_std", [0.0, 0.05])
def test_anp_kr_code_equals_the_reference_given_the_latent_draw(monkeypatch, min_std):
    model = tiny("anp", min_std)
    assert model.n_components == 1  # n_z = 1
    eps = torch.randn(1, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    fix_latent_draw(monkeypatch, model, eps)
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
    sd = model.state_dict()
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        mu, sigma = anp_latent(sd, c, y)
        mean, std = anp_reference(sd, c, y, xt[i], mu + sigma * eps[0], min_std)
        assert_close(pred.mean[i], mean, **TOL)
        assert_close(pred.stddev[i], std, **TOL)


def test_anp_kr_code_objective_is_npf_elbo_train_step(monkeypatch):
    """``-mean log N(f_test; f_mu, f_std) + mean_b KL(q(z | T) || q(z | C)) / L_test`` with
    ``z ~ q(z | C)``. The code averages the log-density over output dimensions too, tnpx sums
    them: the same at ``dim_y = 1`` (the GP configs), which is tested."""
    model = tiny("anp", dim_y=1).train()
    eps = torch.randn(1, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    fix_latent_draw(monkeypatch, model, eps)
    xc, _, xt, mask = masked_task()
    yc, yt = (torch.randn(*t.shape[:2], 1, generator=torch.Generator().manual_seed(s),
                          dtype=torch.float64) for s, t in ((6, xc), (7, xt)))  # fmt: skip
    loss = model.training_loss(Batch(xc=xc, yc=yc, xt=xt, yt=yt, mask_c=mask))
    sd, nll, kl = model.state_dict(), [], []
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        mu_c, s_c = anp_latent(sd, c, y)
        mu_t, s_t = anp_latent(sd, xt[i], yt[i])
        mean, std = anp_reference(sd, c, y, xt[i], mu_c + s_c * eps[0], 0.0)
        nll.append(-normal_log_prob(yt[i], mean, std).mean())
        kl.append(normal_kl(mu_t, s_t, mu_c, s_c).sum() / len(xt[i]))
    assert_close(loss, torch.stack(nll).mean() + torch.stack(kl).mean(), **TOL)


# --- BNP and BANP -----------------------------------------------------------------------------


def bnp_encode(sd, x, y):
    """``BNP.encode_deterministic``: ``mean MLP([128] * 6)([x, y])`` over the valid points."""
    return mlp(torch.cat([x, y], -1), sd, "encoder.mlp", 6).mean(0)


def bnp_decode(sd, r, xt, min_std, r_boot=None):
    """``BNP.decode``: ``h = dec_hid([r, s_test])`` (+ ``dec_boot(r_boot)``), each one Dense
    with bias; ``dec_dist = MLP([128] * 3 + [2])``."""
    h = linear(torch.cat([r.expand(len(xt), -1), xt], -1), sd, "adapter_base")
    if r_boot is not None:
        h = h + linear(r_boot.expand(len(xt), -1), sd, "adapter_boot")
    return head(mlp(h, sd, "decoder", 4), min_std)


def banp_decode(sd, tokens, xc, xt, min_std, boot_tokens=None):
    """``BANP.decode``: ``r = cross_attn(embed_s(s_test), embed_s(s_ctx), r_ctx)``, ``h =
    dec_hid([r, s_test])`` (+ ``dec_boot(cross_attn(..., r_ctx_boot))``), ``dec_dist``."""
    h = linear(torch.cat([cross(tokens, xc, xt, sd, "encoder"), xt], -1), sd, "adapter_base")
    if boot_tokens is not None:
        h = h + linear(cross(boot_tokens, xc, xt, sd, "encoder"), sd, "adapter_boot")
    return head(mlp(h, sd, "decoder", 4), min_std)


def bootstrap_reference(name, sd, xc, yc, xt, index, min_std):
    """``__call__`` given the indices ``[2, K, n]`` of one task (``bootstrap`` draws per slot
    from the valid points, pairs with one key for s and f): ``sample_with_replacement`` (no
    ``stop_gradient`` but on the data): the pairs' fit at ``s_ctx`` (BANP: keys
    ``embed_s(s_ctx)``, the original inputs, values the pairs' tokens), standardised residuals
    resampled and centred, ``f_boot = mu + std res``; then ``decode(r_ctx, ..., r_ctx_boot)``.
    Returns the base ``(mean, std)`` and the components' ``[K, n_tgt, dim_y]``."""
    n, comps = len(xc), []
    if name == "bnp":
        encode, r = bnp_encode, bnp_encode(sd, xc, yc)

        def decode(r, x, boot=None):
            return bnp_decode(sd, r, x, min_std, boot)
    else:
        encode, r = self_attended_tokens, self_attended_tokens(xc, yc, sd, "encoder")

        def decode(r, x, boot=None):
            return banp_decode(sd, r, xc, x, min_std, boot)

    def enc(x, y):
        return encode(sd, x, y) if name == "bnp" else encode(x, y, sd, "encoder")

    for pairs, residuals in zip(index[0, :, :n], index[1, :, :n]):
        mu, std = decode(enc(xc[pairs], yc[pairs]), xc)
        res = ((yc - mu) / std)[residuals]
        f_boot = mu + std * (res - res.mean(0))
        comps.append(decode(r, xt, enc(xc, f_boot)))
    means, stds = (torch.stack(t) for t in zip(*comps))
    return decode(r, xt), (means, stds)


@pytest.mark.parametrize("min_std", [0.0, 0.05])
@pytest.mark.parametrize("name", ["bnp", "banp"])
def test_bootstrap_kr_code_equals_the_reference_given_the_indices(monkeypatch, name, min_std):
    model = tiny(name, min_std)
    assert model.n_components == 4  # num_samples: 4
    xc, yc, xt, mask = masked_task()
    index = fix_bootstrap(monkeypatch, mask, 4)
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask).component
    sd = model.state_dict()
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        _, (mean, std) = bootstrap_reference(name, sd, c, y, xt[i], index[:, :, i], min_std)
        assert_close(pred.mean[:, i], mean, **TOL)
        assert_close(pred.stddev[:, i], std, **TOL)
    assert std.std() > 1e-3


@pytest.mark.parametrize("name", ["bnp", "banp"])
def test_bootstrap_kr_code_loss_and_gradient_are_bootstrap_train_step(monkeypatch, name):
    """``(nll_boot + nll) / 2``: ``nll_boot = -mean(logsumexp_K log N - log K)``, ``nll =
    -mean log N(base)``, gradients through the bootstrap contexts. Means over output
    dimensions in the code, sums in tnpx: tested at ``dim_y = 1``."""
    model = tiny(name, dim_y=1).train()
    xc, _, xt, mask = masked_task()
    yc, yt = (torch.randn(*t.shape[:2], 1, generator=torch.Generator().manual_seed(s),
                          dtype=torch.float64) for s, t in ((6, xc), (7, xt)))  # fmt: skip
    index = fix_bootstrap(monkeypatch, mask, 4)
    loss = model.training_loss(Batch(xc=xc, yc=yc, xt=xt, yt=yt, mask_c=mask))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    params = dict(model.named_parameters())
    nll, nll_boot = [], []
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        base, (m, s) = bootstrap_reference(name, params, c, y, xt[i], index[:, :, i], 0.0)
        nll.append(-normal_log_prob(yt[i], *base).mean())
        nll_boot.append(-logmeanexp(normal_log_prob(yt[i], m, s)).mean())
    ref = (torch.stack(nll_boot).mean() + torch.stack(nll).mean()) / 2
    assert_close(loss, ref, **TOL)
    for g, r in zip(grads, torch.autograd.grad(ref, list(params.values()))):
        assert_close(g, r, **TOL)


# --- sizes, presets, checkpoints ----------------------------------------------------------------


def test_parameter_counts_at_the_code_sizes():
    # dx = dy = 1. Dense(a -> b): a b + b. MultiHeadAttention(8 heads): 4 Dense(128): 66,048.
    attn = 4 * 16_512
    embed_s = 256 + 16_512  # MLP([128, 128]) on x
    enc = 384 + 2 * 16_512  # MLP([128] * 3) on [x, y]
    dec = 16_640 + 3 * 16_512 + 258  # MLP([128] * 4 + [2]) on [r, x]
    assert count(tnpx.build_model("canp", preset="kr-code")) == embed_s + enc + 2 * attn + dec
    assert embed_s + enc + 2 * attn + dec == 248_706
    # ANP: latent enc_lat + self_attn_lat + z_dist MLP([128, 256]); dec on [x, r, z] (257).
    latent = enc + attn + 16_512 + 33_024
    dec_anp = 33_024 + 3 * 16_512 + 258
    anp = embed_s + enc + 2 * attn + latent + dec_anp
    assert count(tnpx.build_model("anp", preset="kr-code")) == anp == 414_082
    # BNP: enc_det MLP([128] * 6) 82,944; dec_hid Dense(129 -> 128) 16,640; dec_boot
    # Dense(128) 16,512; dec_dist MLP([128] * 3 + [2]) 49,794.
    boot_dec = 16_640 + 16_512 + 3 * 16_512 + 258
    assert count(tnpx.build_model("bnp", preset="kr-code")) == 82_944 + boot_dec == 165_890
    banp = embed_s + enc + 2 * attn + boot_dec
    assert count(tnpx.build_model("banp", preset="kr-code")) == banp == 265_218


def test_kr_code_presets_set_the_code_choices():
    for name in ("canp", "anp", "bnp", "banp"):
        model = tnpx.build_model(name, preset="kr-code")
        assert (model.likelihood.transform, model.likelihood.min_std) == ("affine_softplus", 0.0)
    canp = tnpx.build_model("canp", preset="kr-code")
    assert type(canp.encoder.self_attention[0]).__name__ == "KeyValueAttention"
    assert canp.encoder.keys == "x" and len(canp.encoder.embed_query) == 3  # one hidden layer
    anp = tnpx.build_model("anp", preset="kr-code")
    assert anp.hyper.decoder_order == "x-r-z" and anp.hyper.objective == "kr-code"
    for name in ("bnp", "banp"):
        h = tnpx.build_model(name, preset="kr-code").hyper
        assert (h.n_bootstrap, h.n_train_bootstrap, h.ll_estimate) == (4, 4, "marginal")
        assert (h.boot_adapter, h.bootstrap_loss, h.bootstrap_grad) == ("dense", "mean", True)
    assert tnpx.build_model("banp", preset="kr-code").hyper.pair_keys == "original"


@pytest.mark.parametrize("name", list(SIZES))
def test_kr_code_models_save_and_load(tmp_path, name):
    model = tiny(name, 0.05).float()
    assert_reloads_identically(model, tmp_path / "model.pt")


def test_options_that_need_x_keys_are_checked():
    with pytest.raises(ValueError, match="keys='x'"):
        tnpx.build_model("banp", pair_keys="original")
    with pytest.raises(ValueError, match="keys='x'"):
        tnpx.build_model("canp", keys="x")
