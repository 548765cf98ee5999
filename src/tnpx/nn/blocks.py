"""Transformer blocks built from :mod:`tnpx.nn.attention`."""

from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadAttention
from .mlp import MLP
from .te_attention import TEMultiHeadAttention


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


class TEAttentionBlock(nn.Module):
    """Pre-norm residual block around :class:`TEMultiHeadAttention`:
    ``z <- z + TE-MHA(LN(z), LN(keys); x, x_keys); z <- z + FF(LN(z))``, and ``x`` moves by the
    attention's location update (TE Eq. 10) when it is on. One block serves self-attention
    (``keys = z``) and cross-attention with one LayerNorm for queries and keys."""

    def __init__(self, dim_model: int, n_heads: int, dim_head: int, dim_ff: int, **te_options):
        super().__init__()
        self.norm_attn = nn.LayerNorm(dim_model)
        self.attn = TEMultiHeadAttention(dim_model, n_heads, dim_head, **te_options)
        self.norm_ff = nn.LayerNorm(dim_model)
        self.ff = MLP(dim_model, dim_model, dim_ff, n_hidden=1)

    def forward(
        self,
        z: torch.Tensor,
        keys: torch.Tensor,
        x: torch.Tensor,
        x_keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """z ``[b, n_q, d]``, keys ``[b, n_k, d]``, x ``[b, n_q, dim_x]``, x_keys ``[b, n_k,
        dim_x]`` -> updated ``(z, x)``."""
        update, x = self.attn(self.norm_attn(z), self.norm_attn(keys), x, x_keys, key_mask)
        z = z + update
        return z + self.ff(self.norm_ff(z)), x
