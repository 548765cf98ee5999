"""Attentive neural processes (Kim et al., 2019): ``canp`` (deterministic) and ``anp`` (plus
the latent path of :mod:`~tnpx.models.latent`).

Deterministic path (KR §2.3.1): context tokens ``h = MLP([x_c, y_c])`` pass
through ``n_layers`` pre-norm self-attention blocks, then each target reads them by
cross-attention from the query ``MLP(x_t)``: ``r_t = CrossAttn(MLP(x_t), h)``. The decoder maps
``[r_t, x_t]`` (``canp``) or ``[r_t, z, x_t]`` (``anp``) to the Gaussian head.

Cross-attention keys and values are both the self-attended context tokens (which carry ``x_c``
and ``y_c``): :class:`~tnpx.nn.MultiHeadAttention` takes one tensor for both. The ANP paper's
form, keys ``MLP(x_c)`` and values ``h``, needs a separate ``values`` input there.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nn import MLP, PreNormAttentionBlock
from .base import HeadHyper, NeuralProcess, likelihood_head, register, register_preset
from .latent import LatentEncoder, LatentNP, LatentOptions


@dataclass
class CANPHyper(HeadHyper):
    dim_model: int = 128
    n_layers: int = 2  # self-attention blocks over the context (ANP: 2)
    n_heads: int = 8
    dim_head: int = 16
    dim_ff: int = 128
    n_embed_hidden: int = 2
    n_decoder_hidden: int = 2


def self_attention_blocks(hyper: CANPHyper) -> list[PreNormAttentionBlock]:
    """``n_layers`` pre-norm blocks of size ``dim_model``."""
    return [
        PreNormAttentionBlock(hyper.dim_model, hyper.n_heads, hyper.dim_head, hyper.dim_ff)
        for _ in range(hyper.n_layers)
    ]


class AttentiveEncoder(nn.Module):
    """``r(x_q) = CrossAttn(MLP(x_q), SelfAttn^L(MLP([x_c, y_c])))``; padded context points are
    masked out of every attention."""

    def __init__(self, dim_x: int, dim_y: int, hyper: CANPHyper):
        super().__init__()
        d = hyper.dim_model
        self.embed_context = MLP(dim_x + dim_y, d, d, hyper.n_embed_hidden)
        self.embed_query = MLP(dim_x, d, d, hyper.n_embed_hidden)
        self.self_attention = nn.ModuleList(self_attention_blocks(hyper))
        self.cross_attention = PreNormAttentionBlock(d, hyper.n_heads, hyper.dim_head, hyper.dim_ff)

    def forward(self, xc, yc, xq, mask_c) -> torch.Tensor:
        """xc ``[b, n_ctx, dim_x]``, yc ``[b, n_ctx, dim_y]``, xq ``[b, n_q, dim_x]``,
        mask_c ``[b, n_ctx]`` or None -> ``[b, n_q, dim_model]``."""
        h = self.embed_context(torch.cat([xc, yc], -1))
        for block in self.self_attention:
            h = block(h, h, mask_c)
        return self.cross_attention(self.embed_query(xq), h, mask_c)


@register("canp")
class CANP(NeuralProcess):
    """Conditional ANP: :class:`AttentiveEncoder`, decoder ``MLP([r_t, x_t])``."""

    Hyper = CANPHyper
    summary = "Conditional attentive NP: context self-attention, target-to-context cross-attention"

    def __init__(self, dim_x: int, dim_y: int, hyper: CANPHyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.encoder = AttentiveEncoder(dim_x, dim_y, hyper)
        self.decoder = MLP(d + dim_x, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _predict(self, xc, yc, xt, mask_c):
        r = self.encoder(xc, yc, xt, mask_c)
        return self.likelihood(self.decoder(torch.cat([r, xt], -1)))


@dataclass
class ANPHyper(LatentOptions, CANPHyper):
    pass


@register("anp")
class ANP(LatentNP):
    """ANP: the ``canp`` deterministic path plus a latent path ``q(z | C)`` whose tokens
    ``MLP([x, y])`` self-attend before mean pooling; decoder ``MLP([r_t, z, x_t])``."""

    Hyper = ANPHyper
    summary = (
        "Attentive NP: CANP paths plus a global latent z from q(z given context); K-sample mixture"
    )

    def __init__(self, dim_x: int, dim_y: int, hyper: ANPHyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.deterministic = AttentiveEncoder(dim_x, dim_y, hyper)
        blocks = self_attention_blocks(hyper)
        self.latent = LatentEncoder(
            dim_x + dim_y, d, hyper.dim_latent, hyper.n_embed_hidden, blocks
        )


register_preset("anp", "kr-code", objective="kr-code", n_samples=1, n_train_samples=1)
