"""Presets of the TE paper's code (``te-code``, ``tnp-kr-yml``, ``released-code``): ``tnp``,
``cnp``, ``convcnp``, ``pt-tnp-ist``, ``pt-tnp-perceiver``, ``te-tnp``, ``te-pt-tnp``
(``docs/fidelity.md``, sections TNP, TNP with KR blocks, CNP and ConvCNP in the TE code,
TE-TNP). Registers presets only.

The code: cambridge-mlg/tetnp @ 9f1f38d0a7360a2ee19485c2c1b0032f2ab8c46e (TE-TNP, TE-PT-TNP)
on cambridge-mlg/tnp @ e2adb62406a2382b47c4a10f06b2d38c7aa97001 (PT-TNPs, layers, MLPs,
likelihood). Its configs (``experiments/configs/models/*.yml``) share ``params``: ``embed_dim``
128, 8 heads of 16, 5 layers, ``norm_first: True``, ``feedforward_dim: embed_dim``, every MLP
(token embedder, decoder, TE kernel) ``num_layers: 2, width: embed_dim`` (two hidden layers),
and ``HeteroscedasticNormalLikelihood()``: ``std = softplus(raw) ** 0.5 + min_noise`` with
``min_noise = 0`` (``tnp/likelihoods/gaussian.py``). Every attention projects q, k and v
without bias (``tnp/networks/attention.py``, ``tetnp/networks/teattention.py``).
"""

from __future__ import annotations

from ..registry import register_preset

# Sizes of the configs' params (pseudo-token configs add num_latents: 32).
TE_CODE_SIZES = dict(
    dim_model=128, n_layers=5, n_heads=8, dim_head=16, dim_ff=128, n_embed_hidden=2,
    n_decoder_hidden=2,
)  # fmt: skip

# The head and attention choices every model of the code shares.
TE_CODE_HEAD = dict(scale_transform="sqrt_softplus", min_std=0.0)

# The TE attention of cambridge-mlg/tetnp tetnp/networks/teattention.py: no q/k/v biases,
# logits kernel(cat[x_n - x_m, q.k / sqrt(d_head)]) with the kernel an MLP of two hidden
# layers of embed_dim (TE Eq. 8, "post"); no phi, so no Eq. 10 location update.
TE_CODE_ATTENTION = dict(
    relative="post", qkv_bias=False, rho_order="rel-first", dim_relative_hidden=None,
    location_update=False,
)  # fmt: skip

# cambridge-mlg/tnp @ e2adb62406a2382b47c4a10f06b2d38c7aa97001, experiments/configs/models/
# tnp.yml: TNPTransformerEncoder with separate MultiHeadSelfAttentionLayer (context) and
# MultiHeadCrossAttentionLayer (targets) per layer, targets attending to the context after that
# layer's self-attention (tnp/networks/transformer.py); pre-norm (norm_first: True), one
# LayerNorm for queries and keys; to_q/to_k/to_v without bias, to_out with bias, scale
# head_dim^-0.5 (tnp/networks/attention.py); FF embed_dim -> embed_dim -> embed_dim, ReLU
# (attention_layers.py); tokens [x, y, 0] / [x, 0, 1] (tnp/utils/helpers.py
# preprocess_observations) through an MLP of two hidden layers of embed_dim; decoder MLP of two
# hidden layers of embed_dim; std = sqrt(softplus(raw)) + min_noise, min_noise = 0
# (tnp/likelihoods/gaussian.py). Sizes: its params (embed_dim 128, 5 layers, 8 heads of 16).
_CAMBRIDGE = {  # what every cambridge-mlg/tnp TNP shares (above)
    "norm": "pre",
    "tokens": "target-flagged",
    "qkv_bias": False,
    "scale_transform": "sqrt_softplus",
    "min_std": 0.0,
    **TE_CODE_SIZES,
    "dim_decoder_hidden": None,
}
register_preset("tnp", "te-code", share_weights=False, targets_read="updated", **_CAMBRIDGE)

# cambridge-mlg/tnp @ e2adb62, experiments/configs/models/tnp_kr.yml: TNPKRTransformerEncoder
# of MultiHeadKRAttentionLayer (one set of weights; context and targets both attend to the
# layer's input context, MultiHeadKRAttention in tnp/networks/attention.py); everything else
# as tnp.yml. tnpx's default `tnp` differs from it in q/k/v biases, the flag channel and the
# head's minimum (docs/fidelity.md).
register_preset("tnp", "tnp-kr-yml", share_weights=True, targets_read="input", **_CAMBRIDGE)

# cambridge-mlg/tnp @ e2adb62406a2382b47c4a10f06b2d38c7aa97001, experiments/configs/models/
# cnp.yml with tnp/models/cnp.py (CNPEncoder), tnp/networks/deepset.py (agg: mean),
# tnp/networks/mlp.py, tnp/likelihoods/gaussian.py: z_encoder MLP(dx + dy -> 128, 5 hidden
# layers of 128), nanmean over the context; z_decoder MLP(128 + dx -> 2 dy, 5 hidden layers) on
# [r, x_t]; scale = softplus(raw) ** 0.5 + min_noise, min_noise = 0.
register_preset(
    "cnp",
    "te-code",
    dim_model=128,
    n_encoder_hidden=5,
    n_decoder_hidden=5,
    scale_transform="sqrt_softplus",
    min_std=0.0,
)

# cambridge-mlg/tnp @ e2adb62406a2382b47c4a10f06b2d38c7aa97001, experiments/configs/models/
# convcnp.yml (the same in cambridge-mlg/tetnp @ 9f1f38d) with experiments/configs/generators/
# synthetic-1d.yml (grid_range = target_range [-4, 4]): tnp/models/convcnp.py ConvCNPEncoder
# (yc -> [yc, 1]; SetConvGridEncoder on construct_grid: linspace(-4, 4, 128); weights exp(-0.5
# sum_d (x_d - g_d)^2 / l_d^2), l = 1e-5 + softplus(param) per input dimension, init 0.1, no
# normalisation; z_encoder MLP(dy + 1 -> 32, two hidden layers of 32); CNN of 5 ConvBlocks
# conv(relu(z)), 32 channels, kernel 9 (tnp/networks/cnn.py); SetConvGridDecoder, its own
# length scale, init 0.1, plain weighted sum), TNPDecoder MLP(32 -> 2 dy, two hidden layers of
# 32), HeteroscedasticNormalLikelihood: std = softplus(raw) ** 0.5 + 0.
register_preset(
    "convcnp",
    "te-code",
    grid="fixed",
    grid_min=-4.0,
    grid_max=4.0,
    points_per_unit=16,
    grid_points=128,
    setconv_scales="per-dim",
    setconv_transform="softplus",
    init_length_scale=0.1,
    density="appended",
    readout_density=False,
    n_grid_encoder_hidden=2,
    n_readout_hidden=None,
    cnn="preact",
    dim_model=32,
    n_layers=5,
    kernel_size=9,
    n_decoder_hidden=2,
    scale_transform="sqrt_softplus",
    min_std=0.0,
)

# cambridge-mlg/tnp @ e2adb62 experiments/configs/models/ist.yml / lbanp.yml: ISTEncoder /
# PerceiverEncoder (tnp/networks/transformer.py) of pre-norm MultiHeadCrossAttentionLayer
# (norm1 on queries and keys) / MultiHeadSelfAttentionLayer, num_latents 32 latents from
# randn; ISTEncoder holds num_layers - 1 context (qtoc) layers; tokens xy_encoder([x, y, 0]) /
# ([x, 0, 1]) (tnp/models/tnp.py TNPEncoder with preprocess_observations); decoder and head as
# above.
_PT_CODE = dict(
    n_pseudo=32, tokens="target-flagged", qkv_bias=False, **TE_CODE_SIZES, **TE_CODE_HEAD
)
register_preset("pt-tnp-ist", "te-code", final_context_block=False, **_PT_CODE)
register_preset("pt-tnp-perceiver", "te-code", **_PT_CODE)

# cambridge-mlg/tetnp @ 9f1f38d, experiments/configs/models/tetnp.yml: one
# MultiHeadCrossTEAttentionLayer per layer serves the context (zc, zc) and the targets (zt, zc)
# (TETNPTransformerEncoder reuses mhca_layers as mhsa_layers), the targets reading the context
# after the layer's update (tetnp/networks/tetransformer.py); pre-norm with norm1 on queries and
# keys, FF E -> E -> E with ReLU (teattention_layers.py); TE attention as TE_CODE_ATTENTION
# (teattention.py); tokens y_encoder([y, 0]) / y_encoder([0, 1]) (tetnp/models/tetnp.py with
# tnp's preprocess_observations); decoder and head as above.
register_preset(
    "te-tnp",
    "released-code",
    share_weights=True,
    targets_read="updated",
    norm="pre",
    dim_decoder_hidden=None,
    **TE_CODE_SIZES,
    **TE_CODE_ATTENTION,
    **TE_CODE_HEAD,
)

# cambridge-mlg/tetnp @ 9f1f38d experiments/configs/models/teist.yml: TEISTEncoder
# (tetnp/networks/tetransformer.py) of MultiHeadCrossTEAttentionLayer, num_layers of each
# (ctoq, qtoc, qtot), no pseudo_token_initialiser, so pseudo-locations latent_inputs +
# mean(x_c) (psi = 1/N, not Eq. 11's attention), and no phi (no Eq. 10 update); TE attention,
# tokens, decoder and head as TE-TNP's (above). tetnp's PseudoTokenInitialiser (Eq. 11,
# tept_init.py) is pseudo_init="attention" with qkv_bias=False; no config uses it.
register_preset(
    "te-pt-tnp",
    "released-code",
    n_pseudo=32,
    pseudo_init="mean",
    final_context_block=True,
    **TE_CODE_SIZES,
    **TE_CODE_ATTENTION,
    **TE_CODE_HEAD,
)
