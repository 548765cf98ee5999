"""The attention layers of the CNP family's reference codes, and the attentive encoder whose
cross-attention keys are embeddings of the inputs ``x`` alone.

Layer kinds (``ATTENTION_LAYERS``; every layer is called ``layer(queries, keys, key_mask,
values=None)``, ``values=None`` meaning the keys):

- ``"block"``: tnpx's pre-norm residual block with a feed-forward MLP
  (:func:`~tnpx.nn.blocks.softmax_block`); keys are the values.
- ``"bare"``: multi-head attention alone, ``to_out(softmax(q k^T / sqrt(d_head)) v)`` with
  biases on every projection and no residual, LayerNorm or feed-forward
  (:class:`KeyValueAttention`; MLGlobalHealth/dl4bi ``core/attention.py``
  ``MultiHeadAttention`` as its CANP, ANP and BANP use it).
- ``"bnp"``: the attention of the BNP code (juho-lee/bnp ``regression/models/attention.py``
  ``MultiHeadAttn``, copied into tung-nd/TNP-pytorch): post-norm with the residual on the
  *projected* query, logits scaled by ``1 / sqrt(dim_model)`` (not the head width), no q/k/v
  bias, and a one-layer ReLU residual in place of the feed-forward block
  (:class:`QueryResidualAttention`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..input_checks import check_option
from .attention import HeadProjections, MultiHeadAttention, ProjectedKeys
from .blocks import softmax_block
from .masking import safe_key_mask, zero_where_no_key
from .mlp import MLP

ATTENTION_LAYERS = ("block", "bare", "bnp")


class KeyValueAttention(MultiHeadAttention):
    """:class:`~tnpx.nn.MultiHeadAttention` with values apart from the keys (``"bare"``)."""

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
        *,
        x_queries: torch.Tensor | None = None,
        x_keys: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """queries ``[b, n_q, d]``, keys ``[b, n_k, d]``, values ``[b, n_k, d]`` (None: the
        keys), key_mask ``[b, n_k]`` -> ``[b, n_q, d]`` (locations: as the base class's)."""
        values = keys if values is None else values
        prepared = self.prepare_pairs(keys, values, key_mask, x_keys=x_keys)
        return self.attend(queries, prepared, x_queries=x_queries)

    def prepare_pairs(self, keys, values, key_mask=None, *, x_keys=None) -> ProjectedKeys:
        """Projected keys and values (``prepare_keys`` with the values apart)."""
        return self._prepare(keys, values, key_mask, x_keys)


class QueryResidualAttention(HeadProjections):
    """The BNP code's ``MultiHeadAttn`` (``"bnp"``; juho-lee/bnp ``attention.py``)::

        q, k, v = to_q(queries), to_k(keys), to_v(values)       # no bias
        h = norm_attn(q + heads(softmax(q_h k_h^T / sqrt(dim_model)) v_h))
        out = norm_ff(h + relu(to_out(h)))

    Heads are contiguous column blocks of ``dim_model`` (``n_heads * dim_head`` must equal
    ``dim_model``, as in the reference). A query with no valid key gets a zero attention term
    (the reference's ``masked_fill(isnan(A), 0)``)."""

    def __init__(self, dim_model: int, n_heads: int, dim_head: int):
        if n_heads * dim_head != dim_model:
            raise ValueError(
                "the bnp attention layer needs n_heads * dim_head == dim_model, got "
                f"{n_heads} * {dim_head} != {dim_model}"
            )
        super().__init__(dim_model, n_heads, dim_head, qkv_bias=False)
        self.norm_attn = nn.LayerNorm(dim_model)
        self.norm_ff = nn.LayerNorm(dim_model)

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """As :meth:`KeyValueAttention.forward`."""
        q = self.to_q(queries)
        values = keys if values is None else values
        if keys.shape[1] == 0:
            attended = torch.zeros_like(q)
        else:
            mask, has_key = (None, None) if key_mask is None else safe_key_mask(key_mask)
            out = F.scaled_dot_product_attention(
                self._split(q),
                self._split(self.to_k(keys)),
                self._split(self.to_v(values)),
                None if mask is None else mask[:, None, None, :],
                scale=1 / math.sqrt(self.inner),  # the full width, not the head's
            )
            attended = zero_where_no_key(self._merge(out), has_key)
        h = self.norm_attn(q + attended)
        return self.norm_ff(h + torch.relu(self.to_out(h)))


def attention_layer(kind: str, dim_model: int, n_heads: int, dim_head: int, dim_ff: int):
    """One self- or cross-attention layer of ``kind`` (``ATTENTION_LAYERS``)."""
    check_option("layer", kind, ATTENTION_LAYERS)
    if kind == "block":
        return softmax_block(dim_model, n_heads, dim_head, dim_ff)
    if kind == "bare":
        return KeyValueAttention(dim_model, n_heads, dim_head)
    return QueryResidualAttention(dim_model, n_heads, dim_head)


class KeyedAttentiveEncoder(nn.Module):
    """The deterministic path of the reference codes' CANP / ANP / BANP::

        h = SelfAttn^L(MLP([x_c, y_c]))                          # values
        r(x_q) = CrossAttn(q = MLP_k(x_q), k = MLP_k(x_c), v = h)  (keys="x")
        r(x_q) = CrossAttn(q = MLP_k(x_q), k = h, v = h)           (keys="tokens")

    with ``layer`` ``"bare"`` or ``"bnp"`` for every attention (the ANP paper's form, with
    one query/key MLP shared by targets and context). juho-lee/bnp ``modules.py``
    ``CrossAttnEncoder``; dl4bi ``meta_regression/canp.py`` (``embed_s``, ``enc_det``,
    ``self_attn_det``, ``cross_attn``). ``x_keys`` (``forward``) replaces the inputs the keys
    are embedded from (dl4bi's BANP pairs bootstrap tokens with the original inputs)."""

    def __init__(
        self,
        dim_x: int,
        dim_y: int,
        dim_model: int,
        n_layers: int,
        n_heads: int,
        dim_head: int,
        n_embed_hidden: int,
        n_key_hidden: int,
        layer: str,
        keys: str = "x",
    ):
        super().__init__()
        if layer == "block":
            raise ValueError("KeyedAttentiveEncoder takes layer 'bare' or 'bnp'")
        check_option("keys", keys, ("x", "tokens"))
        d = self.dim_out = dim_model
        self.keys = keys
        self.embed_context = MLP(dim_x + dim_y, d, d, n_embed_hidden)
        self.embed_query = MLP(dim_x, d, d, n_key_hidden)
        self.self_attention = nn.ModuleList(
            attention_layer(layer, d, n_heads, dim_head, d) for _ in range(n_layers)
        )
        self.cross_attention = attention_layer(layer, d, n_heads, dim_head, d)

    def forward(self, xc, yc, xq, mask_c, x_keys: torch.Tensor | None = None) -> torch.Tensor:
        """xc ``[b, n_ctx, dim_x]``, yc ``[b, n_ctx, dim_y]``, xq ``[b, n_q, dim_x]``, mask_c
        ``[b, n_ctx]`` or None, x_keys ``[b, n_ctx, dim_x]`` (None: xc) -> ``[b, n_q, d]``."""
        h = self.embed_context(torch.cat([xc, yc], -1))
        for layer in self.self_attention:
            h = layer(h, h, mask_c)
        keys = self.embed_query(xc if x_keys is None else x_keys) if self.keys == "x" else h
        return self.cross_attention(self.embed_query(xq), keys, mask_c, values=h)
