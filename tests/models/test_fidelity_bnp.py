"""The ``bnp-code`` presets compute the BNP code's functions, and ``cnp`` ``te-code`` the
cambridge-mlg/tnp CNP's (``docs/fidelity.md``).

BNP code: juho-lee/bnp @ 4cf4b92b38b3ac2aa4bfbbd81de596c9bf7e9645, copied (the same model
functions) into tung-nd/TNP-pytorch @ 73df9225ab584b6148645851d82f96df518da78a:
``regression/models/{cnp,np,canp,anp,bnp,banp,modules,attention}.py``,
``regression/configs/gp/*.yaml``, ``regression/gp.py``. cambridge-mlg/tnp @ e2adb62:
``experiments/configs/models/cnp.yml``, ``tnp/models/cnp.py``, ``tnp/networks/{deepset,mlp}.py``,
``tnp/likelihoods/gaussian.py``.

Each forward pass (and each training objective that differs from tnpx's default) is re-derived
here in float64 from those equations, reading the tnpx model's parameters by name and never
calling its layers, per task on its own valid context points. Latent draws and bootstrap
indices come from other generators than the code's; they are fixed and shared (as
``test_fidelity_kr.py`` fixes ``np``'s draw), so the comparison is of the function given them.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

import tnpx
from reference_ops import (
    TOL,
    fix_bootstrap,
    fix_latent_draw,
    head_columns,
    layer_norm,
    linear,
    logmeanexp,
    masked_task,
    mlp,
    normal_kl,
    normal_log_prob,
    randomise,
    reference_prediction,
    relu,
    sigmoid,
    softmax,
    softplus,
)
from reference_ops import count_parameters as count
from tnpx.batch import Batch

ATTENTIVE = dict(dim_model=8, n_heads=2, dim_head=4)
SIZES = {
    "cnp": dict(dim_model=8),
    "np": dict(dim_model=8, dim_latent=3, n_samples=3, n_train_samples=3),
    "canp": ATTENTIVE,
    "anp": dict(**ATTENTIVE, dim_latent=3, n_samples=3, n_train_samples=3),
    "bnp": dict(dim_model=8, n_bootstrap=3, n_train_bootstrap=2),
    "banp": dict(**ATTENTIVE, n_bootstrap=3, n_train_bootstrap=2),
}
N_HEADS = ATTENTIVE["n_heads"]


def tiny(name, preset="bnp-code", **extra):
    model = tnpx.build_model(name, 2, 2, preset=preset, **{**SIZES[name], **extra})
    return randomise(model)


# --- the reference's operations, written out ---------------------------------------------


def multi_head_attn(xq, xk, xv, sd, prefix, n_heads=N_HEADS):
    """``attention.py`` ``MultiHeadAttn``: ``q, k, v = fc_q(q), fc_k(k), fc_v(v)`` (no bias);
    heads are ``chunk(num_heads, -1)`` column blocks; ``A = softmax(q_h k_h^T /
    sqrt(dim_out))``; ``out = ln1(q + cat_h(A v_h))``; ``out = ln2(out + relu(fc_out(out)))``."""
    q = linear(xq, sd, f"{prefix}.to_q", bias=False)
    k = linear(xk, sd, f"{prefix}.to_k", bias=False)
    v = linear(xv, sd, f"{prefix}.to_v", bias=False)
    dim_out = q.shape[-1]
    heads = [
        softmax(head_columns(q, h, n_heads) @ head_columns(k, h, n_heads).T / math.sqrt(dim_out))
        @ head_columns(v, h, n_heads)
        for h in range(n_heads)
    ]
    out = layer_norm(q + torch.cat(heads, -1), sd, f"{prefix}.norm_attn")
    return layer_norm(out + relu(linear(out, sd, f"{prefix}.to_out")), sd, f"{prefix}.norm_ff")


def pooling_encoder(xc, yc, sd, prefix):
    """``PoolingEncoder`` (pre_depth 4, post_depth 2): ``net_post(mean net_pre([x, y]))``."""
    pre = mlp(torch.cat([xc, yc], -1), sd, f"{prefix}.mlp", 4)
    return mlp(pre.mean(0), sd, f"{prefix}.post", 2)


def self_attn_pooling(xc, yc, sd, prefix):
    """``PoolingEncoder(self_attn=True)``: ``build_mlp(depth 2)``, ReLU, ``SelfAttn``, mean,
    ``build_mlp(depth 2)``."""
    h = relu(mlp(torch.cat([xc, yc], -1), sd, f"{prefix}.embed", 2))
    h = multi_head_attn(h, h, h, sd, f"{prefix}.blocks.0")
    return mlp(h.mean(0), sd, f"{prefix}.head", 2)


def cross_attn_encoder(xc, yc, xq, sd, prefix):
    """``CrossAttnEncoder`` (v_depth 4, qk_depth 2): ``v = SelfAttn(build_mlp(depth 2)([x,
    y]))``; ``q, k = net_qk(x_t), net_qk(x_c)``; ``MultiHeadAttn(q, k, v)``."""
    v = mlp(torch.cat([xc, yc], -1), sd, f"{prefix}.embed_context", 2)
    v = multi_head_attn(v, v, v, sd, f"{prefix}.self_attention.0")
    q, k = mlp(xq, sd, f"{prefix}.embed_query", 2), mlp(xc, sd, f"{prefix}.embed_query", 2)
    return multi_head_attn(q, k, v, sd, f"{prefix}.cross_attention")


def decoder(encoded, x, sd, ctx=None):
    """``Decoder`` (depth 3): ``hid = fc([encoded, x])`` (+ ``fc_ctx(ctx)``, no bias: the
    bootstrap's ``add_ctx``, the columns after ``fc``'s in tnpx's first layer); ReLU, Linear,
    ReLU, Linear; ``sigma = 0.1 + 0.9 softplus(raw)``."""
    w, n = sd["decoder.0.weight"], encoded.shape[-1] + x.shape[-1]
    hid = torch.cat([encoded, x], -1) @ w[:, :n].T + sd["decoder.0.bias"]
    if ctx is not None:
        hid = hid + ctx @ w[:, n:].T
    else:
        assert w.shape[1] in (n, n + encoded.shape[-1])
    out = linear(relu(linear(relu(hid), sd, "decoder.2")), sd, "decoder.4")
    mu, raw = out.chunk(2, -1)
    return mu, 0.1 + 0.9 * softplus(raw)


def rep(r, n):
    return r.expand(n, -1)


# --- the models ------------------------------------------------------------------------------


def cnp_encode(sd, xc, yc, xq, prefix="encoder"):
    """``cnp.py``: ``[enc1(xc, yc), enc2(xc, yc)]`` for every query."""
    r = torch.cat(
        [pooling_encoder(xc, yc, sd, f"{prefix}.0"), pooling_encoder(xc, yc, sd, f"{prefix}.1")]
    )
    return rep(r, len(xq))


def canp_encode(sd, xc, yc, xq, prefix="encoder"):
    """``canp.py``: ``[enc1(xc, yc, xt), enc2(xc, yc)]``."""
    r2 = self_attn_pooling(xc, yc, sd, f"{prefix}.1")
    return torch.cat([cross_attn_encoder(xc, yc, xq, sd, f"{prefix}.0"), rep(r2, len(xq))], -1)


def cnp_reference(sd, xc, yc, xt, h):
    return decoder(cnp_encode(sd, xc, yc, xt), xt, sd)


def canp_reference(sd, xc, yc, xt, h):
    return decoder(canp_encode(sd, xc, yc, xt), xt, sd)


def latent_path(sd, xc, yc, attentive):
    """``lenc``: ``(mu, s) = PoolingEncoder(dim_lat)``, ``sigma = 0.1 + 0.9 sigmoid(s)``."""
    if attentive:
        stats = self_attn_pooling(xc, yc, sd, "latent")
    else:
        stats = mlp(mlp(torch.cat([xc, yc], -1), sd, "latent.embed", 4).mean(0), sd,
                    "latent.head", 2)  # fmt: skip
    mu, s = stats.chunk(2, -1)
    return mu, 0.1 + 0.9 * sigmoid(s)


def latent_decode(sd, xc, yc, xt, z, attentive):
    """``np.py`` / ``anp.py`` ``predict`` given ``z [K, d_z]``: ``dec([theta, z], x_t)``;
    ``theta = denc(xc, yc)`` (NP: ``PoolingEncoder``, ANP: ``CrossAttnEncoder``)."""
    if attentive:
        theta = cross_attn_encoder(xc, yc, xt, sd, "deterministic")
    else:
        theta = rep(pooling_encoder(xc, yc, sd, "deterministic"), len(xt))
    out = [decoder(torch.cat([theta, rep(zk[None], len(xt))], -1), xt, sd) for zk in z]
    return torch.stack([m for m, _ in out]), torch.stack([s for _, s in out])


# --- deterministic models: CNP, CANP, and cambridge's CNP -------------------------------------


def te_cnp_reference(sd, xc, yc, xt, h):
    """cambridge-mlg/tnp ``CNP``: ``z_encoder = MLP(dx + dy -> 128, 5 hidden layers)``,
    ``nanmean``; ``z_decoder = MLP(128 + dx -> 2 dy, 5 hidden)`` on ``[r, x_t]``;
    ``scale = softplus(raw) ** 0.5 + 0`` (``HeteroscedasticNormalLikelihood``)."""
    r = mlp(torch.cat([xc, yc], -1), sd, "encoder.mlp", 6).mean(0)
    mu, raw = mlp(torch.cat([rep(r, len(xt)), xt], -1), sd, "decoder", 6).chunk(2, -1)
    return mu, softplus(raw) ** 0.5


DETERMINISTIC = {
    ("cnp", "bnp-code"): cnp_reference,
    ("canp", "bnp-code"): canp_reference,
    ("cnp", "te-code"): te_cnp_reference,
}


@pytest.mark.parametrize("name,preset", list(DETERMINISTIC))
def test_deterministic_presets_equal_the_reference_forward(name, preset):
    model = tiny(name, preset) if preset == "bnp-code" else randomise(
        tnpx.build_model(name, 2, 2, preset=preset, dim_model=8))  # fmt: skip
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
        streamed = model.predict_streamed(xc, yc, xt, mask_c=mask, chunk_size=2)
    mean, std = reference_prediction(model, DETERMINISTIC[name, preset], xc, yc, xt, mask)
    assert std.min() > 0 and std.max() < 1e3 and mean.abs().max() > 1e-2  # not vacuous
    for p in (pred, streamed):
        assert_close(p.mean, mean, **TOL)
        assert_close(p.stddev, std, **TOL)


# --- NP and ANP: the prediction given the latent draws, and the training objective -------------


@pytest.mark.parametrize("name", ["np", "anp"])
def test_latent_presets_equal_the_reference_given_the_draws(monkeypatch, name):
    model = tiny(name)
    eps = torch.randn(3, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    fix_latent_draw(monkeypatch, model, eps)
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask).component  # [K, b, n_tgt, dim_y]
    sd = model.state_dict()
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        mu, sigma = latent_path(sd, c, y, name == "anp")  # p(z | C) = lenc(xc, yc)
        mean, std = latent_decode(sd, c, y, xt[i], mu + sigma * eps, name == "anp")
        assert_close(pred.mean[:, i], mean, **TOL)
        assert_close(pred.stddev[:, i], std, **TOL)


def latent_objective_reference(sd, xc, yc, xt, yt, eps, attentive):
    """``np.py`` / ``anp.py`` ``forward`` in training: ``pz = lenc(xc, yc)``, ``qz = lenc(x,
    y)`` on all of the batch's points (here: the targets), ``z = qz.rsample([K])``; for ``K >
    1`` ``-logmeanexp(log p(y | z) + log pz(z) - log qz(z)) / N``, for ``K = 1`` ``-(log p(y |
    z) - KL(qz || pz)) / N``."""
    mu_p, s_p = latent_path(sd, xc, yc, attentive)
    mu_q, s_q = latent_path(sd, xt, yt, attentive)
    z = mu_q + s_q * eps
    mean, std = latent_decode(sd, xc, yc, xt, z, attentive)
    recon = normal_log_prob(yt, mean, std).sum((-1, -2))  # [K]
    if len(eps) == 1:
        return -(recon[0] - normal_kl(mu_q, s_q, mu_p, s_p).sum()) / len(xt)
    log_w = recon + normal_log_prob(z, mu_p, s_p).sum(-1) - normal_log_prob(z, mu_q, s_q).sum(-1)
    return -logmeanexp(log_w) / len(xt)


@pytest.mark.parametrize("k", [3, 1])
@pytest.mark.parametrize("name", ["np", "anp"])
def test_latent_training_objective_is_the_reference(monkeypatch, name, k):
    model = tiny(name, n_train_samples=k).train()
    eps = torch.randn(k, 3, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    fix_latent_draw(monkeypatch, model, eps)
    xc, yc, xt, mask = masked_task()
    yt = torch.randn(xt.shape[:2] + (2,), generator=torch.Generator().manual_seed(7),
                     dtype=torch.float64)  # fmt: skip
    loss = model.training_loss(Batch(xc=xc, yc=yc, xt=xt, yt=yt, mask_c=mask))
    sd = model.state_dict()
    ref = torch.stack([
        latent_objective_reference(sd, xc[i, mask[i]], yc[i, mask[i]], xt[i], yt[i], eps,
                                   name == "anp")
        for i in range(3)
    ]).mean()  # fmt: skip
    assert_close(loss, ref, **TOL)


# --- BNP and BANP: the bootstrap given the resampling indices ---------------------------------


def bootstrap_reference(sd, xc, yc, xt, index, encode, grad=False):
    """``bnp.py`` / ``banp.py`` ``predict`` given the indices ``[2, K, n]`` of one task:
    ``(bxc, byc) = SWR(xc, yc)``; ``(mu, sigma) = dec(encode(bxc, byc, xc), xc)``; ``res =
    SWR((yc - mu) / sigma)`` centred; ``byc = mu + sigma res`` at ``bxc = xc`` (under
    ``no_grad`` unless ``grad``); ``dec(encode(xc, yc, xt), xt, ctx=encode(xc, byc, xt))``.
    Returns the base model's ``(mean, std)`` and the components' ``[K, n_tgt, dim_y]``."""
    n, means, stds = len(xc), [], []
    r_base = encode(sd, xc, yc, xt)
    for pairs, residuals in zip(index[0, :, :n], index[1, :, :n]):
        with torch.set_grad_enabled(grad and torch.is_grad_enabled()):
            mu, sigma = decoder(encode(sd, xc[pairs], yc[pairs], xc), xc, sd)
            res = ((yc - mu) / sigma)[residuals]
            y_boot = mu + sigma * (res - res.mean(0))
        m, s = decoder(r_base, xt, sd, ctx=encode(sd, xc, y_boot, xt))
        means.append(m)
        stds.append(s)
    return decoder(r_base, xt, sd), (torch.stack(means), torch.stack(stds))


BOOTSTRAP = {"bnp": cnp_encode, "banp": canp_encode}


@pytest.mark.parametrize("name", list(BOOTSTRAP))
def test_bootstrap_presets_equal_the_reference_given_the_indices(monkeypatch, name):
    model = tiny(name)
    xc, yc, xt, mask = masked_task()
    index = fix_bootstrap(monkeypatch, mask, 3)
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask).component
    sd = model.state_dict()
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        _, (mean, std) = bootstrap_reference(sd, c, y, xt[i], index[:, :, i], BOOTSTRAP[name])
        assert_close(pred.mean[:, i], mean, **TOL)
        assert_close(pred.stddev[:, i], std, **TOL)
    assert std.std() > 1e-3  # the bootstrap contexts differ


@pytest.mark.parametrize("name", list(BOOTSTRAP))
def test_bootstrap_training_loss_and_gradient_are_the_reference(monkeypatch, name):
    """``forward`` in training: ``-(ll_base + ll)``, ``ll`` the per-point ``logmeanexp`` over
    the ``K`` bootstraps, both means over the batch's points; no gradient through the
    bootstrap contexts (``torch.no_grad``)."""
    model = tiny(name).train()
    xc, yc, xt, mask = masked_task()
    yt = torch.randn(xt.shape[:2] + (2,), generator=torch.Generator().manual_seed(9),
                     dtype=torch.float64)  # fmt: skip
    index = fix_bootstrap(monkeypatch, mask, 2)
    loss = model.training_loss(Batch(xc=xc, yc=yc, xt=xt, yt=yt, mask_c=mask))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    params = dict(model.named_parameters())
    ll_base, ll_boot = [], []
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        base, (m, s) = bootstrap_reference(params, c, y, xt[i], index[:, :, i], BOOTSTRAP[name])
        ll_base.append(normal_log_prob(yt[i], *base).sum(-1).mean())
        ll_boot.append(logmeanexp(normal_log_prob(yt[i], m, s).sum(-1)).mean())
    ref = -(torch.stack(ll_base).mean() + torch.stack(ll_boot).mean())
    assert_close(loss, ref, **TOL)
    for g, r in zip(grads, torch.autograd.grad(ref, list(params.values()))):
        assert_close(g, r, **TOL)


# --- sizes, presets, defaults, checkpoints ----------------------------------------------------


def test_parameter_counts_at_the_code_sizes():
    # dx = dy = 1, dim_hid = dim_lat = 128. build_mlp(a, h, b, depth): depth Linears.
    # PoolingEncoder: pre 2->128->128->128->128: 384 + 3 * 16,512 = 49,920; post 128->128->128:
    # 33,024; 82,944 in all. Decoder (depth 3) fc 257->128: 33,024, 128->128, 128->2: 49,794.
    pooling, dec = 49_920 + 33_024, 33_024 + 16_512 + 258
    assert count(tnpx.build_model("cnp", preset="bnp-code")) == 2 * pooling + dec == 215_682
    # NP: denc 82,944; lenc pre 49,920, post 128->128->256: 16,512 + 33,024; decoder fc takes
    # [r, z, x] (257).
    lenc = 49_920 + 16_512 + 33_024
    assert count(tnpx.build_model("np", preset="bnp-code")) == pooling + lenc + dec == 232_194
    # MultiHeadAttn(128): fc_q, fc_k, fc_v 3 * 16,384 (no bias), fc_out 16,512, ln1 + ln2 512.
    attn = 3 * 16_384 + 16_512 + 512
    # CrossAttnEncoder: net_v 2->128->128: 16,896; SelfAttn; net_qk 1->128->128: 16,768; attn.
    cross = 16_896 + attn + 16_768 + attn
    # CANP enc2 PoolingEncoder(self_attn): build_mlp depth 2, SelfAttn, post 33,024.
    pooled = 16_896 + attn + 33_024
    assert count(tnpx.build_model("canp", preset="bnp-code")) == cross + pooled + dec == 331_906
    # ANP: lenc = PoolingEncoder(self_attn, dim_lat): post 128->128->256.
    lenc_attn = 16_896 + attn + 16_512 + 33_024
    assert count(tnpx.build_model("anp", preset="bnp-code")) == cross + lenc_attn + dec
    assert cross + lenc_attn + dec == 348_418
    # BNP / BANP: add_ctx(256): fc_ctx 256 -> 128 without bias, 32,768.
    assert count(tnpx.build_model("bnp", preset="bnp-code")) == 215_682 + 32_768 == 248_450
    assert count(tnpx.build_model("banp", preset="bnp-code")) == 331_906 + 32_768 == 364_674
    # cambridge CNP (cnp.yml): z_encoder 2->128 then 5 hidden: 384 + 5 * 16,512 = 82,944;
    # z_decoder 129->128: 16,640 + 4 * 16,512 + 128->2: 258 = 82,946.
    assert count(tnpx.build_model("cnp", preset="te-code")) == 82_944 + 82_946 == 165_890


def test_bnp_code_presets_set_the_code_choices():
    for name in ("cnp", "np", "canp", "anp", "bnp", "banp"):
        model = tnpx.build_model(name, preset="bnp-code")
        assert (model.likelihood.transform, model.likelihood.min_std) == ("affine_softplus", 0.1)
    np_, anp = (tnpx.build_model(n, preset="bnp-code") for n in ("np", "anp"))
    for m in (np_, anp):  # --train_num_samples 4, --eval_num_samples 50, logmeanexp per point
        assert (m.hyper.n_train_samples, m.hyper.n_samples) == (4, 50)
        assert (m.hyper.objective, m.hyper.ll_estimate) == ("bnp-code", "marginal")
    for name in ("bnp", "banp"):
        m = tnpx.build_model(name, preset="bnp-code")
        assert (m.hyper.n_train_bootstrap, m.hyper.n_bootstrap) == (4, 50)
        assert (m.hyper.boot_adapter, m.hyper.bootstrap_loss, m.hyper.bootstrap_grad) == (
            "concat", "sum", False,
        )  # fmt: skip
    canp = tnpx.build_model("canp", preset="bnp-code")
    attn = canp.encoder[0].cross_attention
    assert attn.to_q.bias is None and attn.to_out.bias is not None and attn.n_heads == 8
    assert canp.encoder[1].relu_embed and not canp.encoder[0].self_attention[0].to_k.bias
    assert anp.latent.relu_embed and len(anp.latent.blocks) == 1


def test_the_bnp_attention_needs_heads_that_tile_the_model_width():
    with pytest.raises(ValueError, match="n_heads \\* dim_head"):
        tnpx.build_model("canp", preset="bnp-code", dim_head=8)


def test_defaults_are_unchanged():
    cnp = tnpx.build_model("cnp")
    assert type(cnp.encoder).__name__ == "DeepSetEncoder" and not hasattr(cnp.encoder, "post")
    assert (cnp.hyper.n_paths, cnp.hyper.n_post_hidden) == (1, None)
    for name in ("canp", "anp", "banp"):
        h = tnpx.build_model(name).hyper
        assert (h.layer, h.keys, h.n_key_hidden, h.pooled_path) == ("block", "tokens", None, False)
    assert type(tnpx.build_model("canp").encoder).__name__ == "AttentiveEncoder"
    assert not tnpx.build_model("anp").latent.relu_embed
    for name in ("np", "anp"):
        assert tnpx.build_model(name).hyper.decoder_order == "r-z-x"
    for name in ("bnp", "banp"):
        h = tnpx.build_model(name).hyper
        assert (h.boot_adapter, h.bootstrap_loss, h.bootstrap_grad, h.pair_keys) == (
            "concat", "sum", False, "resampled",
        )  # fmt: skip


@pytest.mark.parametrize("name,preset", [(n, "bnp-code") for n in SIZES] + [("cnp", "te-code")])
def test_presets_save_and_load(tmp_path, name, preset):
    sizes = SIZES[name] if preset == "bnp-code" else {"dim_model": 8}
    model = randomise(tnpx.build_model(name, 2, 2, preset=preset, **sizes)).float()
    tnpx.save(model, tmp_path / "model.pt")
    loaded = tnpx.load(tmp_path / "model.pt")
    assert loaded.hyper == model.hyper
    xc, yc, xt, mask = (t.float() if t.is_floating_point() else t for t in masked_task())
    with torch.no_grad():
        torch.manual_seed(0)
        a = model(xc, yc, xt, mask_c=mask)
        torch.manual_seed(0)
        b = loaded(xc, yc, xt, mask_c=mask)
    assert_close(a.mean, b.mean, atol=0, rtol=0)
    assert_close(a.stddev, b.stddev, atol=0, rtol=0)
