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

Presets (``model.preset``, :mod:`tnpx.models.presets`) select the function the authors' code
computes (``docs/fidelity.md``): ``tnp`` ``te-code`` and ``tnp-kr-yml`` (cambridge-mlg/tnp),
``tnp-d`` ``tnpd-code`` (tung-nd/TNP-pytorch) and ``kr-code`` (MLGlobalHealth/dl4bi).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..nn import MultiHeadAttention
from .registry import register
from .transformer import XY_TOKENS, TransformerHyper, TransformerNP


@dataclass
class TNPHyper(TransformerHyper):
    tokens: str = "flagged"  # flagged [x,y,1]/[x,0,0] | target-flagged [x,y,0]/[x,0,1] | plain
    qkv_bias: bool = True  # biases on the query, key and value projections
    norm_eps: float = 1e-5  # LayerNorm epsilon (torch's; Flax's, in the TNP-KR code: 1e-6)


class _TNP(TransformerNP):
    Hyper = TNPHyper
    hyper: TNPHyper
    token_kinds = XY_TOKENS

    def _attention(self, layer: int) -> MultiHeadAttention:
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
