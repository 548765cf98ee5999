"""The BNP code's (juho-lee/bnp) operations and encoders written out in float64 for the
``bnp-code`` fidelity tests (``tests/fidelity/test_fidelity_bnp*.py``), reading the tnpx model's
``state_dict()`` by parameter name, and the small sizes the tests build the models at."""

from __future__ import annotations

import math

import torch

from tests.helpers.reference_ops import (
    head_columns,
    layer_norm,
    linear,
    mlp,
    relu,
    softmax,
    softplus,
)

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
