"""Linear-cost TNPs of the thesis (§7.3-7.4): ``linear-tnp`` and ``hypermix-np``.

Both are the ``tnp`` skeleton (flagged tokens ``MLP([x, y, 1])`` / ``MLP([x, 0, 0])``, one
block per layer for both streams, targets reading the layer's input context, a decoder MLP)
with only the attention replaced. Sizes default to the TE architecture (PROTOCOLS
"Architecture defaults"). Neither model is translation equivariant: tokens contain x (thesis
§7.4, "Lack of translation equivariance").

- ``linear-tnp``: multi-head linear attention, ``phi = elu + 1`` (thesis Eq. 7.3.1).
- ``hypermix-np``: HyperMixer token mixing ``H = h_q(Z_q) GELU(h_k(Z_k)^T Z_k)`` (thesis Eq.
  7.4.1-7.4.2 in cross form, see :mod:`tnpx.nn.hypermixer`).

Cost O((Nc + Nt) d^2) per layer: linear in the number of context and target points.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..nn import HyperMixing, LinearAttention
from .registry import register
from .transformer import TransformerHyper, TransformerNP


@dataclass
class HyperMixNPHyper(TransformerHyper):
    # Not options of HyperMixNP: the tnp skeleton's structure, and no attention heads
    # (HyperMixer mixes tokens through generated weights).
    n_heads: ClassVar[int] = 0
    dim_head: ClassVar[int] = 0
    share_weights: ClassVar[bool] = True
    targets_read: ClassVar[str] = "input"
    norm: ClassVar[str] = "pre"
    dim_decoder_hidden: ClassVar[int | None] = None
    missing_outputs: ClassVar[bool] = False
    dim_model: int = 128
    n_layers: int = 5
    dim_ff: int = 128  # feed-forward width, also the hidden width of the hypernetworks
    dim_mixing: int = 128  # p: generated weights per token
    aggregate: str = "sum"  # sum over context tokens (Eq. 7.4.2) | mean
    n_embed_hidden: int = 2
    n_decoder_hidden: int = 2


@register("linear-tnp")
class LinearTNP(TransformerNP):
    """LinearTNP (thesis §7.3): the TNP with linear attention, ``phi = elu + 1``."""

    summary = "TNP with linear attention, phi = elu + 1 (Katharopoulos 2020; thesis Eq. 7.3.1)"

    def _attention(self, layer: int) -> LinearAttention:
        return LinearAttention(self.hyper.dim_model, self.hyper.n_heads, self.hyper.dim_head)


@register("hypermix-np")
class HyperMixNP(TransformerNP):
    """HyperMixNP (thesis §7.4): the TNP with HyperMixer token mixing in place of attention."""

    Hyper = HyperMixNPHyper
    summary = "TNP with HyperMixer token mixing h_q(Z_t) GELU(h_k(Z_c)^T Z_c) (thesis Eq. 7.4.2)"

    def _attention(self, layer: int) -> HyperMixing:
        h = self.hyper
        return HyperMixing(h.dim_model, h.dim_mixing, h.dim_ff, h.aggregate)
