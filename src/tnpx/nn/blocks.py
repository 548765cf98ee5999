"""The residual block every transformer NP is built from, around any attention.

Pre-norm (``norm_first=True``, the default; TE papers, TNP-KR, cambridge-mlg/tnp)::

    z <- z + attention(LN1(z), LN1(keys))     # one LayerNorm for queries and keys
    z <- z + FF(LN2(z))

Post-norm (``norm_first=False``; ``torch.nn.TransformerEncoderLayer``'s default, which the
TNP-D code uses, and cambridge-mlg/tnp's layers with ``norm_first=False``)::

    z <- LN1(z + attention(z, keys))          # queries and keys enter un-normalised
    z <- LN2(z + FF(z))

The attention is any :class:`~tnpx.nn.attention.Attention` (``prepare_keys`` /
``attend_located``, one signature): softmax on SDPA, FAVOR+, linear attention, HyperMixer,
rotary attention, or translation-equivariant attention, which also moves the query locations
(TE Eq. 10). Locations go to every attention; those that read none ignore them. The block
prepares a key set once (:meth:`ResidualBlock.prepare`) and updates any number of query sets
against it (:meth:`ResidualBlock.attend`); :class:`~tnpx.nn.stack.TwoStreamStack` builds the
context and target streams of a transformer NP from these two calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .attention import Attention, MultiHeadAttention
from .mlp import MLP


@dataclass
class PreparedKeys:
    """A block's key side: the attention's prepared state for ``LN1(keys)`` (pre-norm) or the
    keys themselves (post-norm)."""

    attention: Any  # ProjectedKeys | RotaryKeys | KeySums | MixedKeys | PositionalKeys


class ResidualBlock(nn.Module):
    """Residual attention block, pre- or post-norm (see the module docstring).

    Args:
        dim_model: token width ``d``.
        dim_ff: hidden width of the feed-forward MLP ``d -> dim_ff -> d`` (ReLU).
        attention: the token mixing (an :class:`~tnpx.nn.attention.Attention`).
        norm_first: pre-norm (True) or post-norm (False). The parameters are the same.
        norm_eps: the LayerNorms' epsilon (torch's 1e-5; Flax's ``nn.LayerNorm``, which the
            TNP-KR code uses, has 1e-6).
    """

    def __init__(
        self,
        dim_model: int,
        dim_ff: int,
        attention: Attention,
        norm_first: bool = True,
        norm_eps: float = 1e-5,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.norm_attn = nn.LayerNorm(dim_model, eps=norm_eps)
        self.attn = attention
        self.norm_ff = nn.LayerNorm(dim_model, eps=norm_eps)
        self.ff = MLP(dim_model, dim_model, dim_ff, n_hidden=1)

    @property
    def uses_locations(self) -> bool:
        """Whether the attention reads input locations (translation-equivariant attention)."""
        return self.attn.uses_locations

    def prepare(
        self,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        x_keys: torch.Tensor | None = None,
    ) -> PreparedKeys:
        """keys ``[b, n_k, d]``, key_mask ``[b, n_k]`` (True = valid), x_keys ``[b, n_k, dim_x]``
        (location-reading attention only): the key-side work, done once."""
        normed = self.norm_attn(keys) if self.norm_first else keys
        return PreparedKeys(self.attn.prepare_keys(normed, key_mask, x_keys=x_keys))

    def attend(
        self, z: torch.Tensor, keys: PreparedKeys, x: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Queries ``z [b, n_q, d]`` (locations ``x [b, n_q, dim_x]`` for location-reading
        attention) against prepared keys -> updated ``(z, x)``; ``x`` is returned unchanged
        unless the attention moves it."""
        normed = self.norm_attn(z) if self.norm_first else z
        out, x = self.attn.attend_located(normed, keys.attention, x)
        if not self.norm_first:
            z = self.norm_attn(z + out)
            return self.norm_ff(z + self.ff(z)), x
        z = z + out
        return z + self.ff(self.norm_ff(z)), x

    def located(
        self,
        z: torch.Tensor,
        keys: torch.Tensor,
        x: torch.Tensor,
        x_keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One call with locations: z ``[b, n_q, d]`` at ``x [b, n_q, dim_x]`` against keys
        ``[b, n_k, d]`` at ``x_keys [b, n_k, dim_x]`` -> updated ``(z, x)``."""
        return self.attend(z, self.prepare(keys, key_mask, x_keys), x)

    def forward(
        self, z: torch.Tensor, keys: torch.Tensor, key_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """One call without locations: z ``[b, n_q, d]``, keys ``[b, n_k, d]`` ->
        ``[b, n_q, d]`` (self-attention with ``keys = z``)."""
        return self.attend(z, self.prepare(keys, key_mask))[0]


def softmax_block(
    dim_model: int,
    n_heads: int,
    dim_head: int,
    dim_ff: int,
    norm_first: bool = True,
    qkv_bias: bool = True,
) -> ResidualBlock:
    """A :class:`ResidualBlock` with softmax multi-head attention."""
    attention = MultiHeadAttention(dim_model, n_heads, dim_head, qkv_bias=qkv_bias)
    return ResidualBlock(dim_model, dim_ff, attention, norm_first)
