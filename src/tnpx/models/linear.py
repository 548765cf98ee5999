"""Linear-cost TNPs of the thesis (§7.3-7.4): ``linear-tnp`` and ``hypermix-np``.

Both keep the TNP layout of :mod:`tnpx.models.tnp` and replace only the attention: tokens
``MLP([x, y, 1])`` for the context and ``MLP([x, 0, 0])`` for the targets; each layer updates
the context by self-mixing and the targets by cross-mixing to the layer's input context, with
one set of weights for both (a :class:`~tnpx.nn.KRBlock`, which computes exactly the ``tnp``
model's layer); a decoder MLP maps target tokens to the likelihood. Sizes default to the TE
architecture (PROTOCOLS "Architecture defaults"). Neither model is translation equivariant:
tokens contain x (thesis §7.4, "Lack of translation equivariance").

- ``linear-tnp``: multi-head linear attention, ``phi = elu + 1`` (thesis Eq. 7.3.1).
- ``hypermix-np``: HyperMixer token mixing ``H = h_q(Z_q) GELU(h_k(Z_k)^T Z_k)`` (thesis Eq.
  7.4.1-7.4.2 in cross form, see :mod:`tnpx.nn.hypermixer`).

Cost O((Nc + Nt) d^2) per layer: linear in the number of context and target points.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nn import MLP, HyperMixing, KRBlock, LinearAttention, kr_context_states, kr_decode, kr_stack
from .base import HeadHyper, NeuralProcess, likelihood_head, register
from .tnp import TNPHyper


@dataclass
class HyperMixNPHyper(HeadHyper):
    dim_model: int = 128
    n_layers: int = 5
    dim_ff: int = 128  # feed-forward width, also the hidden width of the hypernetworks
    dim_mixing: int = 128  # p: generated weights per token
    aggregate: str = "sum"  # sum over context tokens (Eq. 7.4.2) | mean
    n_embed_hidden: int = 2
    n_decoder_hidden: int = 2


class _LinearTNPBase(NeuralProcess):
    def __init__(self, dim_x: int, dim_y: int, hyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.embed = MLP(dim_x + dim_y + 1, d, d, hyper.n_embed_hidden)
        self.blocks = nn.ModuleList(
            KRBlock(d, hyper.dim_ff, self._mixing()) for _ in range(hyper.n_layers)
        )
        self.decoder = MLP(d, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _mixing(self) -> nn.Module:  # pragma: no cover - abstract
        raise NotImplementedError

    def _context_tokens(self, xc, yc):
        return self.embed(torch.cat([xc, yc, xc.new_ones(*xc.shape[:2], 1)], -1))

    def _target_tokens(self, xt):
        return self.embed(torch.cat([xt, xt.new_zeros(*xt.shape[:2], self.dim_y + 1)], -1))

    def _predict(self, xc, yc, xt, mask_c):
        zt = kr_stack(self.blocks, self._target_tokens(xt), self._context_tokens(xc, yc), mask_c)
        return self.likelihood(self.decoder(zt))

    def _encode_context(self, xc, yc, mask_c):
        return (kr_context_states(self.blocks, self._context_tokens(xc, yc), mask_c),)

    def _decode_targets(self, state, xt):
        (states,) = state
        zt = kr_decode(self.blocks, self._target_tokens(xt), states)
        return self.likelihood(self.decoder(zt))


@register("linear-tnp")
class LinearTNP(_LinearTNPBase):
    """LinearTNP (thesis §7.3): the TNP with linear attention, ``phi = elu + 1``."""

    Hyper = TNPHyper  # the same sizes and options as ``tnp``
    summary = "TNP with linear attention, phi = elu + 1 (Katharopoulos 2020; thesis Eq. 7.3.1)"

    def _mixing(self) -> nn.Module:
        return LinearAttention(self.hyper.dim_model, self.hyper.n_heads, self.hyper.dim_head)


@register("hypermix-np")
class HyperMixNP(_LinearTNPBase):
    """HyperMixNP (thesis §7.4): the TNP with HyperMixer token mixing in place of attention."""

    Hyper = HyperMixNPHyper
    summary = "TNP with HyperMixer token mixing h_q(Z_t) GELU(h_k(Z_c)^T Z_c) (thesis Eq. 7.4.2)"

    def _mixing(self) -> nn.Module:
        h = self.hyper
        return HyperMixing(h.dim_model, h.dim_mixing, h.dim_ff, h.aggregate)
