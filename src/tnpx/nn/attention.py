"""Softmax multi-head attention on ``scaled_dot_product_attention``.

Keys can be masked per task (``key_mask [batch, n_keys]``, True = may attend). The mask is
passed to SDPA as a broadcast ``[batch, 1, 1, n_keys]`` tensor, which keeps the fused CPU/GPU
kernels (a dense ``[n_q, n_k]`` mask would be materialised as floats). A query with no
valid key (empty or fully masked context) receives a zero vector before the output
projection, so an empty context and a fully padded one give the same result.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    """Multi-head attention ``[batch, n_q, dim_model] x [batch, n_k, dim_model] -> [batch, n_q,
    dim_model]`` with ``n_heads`` heads of size ``dim_head``."""

    def __init__(self, dim_model: int, n_heads: int, dim_head: int):
        super().__init__()
        inner = n_heads * dim_head
        self.n_heads, self.dim_head = n_heads, dim_head
        self.to_q = nn.Linear(dim_model, inner)
        self.to_k = nn.Linear(dim_model, inner)
        self.to_v = nn.Linear(dim_model, inner)
        self.to_out = nn.Linear(inner, dim_model)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.n_heads, self.dim_head).transpose(1, 2)

    def forward(
        self, queries: torch.Tensor, keys: torch.Tensor, key_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """queries ``[b, n_q, d]``, keys (also the values) ``[b, n_k, d]``, key_mask ``[b, n_k]``.
        Returns ``[b, n_q, d]``."""
        return self.attend(queries, self.prepare_keys(keys, key_mask))

    def prepare_keys(self, keys: torch.Tensor, key_mask: torch.Tensor | None = None) -> tuple:
        """The key-side work, done once for any number of query chunks: projected keys and
        values ``[b, h, n_k, dim_head]`` and the SDPA mask (None if there are no keys)."""
        if keys.shape[1] == 0:
            return (None, None, None, None)
        k, v = self._split(self.to_k(keys)), self._split(self.to_v(keys))
        attn_mask, has_key = None, None
        if key_mask is not None:
            has_key = key_mask.any(-1)  # [b]
            # Tasks with no valid key attend to everything (avoids NaN) and are zeroed below.
            safe = key_mask | ~has_key[:, None]
            attn_mask = safe[:, None, None, :]
        return (k, v, attn_mask, has_key)

    def attend(self, queries: torch.Tensor, prepared: tuple) -> torch.Tensor:
        """queries ``[b, n_q, d]`` against keys from :meth:`prepare_keys` -> ``[b, n_q, d]``."""
        b, n_q, _ = queries.shape
        k, v, attn_mask, has_key = prepared
        if k is None:
            return self.to_out(queries.new_zeros(b, n_q, self.n_heads * self.dim_head))
        q = self._split(self.to_q(queries))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        out = out.transpose(1, 2).reshape(b, n_q, self.n_heads * self.dim_head)
        if has_key is not None:
            out = out * has_key[:, None, None].to(out.dtype)
        return self.to_out(out)
