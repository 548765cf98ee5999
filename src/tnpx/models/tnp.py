"""Transformer neural processes: TNP-D (Nguyen & Grover, 2022) and its efficient form.

Both models compute the same function with the same parameters:
tokens ``z = MLP([x, y, 1])`` for context and ``MLP([x, 0, 0])`` for targets (the last
channel flags an observation); each layer lets context tokens attend to context tokens and
target tokens attend to context tokens only; a decoder MLP maps target tokens to the
likelihood. ``tnp-d`` does this as masked self-attention over the concatenated tokens, as the
original TNP-D; ``tnp`` as MHSA over the context plus MHCA from targets to context (TE paper),
which never forms target-target scores.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nn import MLP, KRBlock, MultiHeadAttention, kr_context_states, kr_decode, kr_stack
from .base import HeadHyper, NeuralProcess, likelihood_head, register


@dataclass
class TNPHyper(HeadHyper):
    dim_model: int = 128
    n_layers: int = 5
    n_heads: int = 8
    dim_head: int = 16
    dim_ff: int = 128
    n_embed_hidden: int = 2
    n_decoder_hidden: int = 2


class _TransformerNP(NeuralProcess):
    Hyper = TNPHyper

    def __init__(self, dim_x: int, dim_y: int, hyper: TNPHyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.embed = MLP(dim_x + dim_y + 1, d, d, hyper.n_embed_hidden)
        self.layers = nn.ModuleList(
            KRBlock(d, hyper.dim_ff, MultiHeadAttention(d, hyper.n_heads, hyper.dim_head))
            for _ in range(hyper.n_layers)
        )
        self.decoder = MLP(d, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def tokens(self, xc, yc, xt) -> tuple[torch.Tensor, torch.Tensor]:
        """Context tokens ``[b, n_ctx, d]`` from ``[x, y, 1]``; target tokens from ``[x, 0, 0]``."""
        flag_c = xc.new_ones(*xc.shape[:2], 1)
        zc = self.embed(torch.cat([xc, yc, flag_c], -1))
        blank = xt.new_zeros(*xt.shape[:2], self.dim_y + 1)
        zt = self.embed(torch.cat([xt, blank], -1))
        return zc, zt

    def encode(self, zc, zt, mask_c) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict(self, xc, yc, xt, mask_c):
        zc, zt = self.tokens(xc, yc, xt)
        return self.likelihood(self.decoder(self.encode(zc, zt, mask_c)))

    # Streaming: both models compute a KR stack's function, whose context stream never reads
    # the targets, so each layer's context tokens are computed once (for tnp-d too: its masked
    # form is the same function, see the module docstring).
    def _encode_context(self, xc, yc, mask_c):
        zc, _ = self.tokens(xc, yc, xc[:, :0])
        return (kr_context_states(self.layers, zc, mask_c),)

    def _decode_targets(self, state, xt):
        (states,) = state
        _, zt = self.tokens(xt[:, :0], xt.new_zeros(*xt.shape[:1], 0, self.dim_y), xt)
        return self.likelihood(self.decoder(kr_decode(self.layers, zt, states)))


@register("tnp-d")
class TNPD(_TransformerNP):
    """TNP-D: masked self-attention over ``[context; targets]``; keys are context tokens only.

    The key mask is a broadcast ``[b, 1, 1, n_ctx + n_tgt]`` mask, so memory stays linear
    on the fused SDPA kernels; compute is quadratic in ``n_ctx + n_tgt``, as in TNP-D.
    """

    summary = "TNP-D: masked self-attention over context and target tokens (Nguyen & Grover 2022)"

    def encode(self, zc, zt, mask_c):
        b, n_ctx, n_tgt = zc.shape[0], zc.shape[1], zt.shape[1]
        ctx_keys = mask_c if mask_c is not None else zc.new_ones(b, n_ctx, dtype=torch.bool)
        key_mask = torch.cat([ctx_keys, zt.new_zeros(b, n_tgt, dtype=torch.bool)], 1)
        z = torch.cat([zc, zt], 1)
        for layer in self.layers:
            z = layer(z, z, key_mask, update_keys=False)[0]
        return z[:, n_ctx:]


@register("tnp")
class TNP(_TransformerNP):
    """TNP computed as MHSA over the context and MHCA from targets to context, per layer."""

    summary = "TNP-D's function computed as context MHSA + target-to-context MHCA (TE paper)"

    def encode(self, zc, zt, mask_c):
        # Each layer: targets cross-attend to the layer's input context, the context
        # self-attends, one set of weights (a KRBlock stack; TNP-KR Algorithm 2).
        return kr_stack(self.layers, zt, zc, mask_c)
