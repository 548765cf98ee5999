"""The transformer-NP skeleton: every TNP is ``likelihood(decoder(stack(tokens)))``.

A :class:`TransformerNP` is assembled from shared parts of :mod:`tnpx.nn`:

1. a :class:`~tnpx.nn.TokenEmbedder` (``tokens``: flagged ``[x, y, 1]`` / target-flagged
   ``[x, y, 0]`` / plain ``[x, y]`` / y-only ``[y, 0]``);
2. a :class:`~tnpx.nn.TwoStreamStack` of residual blocks around a pluggable attention
   (:meth:`TransformerNP._attention`: softmax on SDPA, FAVOR+, linear, HyperMixer,
   translation-equivariant), with the structural choices the papers and their code differ in,
   hyper-parameters of :class:`TransformerHyper`: ``share_weights`` (one block per layer for
   both streams, or one per stream), ``targets_read`` (targets read the layer's input
   context, or the context after that layer's self-attention) and ``norm`` (pre-norm or
   post-norm blocks);
3. an optional final LayerNorm, a decoder MLP and a Gaussian likelihood head.

A registered model is a subclass that states its paper's choices in a few lines: the defaults
of its ``Hyper``, a subclass of :class:`TransformerHyper`, which holds every choice the skeleton
reads. A choice the model does not offer as an option (TNP-KR's one set of weights per layer)
is a class constant of its ``Hyper``. The context is encoded once (:meth:`_encode_context`: the
prepared keys of every layer) and targets are decoded against it (:meth:`_decode_targets`), so
the one-shot forward and streamed prediction are one computation. Registers no model itself.

``missing_outputs`` (a :class:`TransformerHyper` field, default False) lets a model read a
context whose points miss some outputs (``mask_yc``, a user's table with gaps): context tokens
read ``[x, y * m, m]`` (``m`` the observed mask, :class:`~tnpx.nn.TokenEmbedder`), targets
zeros there, and a point missing every output is left out of the keys. Off, tokens are as
before, so earlier checkpoints load and predict bit for bit. Models whose tokens are not
``TokenEmbedder``'s (``inc-tnp``'s buffer tokens) or whose joint score cannot leave single
outputs out (``tnp-nd``) refuse it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from torch.distributions import Normal

from ..nn import (
    MLP,
    TOKEN_KINDS,
    Attention,
    MultiHeadAttention,
    PreparedKeys,
    ResidualBlock,
    TEMultiHeadAttention,
    TokenEmbedder,
    TwoStreamStack,
    check_option,
)
from .base import HeadHyper, NeuralProcess, likelihood_head
from .registry import hyper_names, missing_outputs_models

NORMS = ("pre", "post")
XY_TOKENS = tuple(k for k in TOKEN_KINDS if k != "y-only")  # tokens that read x and y


@dataclass
class TransformerSizes(HeadHyper):
    """Sizes of the TE-paper architecture (PROTOCOLS "Architecture defaults")."""

    dim_model: int = 128
    n_layers: int = 5
    n_heads: int = 8
    dim_head: int | None = 16  # None: dim_model // n_heads (torch's nn.MultiheadAttention)
    dim_ff: int = 128
    n_embed_hidden: int = 2
    n_decoder_hidden: int = 2

    def __post_init__(self):
        if self.dim_head is None:  # resolved once, so a saved config records the number
            if self.n_heads < 1 or self.dim_model % self.n_heads:
                raise ValueError(
                    f"dim_head=None needs n_heads dividing dim_model, got n_heads="
                    f"{self.n_heads}, dim_model={self.dim_model}"
                )
            self.dim_head = self.dim_model // self.n_heads


@dataclass
class TransformerHyper(TransformerSizes):
    """Every choice the skeleton reads, with its default: the ``tnp`` / ``tnp-d`` models every
    earlier checkpoint holds.

    A field is an option: a keyword of ``build_model``, a key of a config's ``model`` section,
    an entry of a checkpoint's record. A choice that a model does not offer is a class constant
    of its ``Hyper`` (``ClassVar``; a subclass re-declares a field of this class that way, e.g.
    TNP-KR's ``share_weights: ClassVar[bool] = True``): the skeleton reads it as it reads an
    option, and it is neither set nor recorded, so each model takes the options it always took.
    The constants below are choices most models do not offer; a ``Hyper`` offers one by
    declaring it a field (``tnp``'s ``tokens`` and ``norm_eps``)."""

    share_weights: bool = True  # one block per layer for both streams, or one per stream
    targets_read: str = "input"  # input | updated: what context a layer's targets attend to
    norm: str = "pre"  # pre | post: LayerNorm before attention / FF, or after each residual
    dim_decoder_hidden: int | None = None  # decoder MLP width; None: dim_model
    missing_outputs: bool = False  # context tokens [x, y * m, m]: read missing outputs
    tokens: ClassVar[str] = "flagged"  # the token layout (TokenEmbedder's kinds)
    norm_eps: ClassVar[float] = 1e-5  # LayerNorm epsilon (torch's; the TNP-KR code's Flax: 1e-6)
    dim_embed_hidden: ClassVar[int | None] = None  # token MLP width; None: dim_model


@dataclass
class StackState:
    """A transformer NP's encoded context: what each layer's targets read (prepared keys)."""

    layers: list[PreparedKeys]


class TransformerNP(NeuralProcess):
    """The skeleton (module docstring). Subclasses state their choices in their ``Hyper`` and
    override the part builders (``_embedder``, ``_attention``, ``_decoder``) where their paper
    differs."""

    Hyper = TransformerHyper
    hyper: TransformerHyper
    token_kinds: ClassVar[tuple[str, ...]] = TOKEN_KINDS  # the layouts ``tokens`` may name
    final_norm: ClassVar[bool] = False
    # TNP-D computes the plain forward as masked self-attention over [context; targets]
    # (the same function; quadratic in n_ctx + n_tgt, as the paper's model). Used only where
    # that form exists: shared weights, targets reading the layer input, no locations.
    masked_joint_forward: ClassVar[bool] = False
    # The stack's class: the two-stream stack, or a subclass with the same parameters
    # (``inc-tnp``'s causal stack).
    stack_class: ClassVar[type[TwoStreamStack]] = TwoStreamStack
    # Format 1 (before the skeleton): each model held its own embed MLP and block list.
    renamed_parameters = {
        1: (("embed.", "embed.mlp."), ("layers.", "stack.blocks."), ("blocks.", "stack.blocks."))
    }

    def __init__(self, dim_x: int, dim_y: int, hyper):
        super().__init__(dim_x, dim_y, hyper)
        check_option("norm", hyper.norm, NORMS)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.embed = self._embedder()
        self._check_missing_outputs()
        self.stack = self.stack_class(
            self._block, hyper.n_layers, hyper.share_weights, hyper.targets_read
        )
        self.norm = nn.LayerNorm(d, eps=self.norm_eps) if self.final_norm else None
        self.decoder = self._decoder()
        self.uses_locations = self.stack.blocks[0].uses_locations

    @classmethod
    def missing_outputs_support(cls) -> str:
        # buffer tokens (inc-tnp) have no mask channels; a joint score (tnp-nd) cannot drop
        # single outputs
        if cls.buffered_sampling or cls.predicts_jointly:
            return ""
        return "option" if _takes_missing_outputs(cls) else ""

    def _check_missing_outputs(self) -> None:
        """A ``ValueError`` where ``missing_outputs`` is asked of a model that cannot have it."""
        if not self.hyper.missing_outputs:
            return
        if self.predicts_jointly:
            why = "its joint Gaussian cannot leave single outputs out of its score"
        elif not self.embed.missing_outputs:
            why = "its tokens have no observed-mask channels"
        else:
            return
        raise ValueError(
            f"{self.name} cannot take missing_outputs: {why}; models that can: "
            f"{', '.join(missing_outputs_models())}"
        )

    # -- parts (override where a paper differs) --------------------------------------------
    @property
    def norm_first(self) -> bool:
        """Whether the blocks are pre-norm (``norm="pre"``)."""
        return self.hyper.norm == "pre"

    @property
    def norm_eps(self) -> float:
        """The LayerNorms' epsilon (``hyper.norm_eps``)."""
        return self.hyper.norm_eps

    def _embedder(self) -> TokenEmbedder:
        h = self.hyper
        check_option("tokens", h.tokens, self.token_kinds)
        return TokenEmbedder(
            h.tokens,
            self.dim_x,
            self.dim_y,
            h.dim_model,
            h.dim_embed_hidden or h.dim_model,
            h.n_embed_hidden,
            missing_outputs=h.missing_outputs,
        )

    def _attention(self, layer: int) -> Attention:
        h = self.hyper
        return MultiHeadAttention(h.dim_model, h.n_heads, h.dim_head)

    def _block(self, layer: int) -> ResidualBlock:
        h = self.hyper
        return ResidualBlock(
            h.dim_model, h.dim_ff, self._attention(layer), self.norm_first, self.norm_eps
        )

    def _decoder(self) -> MLP:
        return self._decoder_mlp(self.likelihood.n_params)

    def _decoder_mlp(self, n_out: int) -> MLP:
        """An MLP ``dim_model -> n_out`` of the decoder's sizes."""
        h = self.hyper
        return MLP(h.dim_model, n_out, h.dim_decoder_hidden or h.dim_model, h.n_decoder_hidden)

    # -- the computation ---------------------------------------------------------------------
    def head(self, zt: torch.Tensor) -> Normal:
        """Target tokens ``[b, n_tgt, d]`` -> the per-target Gaussian ``[b, n_tgt, dim_y]``."""
        if self.norm is not None:
            zt = self.norm(zt)
        return self.likelihood(self.decoder(zt))

    @property
    def uses_masked_joint(self) -> bool:
        """Whether the plain forward is the masked joint form (:attr:`masked_joint_forward`
        and a stack for which it computes the same function)."""
        stack = self.stack
        return (
            self.masked_joint_forward
            and stack.share_weights
            and stack.targets_read == "input"
            and not self.uses_locations
        )

    def _context_tokens(self, xc, yc, mask_c) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Context tokens ``[b, n_ctx, d]`` and the keys' mask ``[b, n_ctx]``. A per-output
        ``mask_c [b, n_ctx, dim_y]`` (missing outputs, :mod:`tnpx.models.base`) goes to the
        tokens; the keys are the points with any output observed."""
        if mask_c is None or mask_c.dim() == 2:
            return self.embed.context(xc, yc), mask_c
        return self.embed.context(xc, yc, mask_c), mask_c.any(-1)

    def _predict(self, xc, yc, xt, mask_c):
        if self.uses_masked_joint:
            zc, mask_c = self._context_tokens(xc, yc, mask_c)
            return self.head(self.stack.masked_joint(zc, self.embed.targets(xt), mask_c))
        return super()._predict(xc, yc, xt, mask_c)

    def _encode_context(self, xc, yc, mask_c) -> StackState:
        x = xc if self.uses_locations else None
        zc, mask_c = self._context_tokens(xc, yc, mask_c)
        return StackState(self.stack.encode(zc, mask_c, x))

    def _decoded(self, state: StackState, xt: torch.Tensor) -> torch.Tensor:
        """Target tokens after the stack ``[b, n_tgt, d]`` (what the decoder reads; TNP-ND's
        covariance reads them too)."""
        x = xt if self.uses_locations else None
        return self.stack.decode(self.embed.targets(xt), state.layers, x)

    def _decode_targets(self, state: StackState, xt: torch.Tensor) -> Normal:
        return self.head(self._decoded(state, xt))


def te_attention(hyper, dim_x: int, rotation_invariant: bool = False) -> TEMultiHeadAttention:
    """TE attention (TE Eq. 7-10) with a TE model's options (``relative``,
    ``location_update``, ``dim_relative_hidden``, ``chunk_elements``, ``qkv_bias``,
    ``rho_order``): TE-TNP and TE-PT-TNP."""
    h = hyper
    return TEMultiHeadAttention(
        h.dim_model,
        h.n_heads,
        h.dim_head,
        dim_x=dim_x,
        relative=h.relative,
        rotation_invariant=rotation_invariant,
        location_update=h.location_update,
        dim_hidden=h.dim_relative_hidden,
        chunk_elements=h.chunk_elements,
        qkv_bias=h.qkv_bias,
        rho_order=h.rho_order,
    )


@torch.compiler.assume_constant_result
def _takes_missing_outputs(cls: type) -> bool:
    """Whether model class ``cls``'s options include ``missing_outputs``. A forward asks this,
    and torch.compile breaks its graph at ``dataclasses.fields()``: it evaluates this once
    per trace instead (a class's options do not change)."""
    return "missing_outputs" in hyper_names(cls)
