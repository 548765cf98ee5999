"""Reusable neural-network blocks. Blocks know nothing of the models that use them."""

from .attention import MultiHeadAttention
from .blocks import PreNormAttentionBlock, TEAttentionBlock
from .chunking import map_target_chunks
from .cnn import PlainCNN, UNet, build_grid_cnn
from .mlp import MLP
from .setconv import SetConvFromGrid, SetConvToGrid, grid_box
from .te_attention import RELATIVE_KINDS, RelativeLogits, TEMultiHeadAttention

__all__ = [
    "MLP",
    "RELATIVE_KINDS",
    "MultiHeadAttention",
    "PlainCNN",
    "PreNormAttentionBlock",
    "RelativeLogits",
    "SetConvFromGrid",
    "SetConvToGrid",
    "TEAttentionBlock",
    "TEMultiHeadAttention",
    "UNet",
    "build_grid_cnn",
    "grid_box",
    "map_target_chunks",
]
