"""Presets of juho-lee/bnp @ 4cf4b92b38b3ac2aa4bfbbd81de596c9bf7e9645 (tung-nd/TNP-pytorch @
73df9225 holds the same models), the BNP paper's code (``bnp-code``): ``cnp``, ``np``,
``canp``, ``anp``, ``bnp``, ``banp`` (``docs/fidelity.md``, section "The CNP family in the BNP
code"). Registers presets only."""

from __future__ import annotations

from ..registry import register_preset

# juho-lee/bnp @ 4cf4b92b38b3ac2aa4bfbbd81de596c9bf7e9645 = tung-nd/TNP-pytorch @ 73df9225,
# regression/models/cnp.py, modules.py (PoolingEncoder, Decoder), configs/gp/cnp.yaml: two
# PoolingEncoders, each build_mlp(dx + dy, 128, 128, depth 4) (3 hidden layers), mean,
# build_mlp(128, 128, 128, depth 2) (1 hidden layer); decoder on [r_1, r_2, x]: Linear, ReLU,
# Linear, ReLU, Linear (depth 3: 2 hidden layers); sigma = 0.1 + 0.9 softplus(raw).
register_preset(
    "cnp",
    "bnp-code",
    dim_model=128,
    n_paths=2,
    n_encoder_hidden=3,
    n_post_hidden=1,
    n_decoder_hidden=2,
    scale_transform="affine_softplus",
    min_std=0.1,
)


# juho-lee/bnp @ 4cf4b92 = tung-nd/TNP-pytorch @ 73df9225, regression/models/np.py, modules.py,
# configs/gp/np.yaml, gp.py: deterministic PoolingEncoder (build_mlp depth 4, mean, build_mlp
# depth 2); latent PoolingEncoder (depth 4, mean, build_mlp(128, 128, 2 * 128, 2)), sigma =
# 0.1 + 0.9 sigmoid; decoder on [r, z, x] with 2 hidden layers; sigma_y = 0.1 + 0.9
# softplus(raw). Trained with 4 samples z ~ q(z | all points) (importance-weighted), scored
# with 50 samples from q(z | C), logmeanexp per target point (--train_num_samples 4,
# --eval_num_samples 50).
register_preset(
    "np",
    "bnp-code",
    objective="bnp-code",
    n_samples=50,
    n_train_samples=4,
    ll_estimate="marginal",
    dim_model=128,
    dim_latent=128,
    n_encoder_hidden=3,
    n_post_hidden=1,
    n_latent_hidden=3,
    n_decoder_hidden=2,
    scale_transform="affine_softplus",
    min_std=0.1,
)


# The BNP code's CANP / ANP: juho-lee/bnp @ 4cf4b92b38b3ac2aa4bfbbd81de596c9bf7e9645 =
# tung-nd/TNP-pytorch @ 73df9225, regression/models/{canp,anp,modules,attention}.py,
# configs/gp/{canp,anp}.yaml, gp.py. CrossAttnEncoder: values build_mlp(dx + dy, 128, 128, 2)
# (1 hidden layer) then SelfAttn; queries and keys build_mlp(dx, 128, 128, 2)(x); every
# attention is MultiHeadAttn (post-norm, residual on the projected query, logits / sqrt(128),
# 8 heads, no q/k/v bias, relu(fc_out) residual). CANP adds a PoolingEncoder(self_attn=True):
# build_mlp(depth 2), ReLU, SelfAttn, mean, build_mlp(128, 128, 128, 2); decoder on [r_1, r_2,
# x] (CANP) or [r, z, x] (ANP) with 2 hidden layers; sigma = 0.1 + 0.9 softplus(raw). ANP's
# latent path is that PoolingEncoder with output 2 * 128, sigma = 0.1 + 0.9 sigmoid. NP-style
# training: 4 samples from q(z | all points), importance-weighted; evaluation with 50 samples,
# logmeanexp per target point.
_BNP_ATTENTIVE = dict(
    dim_model=128, n_layers=1, n_heads=8, dim_head=16, n_embed_hidden=1, n_key_hidden=1,
    n_decoder_hidden=2, layer="bnp", keys="x", scale_transform="affine_softplus", min_std=0.1,
)  # fmt: skip
register_preset("canp", "bnp-code", **_BNP_ATTENTIVE, pooled_path=True)
register_preset(
    "anp",
    "bnp-code",
    objective="bnp-code",
    n_samples=50,
    n_train_samples=4,
    ll_estimate="marginal",
    dim_latent=128,
    **_BNP_ATTENTIVE,
)


# The BNP code (juho-lee/bnp @ 4cf4b92b38b3ac2aa4bfbbd81de596c9bf7e9645 = tung-nd/TNP-pytorch @
# 73df9225, regression/models/{bnp,banp}.py on cnp.py / canp.py, configs/gp/{bnp,banp}.yaml,
# gp.py): the CNP / CANP bnp-code encoders; Decoder.add_ctx: fc([r, x]) + fc_ctx(r~) with
# fc_ctx bias-free (the concat adapter); the bootstrap under torch.no_grad (paired resample,
# base fit at the context, resampled and centred standardised residuals); loss -(LL_base +
# LL_boot), LL_boot per target point (logmeanexp over K); 4 bootstraps in training, 50 at
# evaluation.
_BNP_BOOTSTRAP = dict(
    n_bootstrap=50, n_train_bootstrap=4, ll_estimate="marginal", dim_model=128,
    n_decoder_hidden=2, scale_transform="affine_softplus", min_std=0.1,
)  # fmt: skip
register_preset("bnp", "bnp-code", **_BNP_BOOTSTRAP, n_paths=2, n_encoder_hidden=3, n_post_hidden=1)
register_preset(
    "banp", "bnp-code", **_BNP_BOOTSTRAP, n_layers=1, n_heads=8, dim_head=16, n_embed_hidden=1,
    n_key_hidden=1, layer="bnp", keys="x", pooled_path=True,
)  # fmt: skip
