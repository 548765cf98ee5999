"""Reusable neural-network parts. Parts know nothing of the models that use them."""

from ..input_checks import check_option  # one option check for every layer
from .attention import (
    Attention,
    HeadProjections,
    MultiHeadAttention,
    ProjectedKeys,
    masked_softmax,
    safe_key_mask,
    zero_where_no_key,
)
from .batch_norm import STATISTICS, GridBatchNorm
from .blocks import PreparedKeys, ResidualBlock, softmax_block
from .causal import BufferCache, CausalStack, ContextCache
from .chunking import map_target_chunks
from .cnn import PlainCNN, ResNetCNN, SeparableResBlock, UNet, build_grid_cnn
from .hypermixer import HyperMixing
from .linear_attention import KernelAttention, KeySums, LinearAttention, kernel_attention
from .mlp import MLP
from .performer import PerformerAttention, orthogonal_features, positive_features
from .rotary import RotaryAttention, RotaryKeys, Rotation, TurnedLocations
from .segments import KeySegment, SegmentedKeys, segmented_attention
from .set_attention import (
    ATTENTION_LAYERS,
    KeyedAttentiveEncoder,
    KeyValueAttention,
    QueryResidualAttention,
    attention_layer,
)
from .setconv import SetConvFromGrid, SetConvToGrid, grid_box
from .sets import (
    AttentiveEncoder,
    AttentivePooling,
    ConcatEncoders,
    DeepSetEncoder,
    GlobalEncoder,
    LatentEncoder,
    masked_mean,
)
from .stack import TARGETS_READ, TwoStreamStack
from .te_attention import RELATIVE_KINDS, PositionalKeys, RelativeLogits, TEMultiHeadAttention
from .tokens import TOKEN_KINDS, BufferTokens, TokenEmbedder

__all__ = [
    "ATTENTION_LAYERS",
    "MLP",
    "Attention",
    "AttentiveEncoder",
    "AttentivePooling",
    "BufferCache",
    "BufferTokens",
    "CausalStack",
    "ConcatEncoders",
    "ContextCache",
    "DeepSetEncoder",
    "GlobalEncoder",
    "GridBatchNorm",
    "HeadProjections",
    "HyperMixing",
    "KernelAttention",
    "KeyValueAttention",
    "KeyedAttentiveEncoder",
    "KeySegment",
    "KeySums",
    "LatentEncoder",
    "LinearAttention",
    "MultiHeadAttention",
    "PerformerAttention",
    "PlainCNN",
    "PositionalKeys",
    "QueryResidualAttention",
    "PreparedKeys",
    "ProjectedKeys",
    "RELATIVE_KINDS",
    "RelativeLogits",
    "RotaryAttention",
    "RotaryKeys",
    "Rotation",
    "TurnedLocations",
    "STATISTICS",
    "SegmentedKeys",
    "ResidualBlock",
    "ResNetCNN",
    "SeparableResBlock",
    "SetConvFromGrid",
    "SetConvToGrid",
    "TARGETS_READ",
    "TEMultiHeadAttention",
    "TOKEN_KINDS",
    "TokenEmbedder",
    "TwoStreamStack",
    "UNet",
    "attention_layer",
    "build_grid_cnn",
    "check_option",
    "grid_box",
    "kernel_attention",
    "map_target_chunks",
    "masked_mean",
    "masked_softmax",
    "orthogonal_features",
    "positive_features",
    "safe_key_mask",
    "segmented_attention",
    "softmax_block",
    "zero_where_no_key",
]
