"""Transformer blocks built from :mod:`tnpx.nn.attention`."""

from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadAttention
from .mlp import MLP


class PreNormAttentionBlock(nn.Module):
    """Pre-norm residual attention block: ``z <- z + MHA(LN(z), LN(keys)); z <- z + FF(LN(z))``.

    One block serves both self-attention (``keys = z``) and cross-attention: the same
    LayerNorm normalises queries and keys, as in the TNP reference code, so a TNP layer can
    apply it to the context (MHSA) and to the targets (MHCA) with one set of weights.
    """

    def __init__(self, dim_model: int, n_heads: int, dim_head: int, dim_ff: int):
        super().__init__()
        self.norm_attn = nn.LayerNorm(dim_model)
        self.attn = MultiHeadAttention(dim_model, n_heads, dim_head)
        self.norm_ff = nn.LayerNorm(dim_model)
        self.ff = MLP(dim_model, dim_model, dim_ff, n_hidden=1)

    def forward(
        self, z: torch.Tensor, keys: torch.Tensor, key_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """z ``[b, n_q, d]``, keys ``[b, n_k, d]``, key_mask ``[b, n_k]`` -> ``[b, n_q, d]``."""
        z = z + self.attn(self.norm_attn(z), self.norm_attn(keys), key_mask)
        return z + self.ff(self.norm_ff(z))
