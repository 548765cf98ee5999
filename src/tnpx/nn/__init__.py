"""Reusable neural-network blocks. Blocks know nothing of the models that use them."""

from .attention import MultiHeadAttention
from .blocks import PreNormAttentionBlock, TEAttentionBlock
from .mlp import MLP
from .te_attention import RELATIVE_KINDS, RelativeLogits, TEMultiHeadAttention

__all__ = [
    "MLP",
    "RELATIVE_KINDS",
    "MultiHeadAttention",
    "PreNormAttentionBlock",
    "RelativeLogits",
    "TEAttentionBlock",
    "TEMultiHeadAttention",
]
