"""Presets of tung-nd/TNP-pytorch @ 73df9225ab584b6148645851d82f96df518da78a, the TNP-D
paper's code (``tnpd-code``): ``tnp-d`` and ``tnp-nd`` (``docs/fidelity.md``, sections TNP-D
and TNP-ND). Registers presets only."""

from __future__ import annotations

from ..registry import register_preset

# tung-nd/TNP-pytorch @ 73df9225ab584b6148645851d82f96df518da78a, regression/models/tnp.py and
# tnpd.py with regression/configs/gp/tnpd.yaml: nn.TransformerEncoderLayer (post-norm, ReLU,
# dropout 0, biases on every projection, d_model / nhead per head) under a mask that lets
# every token attend to the context only; tokens [x, y] / [x, 0] through build_mlp of depth
# emb_depth = 4 (three hidden layers of d_model); predictor Linear(d_model, dim_feedforward),
# ReLU, Linear(dim_feedforward, 2 dim_y); std = exp(raw) (bound_std False). Sizes: that
# config (d_model 64, 6 layers, 4 heads, dim_feedforward 128).
TNPD_CODE = dict(
    share_weights=True,
    targets_read="input",
    norm="post",
    tokens="plain",
    qkv_bias=True,
    scale_transform="exp_raw",
    min_std=0.0,
    dim_model=64,
    n_layers=6,
    n_heads=4,
    dim_head=None,
    dim_ff=128,
    n_embed_hidden=3,
    n_decoder_hidden=1,
    dim_decoder_hidden=128,
)
register_preset("tnp-d", "tnpd-code", **TNPD_CODE)

# tung-nd/TNP-pytorch @ 73df9225ab584b6148645851d82f96df518da78a, regression/models/tnpnd.py with
# regression/configs/gp/tnpnd.yaml: TNP.encode is TNP-D's (the tnp-d preset tnpd-code above:
# post-norm nn.TransformerEncoderLayer stack, tokens [x, y] / [x, 0] through build_mlp of depth
# 4, every token attending to the context; d_model 64, 6 layers, 4 heads, dim_feedforward 128;
# tnp-nd has no qkv_bias option, and with diagonal="factor" no head transform or minimum);
# mean_net Linear(64, 128), ReLU, Linear(128, dy); std_encoder: 2 post-norm layers over the
# targets; projector build_mlp(64, 128, 20 dy, 4); cov_approx cholesky: L = tril(F F^T), no
# bound_std.
_TNPND_ENCODER = {
    k: v for k, v in TNPD_CODE.items() if k not in ("qkv_bias", "scale_transform", "min_std")
}
register_preset(
    "tnp-nd",
    "tnpd-code",
    **_TNPND_ENCODER,
    covariance="cholesky",
    diagonal="factor",
    rank=20,
    n_cov_layers=2,
    n_cov_hidden=3,
    dim_cov_hidden=128,
)
