"""TNP-KR (KR paper, §3): a stack of KRBlocks, with exact or Performer attention.

Tokens are ``MLP([x, y])`` (hidden 256 -> ``dim_model``) for the context and ``MLP([x, 0])``
for the targets, with no context/target flag. Each KRBlock (Algorithm 2) updates the context
tokens by self-attention and the target tokens by cross-attention to the context, with one set
of weights for both; a final LayerNorm closes the stack and a head MLP (hidden 128) gives the
mean and ``std = max(exp(raw / 2), min_std)`` per output. Defaults are the TNP-KR code's sizes
(PROTOCOLS "TNP-KR model"): 6 blocks, 4 heads of 16, ``dim_model`` 64, feed-forward 128.

``tnp-kr-full`` attends exactly, through ``scaled_dot_product_attention`` with a broadcast key
mask: O(Nc^2 + Nc Nt) time, linear memory. ``tnp-kr-fast`` uses FAVOR+ (KR §3.2): linear in Nc
and Nt.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nn import (
    MLP,
    KRBlock,
    MultiHeadAttention,
    PerformerAttention,
    kr_context_states,
    kr_decode,
    kr_stack,
)
from .base import HeadHyper, NeuralProcess, likelihood_head, register


@dataclass
class TNPKRHyper(HeadHyper):
    dim_model: int = 64
    n_layers: int = 6
    n_heads: int = 4
    dim_head: int = 16
    dim_ff: int = 128
    dim_embed_hidden: int = 256
    dim_decoder_hidden: int = 128
    min_std: float = 0.0  # GPs in the TNP-KR code; 0.05 for images
    scale_transform: str = "exp"


@dataclass
class TNPKRFastHyper(TNPKRHyper):
    n_features: int = 64  # FAVOR+ random features per head
    feature_seed: int = 0  # layer i draws its features from seed 1000 * feature_seed + i
    redraw_every: int = 0  # training steps between redraws; 0 = fixed features (the paper's)
    stabilise: bool = True  # max-subtraction in exp: the same function, no underflow to 0
    feature_norm: str = "sqrt_d"  # row norms sqrt(d) (the TNP-KR code) | chi (unbiased)


class _TNPKR(NeuralProcess):
    Hyper = TNPKRHyper

    def __init__(self, dim_x: int, dim_y: int, hyper: TNPKRHyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.embed = MLP(dim_x + dim_y, d, hyper.dim_embed_hidden, n_hidden=1)
        self.blocks = nn.ModuleList(
            KRBlock(d, hyper.dim_ff, self._attention(layer)) for layer in range(hyper.n_layers)
        )
        self.norm = nn.LayerNorm(d)
        self.decoder = MLP(d, self.likelihood.n_params, hyper.dim_decoder_hidden, n_hidden=1)

    def _attention(self, layer: int) -> nn.Module:  # pragma: no cover - abstract
        raise NotImplementedError

    def _context_tokens(self, xc, yc):
        return self.embed(torch.cat([xc, yc], -1))

    def _target_tokens(self, xt):
        return self.embed(torch.cat([xt, xt.new_zeros(*xt.shape[:2], self.dim_y)], -1))

    def _head(self, zt):
        return self.likelihood(self.decoder(self.norm(zt)))

    def _predict(self, xc, yc, xt, mask_c):
        zt = kr_stack(self.blocks, self._target_tokens(xt), self._context_tokens(xc, yc), mask_c)
        return self._head(zt)

    def _encode_context(self, xc, yc, mask_c):
        return (kr_context_states(self.blocks, self._context_tokens(xc, yc), mask_c),)

    def _decode_targets(self, state, xt):
        (states,) = state
        return self._head(kr_decode(self.blocks, self._target_tokens(xt), states))


@register("tnp-kr-full")
class TNPKRFull(_TNPKR):
    """TNP-KR with exact softmax attention in every KRBlock (KR Algorithm 2)."""

    summary = "TNP-KR: KRBlocks (context self-attn + target cross-attn, shared weights; KR Alg. 2)"

    def _attention(self, layer: int) -> nn.Module:
        return MultiHeadAttention(self.hyper.dim_model, self.hyper.n_heads, self.hyper.dim_head)


@register("tnp-kr-fast")
class TNPKRFast(_TNPKR):
    """TNP-KR with Performer FAVOR+ attention in every KRBlock (KR §3.2): linear in Nc and Nt."""

    Hyper = TNPKRFastHyper
    summary = "TNP-KR with Performer (FAVOR+) attention in the KRBlocks: linear in Nc and Nt"

    def _attention(self, layer: int) -> nn.Module:
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
        )
