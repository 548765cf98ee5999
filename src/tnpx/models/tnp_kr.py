"""TNP-KR (KR paper, §3): the transformer skeleton with the TNP-KR code's choices.

Tokens are ``MLP([x, y])`` (hidden 256 -> ``dim_model``) for the context and ``MLP([x, 0])``
for the targets, with no context/target flag. Each KRBlock (Algorithm 2) updates the context
tokens by self-attention and the target tokens by cross-attention to the block's input
context, with one set of weights for both; a final LayerNorm closes the stack and a head MLP
(hidden 128) gives the mean and the standard deviation from ``raw / 2`` as a log-std. Defaults
are the TNP-KR code's sizes (PROTOCOLS "TNP-KR model"): 6 blocks, 4 heads of 16, ``dim_model``
64, feed-forward 128.

``tnp-kr-full`` attends exactly, through ``scaled_dot_product_attention`` with a broadcast key
mask: O(Nc^2 + Nc Nt) time, linear memory. ``tnp-kr-fast`` uses FAVOR+ (KR §3.2): linear in Nc
and Nt.

The defaults are the code's structure, sizes and FAVOR+ construction but not quite its
function: the preset ``kr-code`` (both models; :mod:`tnpx.models.presets.kr_code`) is
MLGlobalHealth/dl4bi @ 0205a5ca (``dl4bi/meta_regression/tnp_kr.py``,
``dl4bi/core/transformer.py`` ``KRBlock`` / ``KRStack``, ``dl4bi/core/attention.py``), which
differs from the defaults in the LayerNorm epsilon (Flax's 1e-6), the head (``std = min_std +
(1 - min_std) exp(raw / 2)``, not ``max(exp(raw / 2), min_std)``: the same at ``min_std = 0``)
and, for FAVOR+, no stabiliser and one feature draw per layer shared by its heads, from an
uncorrected QR. See ``docs/fidelity.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..nn import PerformerAttention
from .registry import register
from .transformer import TransformerHyper, TransformerNP


@dataclass
class TNPKRHyper(TransformerHyper):
    # The TNP-KR code's structure (KR Algorithm 2), not options: one block per layer for both
    # streams, targets reading the layer's input context, pre-norm blocks, tokens MLP([x, y])
    # with one hidden layer (of dim_embed_hidden), a decoder of one hidden layer.
    share_weights: ClassVar[bool] = True
    targets_read: ClassVar[str] = "input"
    norm: ClassVar[str] = "pre"
    missing_outputs: ClassVar[bool] = False
    tokens: ClassVar[str] = "plain"
    n_embed_hidden: ClassVar[int] = 1
    n_decoder_hidden: ClassVar[int] = 1
    dim_model: int = 64
    n_layers: int = 6
    n_heads: int = 4
    dim_head: int = 16
    dim_ff: int = 128
    dim_embed_hidden: int = 256
    dim_decoder_hidden: int = 128
    min_std: float = 0.0  # GPs in the TNP-KR code; 0.05 for MNIST
    scale_transform: str = "exp"  # the code's head is affine_exp (preset kr-code)
    norm_eps: float = 1e-5  # LayerNorm epsilon (the code's Flax LayerNorm: 1e-6)


@dataclass
class TNPKRFastHyper(TNPKRHyper):
    n_features: int = 64  # FAVOR+ random features per head
    feature_seed: int = 0  # layer i draws its features from seed 1000 * feature_seed + i
    redraw_every: int = 0  # training steps between redraws; 0 = fixed features (the paper's)
    stabilise: bool = True  # max-subtraction in exp: the same function, no underflow to 0
    feature_norm: str = "sqrt_d"  # row norms sqrt(d) (the TNP-KR code) | chi (unbiased)
    feature_qr: str = "haar"  # haar (sign-corrected QR) | plain (the TNP-KR code)
    feature_heads: str = "per-head"  # per-head draws | shared (one per layer: the TNP-KR code)


class _TNPKR(TransformerNP):
    Hyper = TNPKRHyper
    final_norm = True


@register("tnp-kr-full")
class TNPKRFull(_TNPKR):
    """TNP-KR with exact softmax attention in every KRBlock (KR Algorithm 2)."""

    summary = "TNP-KR: KRBlocks (context self-attn + target cross-attn, shared weights; KR Alg. 2)"


@register("tnp-kr-fast")
class TNPKRFast(_TNPKR):
    """TNP-KR with Performer FAVOR+ attention in every KRBlock (KR §3.2): linear in Nc and Nt."""

    Hyper = TNPKRFastHyper
    summary = "TNP-KR with Performer (FAVOR+) attention in the KRBlocks: linear in Nc and Nt"

    def _attention(self, layer: int) -> PerformerAttention:
        h = self.hyper
        return PerformerAttention(
            h.dim_model,
            h.n_heads,
            h.dim_head,
            n_features=h.n_features,
            seed=1000 * h.feature_seed + layer,
            redraw_every=h.redraw_every,
            stabilise=h.stabilise,
            feature_norm=h.feature_norm,
            feature_qr=h.feature_qr,
            feature_heads=h.feature_heads,
        )
