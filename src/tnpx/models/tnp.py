"""Transformer neural processes: TNP-D (Nguyen & Grover, 2022) and its efficient form.

Both are the :class:`~tnpx.models.transformer.TransformerNP` skeleton with, by default,
flagged tokens (``MLP([x, y, 1])`` for context, ``MLP([x, 0, 0])`` for targets), softmax
attention, pre-norm blocks, one block per layer for both streams, and targets reading each
layer's *input* context (TNP-KR Algorithm 2). The two compute the same function with the same
parameters; they differ only in how:

- ``tnp-d``: masked self-attention over the concatenated ``[context; targets]`` tokens, keys
  the context only, as the original TNP-D (quadratic in ``n_ctx + n_tgt``);
- ``tnp``: per layer, context self-attention plus target-to-context cross-attention, which
  never forms target-target scores (``O(n_ctx^2 + n_ctx n_tgt)``).

Streamed prediction is the same for both (the context is encoded once). Besides the
skeleton's options (``share_weights``, ``targets_read``, ``norm``, ``dim_decoder_hidden``)
they take the token layout (``tokens``) and whether the query/key/value projections have
biases (``qkv_bias``). ``tnp-d`` uses the masked joint form only where it computes the same
function (shared weights, ``targets_read="input"``); otherwise it runs the stream form.

Presets (``model.preset``) select the function the authors' code computes; see
``docs/fidelity.md`` for every choice and what stays different:

- ``tnp`` ``te-code``: cambridge-mlg/tnp ``experiments/configs/models/tnp.yml``, the TE
  paper's TNP baseline;
- ``tnp`` ``tnp-kr-yml``: cambridge-mlg/tnp ``experiments/configs/models/tnp_kr.yml``;
- ``tnp-d`` ``tnpd-code``: tung-nd/TNP-pytorch ``regression/models/tnpd.py`` with
  ``regression/configs/gp/tnpd.yaml``;
- ``tnp-d`` ``kr-code``: the TNP-KR paper's TNP-D, MLGlobalHealth/dl4bi
  ``dl4bi/meta_regression/tnp_d.py`` with ``benchmarks/meta_regression/configs/gp/model/
  tnp_d.yaml``.

A preset is the reference model at the sizes of that config; sizes given in a config or to
``build_model`` replace the preset's (the structure and the head stay the reference's).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..nn import TOKEN_KINDS, MultiHeadAttention, TokenEmbedder, check_option
from .base import register, register_preset
from .transformer import TransformerHyper, TransformerNP


@dataclass
class TNPHyper(TransformerHyper):
    tokens: str = "flagged"  # flagged [x,y,1]/[x,0,0] | target-flagged [x,y,0]/[x,0,1] | plain
    qkv_bias: bool = True  # biases on the query, key and value projections
    norm_eps: float = 1e-5  # LayerNorm epsilon (torch's; Flax's, in the TNP-KR code: 1e-6)


class _TNP(TransformerNP):
    Hyper = TNPHyper

    def _embedder(self) -> TokenEmbedder:
        h = self.hyper
        check_option("tokens", h.tokens, [k for k in TOKEN_KINDS if k != "y-only"])
        return TokenEmbedder(
            h.tokens,
            self.dim_x,
            self.dim_y,
            h.dim_model,
            h.dim_model,
            h.n_embed_hidden,
            missing_outputs=h.missing_outputs,
        )

    def _attention(self, layer: int) -> nn.Module:
        h = self.hyper
        return MultiHeadAttention(h.dim_model, h.n_heads, h.dim_head, qkv_bias=h.qkv_bias)


@register("tnp-d")
class TNPD(_TNP):
    """TNP-D: masked self-attention over ``[context; targets]``; keys are context tokens only."""

    summary = "TNP-D: masked self-attention over context and target tokens (Nguyen & Grover 2022)"
    masked_joint_forward = True


@register("tnp")
class TNP(_TNP):
    """TNP computed as MHSA over the context and MHCA from targets to context, per layer."""

    summary = "TNP-D's function computed as context MHSA + target-to-context MHCA, per layer"


# The sizes every preset states, so that a preset alone builds the reference model.
_TE_SIZES = dict(
    dim_model=128, n_layers=5, n_heads=8, dim_head=16, dim_ff=128, n_embed_hidden=2,
    n_decoder_hidden=2, dim_decoder_hidden=None,
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
    **_TE_SIZES,
}
register_preset("tnp", "te-code", share_weights=False, targets_read="updated", **_CAMBRIDGE)

# cambridge-mlg/tnp @ e2adb62, experiments/configs/models/tnp_kr.yml: TNPKRTransformerEncoder
# of MultiHeadKRAttentionLayer (one set of weights; context and targets both attend to the
# layer's input context, MultiHeadKRAttention in tnp/networks/attention.py); everything else
# as tnp.yml. tnpx's default `tnp` differs from it in q/k/v biases, the flag channel and the
# head's minimum (docs/fidelity.md).
register_preset("tnp", "tnp-kr-yml", share_weights=True, targets_read="input", **_CAMBRIDGE)

# tung-nd/TNP-pytorch @ 73df9225ab584b6148645851d82f96df518da78a, regression/models/tnp.py and
# tnpd.py with regression/configs/gp/tnpd.yaml: nn.TransformerEncoderLayer (post-norm, ReLU,
# dropout 0, biases on every projection, d_model / nhead per head) under a mask that lets
# every token attend to the context only; tokens [x, y] / [x, 0] through build_mlp of depth
# emb_depth = 4 (three hidden layers of d_model); predictor Linear(d_model, dim_feedforward),
# ReLU, Linear(dim_feedforward, 2 dim_y); std = exp(raw) (bound_std False). Sizes: that
# config (d_model 64, 6 layers, 4 heads, dim_feedforward 128).
_TNPD_CODE = dict(
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
register_preset("tnp-d", "tnpd-code", **_TNPD_CODE)

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
        **_TNPD_CODE,
        "norm_eps": 1e-6,
        "scale_transform": "exp_raw_or_affine_softplus",
        "min_std": 0.0,
    },
)
