"""Reusable neural-network blocks. Blocks know nothing of the models that use them."""

from .attention import MultiHeadAttention
from .blocks import (
    KRBlock,
    PreNormAttentionBlock,
    TEAttentionBlock,
    kr_context_states,
    kr_decode,
    kr_stack,
)
from .chunking import map_target_chunks
from .cnn import PlainCNN, UNet, build_grid_cnn
from .hypermixer import HyperMixing
from .linear_attention import KernelAttention, LinearAttention, kernel_attention
from .mlp import MLP
from .performer import PerformerAttention, orthogonal_features, positive_features
from .setconv import SetConvFromGrid, SetConvToGrid, grid_box
from .te_attention import RELATIVE_KINDS, RelativeLogits, TEMultiHeadAttention

__all__ = [
    "MLP",
    "HyperMixing",
    "KRBlock",
    "KernelAttention",
    "LinearAttention",
    "PerformerAttention",
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
    "kernel_attention",
    "kr_context_states",
    "kr_decode",
    "kr_stack",
    "map_target_chunks",
    "orthogonal_features",
    "positive_features",
]
