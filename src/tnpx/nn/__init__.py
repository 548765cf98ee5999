"""Reusable neural-network blocks. Blocks know nothing of the models that use them."""

from .attention import MultiHeadAttention
from .blocks import PreNormAttentionBlock
from .mlp import MLP

__all__ = ["MLP", "MultiHeadAttention", "PreNormAttentionBlock"]
