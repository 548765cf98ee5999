"""Presets of MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c, the TNP-KR
paper's code (``kr-code``): every model of the KR tables (``docs/fidelity.md``, section "The
TNP-KR paper's code"). Registers presets only."""

from __future__ import annotations

import math

from ..registry import register_preset
from .tnpd_code import TNPD_CODE

# MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c (the TNP-KR paper's code),
# dl4bi/meta_regression/tnp_d.py with benchmarks/meta_regression/configs/gp/model/tnp_d.yaml:
# tokens [x, y] / [x, 0] through MLP([64, 64, 64, 64]); TransformerEncoder of 6
# TransformerEncoderBlock(pre_norm=False) (dl4bi/core/transformer.py: x = LN(x + attn(x)),
# x = LN'(x + MLP([128, 64])(x)), Flax LayerNorm eps 1e-6, no final norm) over [context;
# targets] with keys the first valid_lens_ctx tokens (the context); MultiHeadAttention of 4
# heads of 16 with biased q/k/v/out Dense layers; head MLP([128, 2 dim_y]); std = exp(raw)
# where min_std = 0, else min_std + (1 - min_std) softplus(raw). The tnpd-code preset but for
# the LayerNorm epsilon and the min_std switch.
register_preset(
    "tnp-d",
    "kr-code",
    **{
        **TNPD_CODE,
        "norm_eps": 1e-6,
        "scale_transform": "exp_raw_or_affine_softplus",
        "min_std": 0.0,
    },
)


# MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c (the TNP-KR paper's code),
# benchmarks/meta_regression/configs/gp/model/tnp_kr_{full,fast}.yaml: TNPKR
# (dl4bi/meta_regression/tnp_kr.py) with embed_s_f MLP([256, 64]) on [x, y] / [x, 0], a KRStack
# of 6 KRBlocks (dl4bi/core/transformer.py: pre-norm, one Flax LayerNorm (eps 1e-6) on queries
# and keys, the same MultiHeadAttention for both streams, keys the block's input context, a
# second LayerNorm and MLP([128, 64]) on both), final LayerNorm, head MLP([128, 2 dim_y]),
# std = min_std + (1 - min_std) exp(raw / 2). MultiHeadAttention (dl4bi/core/attention.py):
# 4 heads, q/k/v/out single Dense(64) layers with bias, scores q.k / sqrt(16). FAVOR+
# (FastAttention): 64 features from gaussian_orf (QR blocks without sign correction, rows
# scaled by sqrt(d)), one projection per layer for all heads, q and k scaled by d^-1/4,
# phi = exp(x W^T - |x|^2 / 2) / sqrt(m) without max-subtraction, masked keys zeroed after
# phi, normaliser clamped at 1e-6; never redrawn in training (vanilla_train_step).
_KR_CODE = dict(
    dim_model=64, n_layers=6, n_heads=4, dim_head=16, dim_ff=128, dim_embed_hidden=256,
    dim_decoder_hidden=128, norm_eps=1e-6, scale_transform="affine_exp", min_std=0.0,
)  # fmt: skip
register_preset("tnp-kr-full", "kr-code", **_KR_CODE)
register_preset(
    "tnp-kr-fast",
    "kr-code",
    **_KR_CODE,
    n_features=64,
    redraw_every=0,
    stabilise=False,
    feature_norm="sqrt_d",
    feature_qr="plain",
    feature_heads="shared",
)


# MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c (the TNP-KR paper's code),
# dl4bi/meta_regression/cnp.py with benchmarks/meta_regression/configs/gp/model/cnp.yaml:
# r = mean over the valid context of MLP([128] * 6)([x, y]) (5 hidden layers, ReLU); decoder
# MLP([128] * 4 + [2 dim_y]) on [r, x_t]; std = min_std + (1 - min_std) softplus(raw),
# min_std = 0 for the GPs (0.05 for MNIST).
register_preset(
    "cnp",
    "kr-code",
    dim_model=128,
    n_encoder_hidden=5,
    n_decoder_hidden=4,
    scale_transform="affine_softplus",
    min_std=0.0,
)


# The TNP-KR code's NP/ANP: one z, reconstruction under q(z | C) plus KL(q(z | T) || q(z | C)),
# and scored with that single z (its LL is this model's estimate with K = 1).
# MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c, dl4bi/meta_regression/np.py
# with benchmarks/meta_regression/configs/gp/model/np.yaml: r = mean MLP([128] * 6)([x, y]);
# q(z | C) from mean MLP([128] * 3)([x, y]) through MLP([128, 256]), sigma = 0.1 + 0.9
# sigmoid; decoder MLP([128] * 4 + [2 dim_y]) on [r, z, x]; std = min_std + (1 - min_std)
# softplus(raw); n_z = 1; trained by npf_elbo_train_step (train_utils.py).
register_preset(
    "np",
    "kr-code",
    objective="kr-code",
    n_samples=1,
    n_train_samples=1,
    dim_model=128,
    dim_latent=128,
    n_encoder_hidden=5,
    n_latent_hidden=2,
    n_decoder_hidden=4,
    scale_transform="affine_softplus",
    min_std=0.0,
)


# The TNP-KR code's CANP / ANP: MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c,
# dl4bi/meta_regression/{canp,anp}.py, dl4bi/core/{attention,mlp}.py, configs/gp/model/
# {canp,anp}.yaml: tokens enc_det = MLP([128] * 3)([x, y]) (2 hidden layers); self_attn_det a
# bare MultiHeadAttention (8 heads of 16, q/k/v/out Dense with bias; no residual, LayerNorm or
# feed-forward); cross_attn (the same kind) with queries embed_s(x_t), keys embed_s(x_c),
# embed_s = MLP([128, 128]) (1 hidden layer), values the tokens; decoder MLP([128] * 4 + [2])
# on [r, x] (CANP) or [x, r, z] (ANP); std = min_std + (1 - min_std) softplus(raw). ANP's
# latent path: enc_lat = MLP([128] * 3), a bare self-attention, masked mean, z_dist =
# MLP([128, 256]), sigma = 0.1 + 0.9 sigmoid; n_z = 1; trained by npf_elbo_train_step.
_KR_ATTENTIVE = dict(
    dim_model=128, n_layers=1, n_heads=8, dim_head=16, n_embed_hidden=2, n_decoder_hidden=4,
    layer="bare", keys="x", n_key_hidden=1, scale_transform="affine_softplus", min_std=0.0,
)  # fmt: skip
register_preset("canp", "kr-code", **_KR_ATTENTIVE)
register_preset(
    "anp",
    "kr-code",
    objective="kr-code",
    n_samples=1,
    n_train_samples=1,
    dim_latent=128,
    decoder_order="x-r-z",
    **_KR_ATTENTIVE,
)


# The TNP-KR code (MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c,
# dl4bi/meta_regression/{bnp,banp}.py, train_utils.py bootstrap_train_step, evaluate,
# configs/gp/model/{bnp,banp}.yaml): 4 bootstrap samples at training and evaluation, scored per
# target point (logsumexp over K - log K); decoder h = dec_hid([r, x]) (+ dec_boot(r~)), both
# Dense(128) with bias, then dec_dist = MLP([128] * 3 + [2]); std = min_std + (1 - min_std)
# softplus(raw); loss (NLL_boot + NLL_base) / 2 with gradients through the bootstrap contexts
# (sample_with_replacement stops them only at the data); BNP's encoder MLP([128] * 6), mean;
# BANP's the CANP kr-code path, whose paired-bootstrap fit keys the cross-attention with the
# original context inputs (decode(r_ctx_boot, s_ctx_rep, s_ctx_rep)).
_KR_BOOTSTRAP = dict(
    n_bootstrap=4, n_train_bootstrap=4, ll_estimate="marginal", dim_model=128,
    n_decoder_hidden=3, boot_adapter="dense", bootstrap_loss="mean", bootstrap_grad=True,
    scale_transform="affine_softplus", min_std=0.0,
)  # fmt: skip
register_preset("bnp", "kr-code", **_KR_BOOTSTRAP, n_encoder_hidden=5)
register_preset(
    "banp", "kr-code", **_KR_BOOTSTRAP, n_layers=1, n_heads=8, dim_head=16, n_embed_hidden=2,
    layer="bare", keys="x", n_key_hidden=1, pair_keys="original",
)  # fmt: skip


# The TNP-KR code's ConvCNP (MLGlobalHealth/dl4bi @ 0205a5ca, dl4bi/meta_regression/convcnp.py,
# dl4bi/core/conv.py, benchmarks/meta_regression/configs/gp/model/convcnp.yaml): a grid
# linspace(-2.5, 2.5, int(64 * 5)) shared by every task; ConvDeepSet (Euclidean RBF with
# a length scale per channel, exp(log_lengthscale) initialised at exp(-1); [density, data /
# (density + 1e-8)]; Dense(128)); ConvCNPNet of 5 ConvCNPBlocks (BatchNorm, ReLU, depthwise
# conv (kernel 19), pointwise conv, BatchNorm, ReLU, depthwise conv, pointwise conv of
# (h + residual); 128 channels), whose BatchNorms read their initial running statistics in
# training too (ConvCNP calls conv_net without `training`); a ConvDeepSet read-out from the
# grid to the targets with its own density channel and Dense(128); head MLP([128] * 4 + [2]),
# std = min_std + (1 - min_std) softplus(raw). 1D only (the code's grid has one axis).
register_preset(
    "convcnp",
    "kr-code",
    grid="fixed",
    grid_min=-2.5,
    grid_max=2.5,
    points_per_unit=64,
    grid_points=None,
    setconv_scales="per-channel",
    setconv_transform="exp",
    init_length_scale=math.exp(-1.0),
    density="normalised",
    readout_density=True,
    n_grid_encoder_hidden=0,
    n_readout_hidden=0,
    cnn="resnet",
    batch_norm="frozen",
    dim_model=128,
    n_layers=5,
    kernel_size=19,
    n_decoder_hidden=4,
    scale_transform="affine_softplus",
    min_std=0.0,
)


# Not a model of the TNP-KR code (the exact GP posterior, nothing trained): its
# ``kr-code`` preset changes nothing, so the KR exact-protocol
# configs (``model.preset: kr-code``) serve this row too.
register_preset("gp-oracle", "kr-code")


# Not a model of the TNP-KR code (a reference row of tnpx, nothing trained): its
# ``kr-code`` preset changes nothing, so the KR exact-protocol
# configs (``model.preset: kr-code``) serve this row too.
register_preset("context-moments", "kr-code")
