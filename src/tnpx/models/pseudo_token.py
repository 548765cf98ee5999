"""Pseudo-token TNPs (TE paper §2.3, §3.1): O(M·N) instead of O(N²).

- ``pt-tnp-ist`` (induced set transformer style, per layer):
  ``U <- MHCA(U, Zc)``; ``Zc <- MHCA(Zc, U)``; ``Zt <- MHCA(Zt, U)``.
- ``pt-tnp-perceiver``: ``U <- MHCA(U, Zc)``; ``U <- MHSA(U)``; ``Zt <- MHCA(Zt, U)``.
- ``te-pt-tnp``: the IST style with TE attention; pseudo-tokens carry pseudo-locations
  initialised by TE Eq. 11, ``v_m = v0_m + sum_n psi(u_m, z_n) x_n``.
- ``te-pt-tnp-rope``: ``te-pt-tnp`` with rotary attention (:class:`~tnpx.nn.RotaryAttention`:
  queries and keys turned by angles of their own locations, pseudo-locations for pseudo-tokens)
  in place of TE attention, so no Eq. 10 update: the Eq. 11 pseudo-locations stay fixed.

M learned pseudo-tokens start from a standard normal (TE F.1). Targets read only from the
pseudo-tokens, so they are conditionally independent given the context. Tokens come from
:class:`~tnpx.nn.TokenEmbedder` (``tokens``: flagged, or y-only for TE), blocks are
:class:`~tnpx.nn.ResidualBlock` s. The last layer's context update is read by no one, so it is
never computed; ``final_context_block=False`` also drops its parameters (cambridge-mlg/tnp's
``ISTEncoder`` has ``num_layers - 1`` such blocks).

Presets computing the TE paper's code (cambridge-mlg/tnp ``ist.yml`` / ``lbanp.yml``,
cambridge-mlg/tetnp ``teist.yml``; ``docs/fidelity.md``; :mod:`tnpx.models.presets.te_code`):
``pt-tnp-ist`` and ``pt-tnp-perceiver`` ``te-code``, ``te-pt-tnp`` ``released-code``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from ..nn import (
    MLP,
    HeadProjections,
    ResidualBlock,
    TokenEmbedder,
    TurnedLocations,
    check_option,
    masked_mean,
    masked_softmax,
    safe_key_mask,
    softmax_block,
    zero_where_no_key,
)
from .base import NeuralProcess, likelihood_head
from .registry import register
from .rotary_options import rotary_attention
from .transformer import TransformerSizes, te_attention


@dataclass
class PTTNPHyper(TransformerSizes):
    n_pseudo: int = 32
    tokens: str = "flagged"  # flagged [x,y,1]/[x,0,0] | target-flagged [x,y,0]/[x,0,1] | plain
    qkv_bias: bool = True  # biases on the query, key and value projections
    final_context_block: bool = True  # IST styles: parameters for the last context update


@dataclass
class PseudoTokens:
    """A PT-TNP's encoded context: the pseudo-tokens ``[b, M, d]`` after each layer, and for
    TE-PT-TNP their pseudo-locations ``[b, M, dim_x]`` (TE-PT-TNP-RoPE's as
    :class:`~tnpx.nn.TurnedLocations` with fixed frequencies: the targets reuse their turn)."""

    tokens: list[torch.Tensor]
    locations: list | None = None  # tensors or TurnedLocations


class _PseudoTokenNP(NeuralProcess):
    """Parts every PT-TNP has: likelihood head, token embedder, M pseudo-tokens, ``n_layers``
    layers of three blocks (the last one: targets read the pseudo-tokens), decoder MLP."""

    token_kinds: tuple[str, ...] = ("flagged", "target-flagged", "plain")
    renamed_parameters = {1: (("embed.", "embed.mlp."),)}

    def __init__(self, dim_x: int, dim_y: int, hyper: PTTNPHyper):
        check_option("tokens", hyper.tokens, self.token_kinds)
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.embed = TokenEmbedder(hyper.tokens, dim_x, dim_y, d, d, hyper.n_embed_hidden)
        self.pseudo = nn.Parameter(torch.randn(hyper.n_pseudo, d))
        self._init_pseudo_locations()
        self.layers = nn.ModuleList(self._layer(i) for i in range(hyper.n_layers))
        self.decoder = MLP(d, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _layer(self, layer: int) -> nn.ModuleList:
        """A layer's three blocks; IST styles without ``final_context_block`` hold no
        parameters for the last layer's context update (an ``nn.Identity`` in its place)."""
        last = layer == self.hyper.n_layers - 1
        if last and not self.hyper.final_context_block:
            return nn.ModuleList([self._block(), nn.Identity(), self._block()])
        return nn.ModuleList(self._block() for _ in range(3))

    def _init_pseudo_locations(self) -> None:
        """TE-PT-TNP's pseudo-location parameters (before the blocks, as their order in
        ``state_dict`` has always been)."""

    def _block(self) -> ResidualBlock:
        h = self.hyper
        return softmax_block(h.dim_model, h.n_heads, h.dim_head, h.dim_ff, qkv_bias=h.qkv_bias)

    def _decode_targets(self, state: PseudoTokens, xt):
        """Targets read the pseudo-tokens only: ``Zt <- MHCA(Zt, U_l)`` per layer."""
        zt = self.embed.targets(xt)
        for (*_, to_target), u in zip(self.layers, state.tokens):
            zt = to_target(zt, u)
        return self.likelihood(self.decoder(zt))


@register("pt-tnp-ist")
class PTTNPIST(_PseudoTokenNP):
    """PT-TNP, IST style: pseudo-tokens read the context, context reads them, targets read them."""

    Hyper = PTTNPHyper
    summary = "Pseudo-token TNP, induced-set-transformer style (M pseudo-tokens, O(M N))"

    def _encode_context(self, xc, yc, mask_c) -> PseudoTokens:
        zc = self.embed.context(xc, yc)
        u = self.pseudo.expand(xc.shape[0], -1, -1)
        states = []
        for layer, (to_pseudo, to_context, _) in enumerate(self.layers):
            u = to_pseudo(u, zc, mask_c)  # U <- MHCA(U, Zc)
            if layer < len(self.layers) - 1:  # the last update is read by no one
                zc = to_context(zc, u)  # Zc <- MHCA(Zc, U)
            states.append(u)
        return PseudoTokens(states)


@register("pt-tnp-perceiver")
class PTTNPPerceiver(_PseudoTokenNP):
    """PT-TNP, perceiver style: pseudo-tokens read the context, then attend among themselves."""

    Hyper = PTTNPHyper
    summary = "Pseudo-token TNP, perceiver style (LBANP-like; O(M N))"

    def __init__(self, dim_x: int, dim_y: int, hyper: PTTNPHyper):
        if not hyper.final_context_block:
            raise ValueError("final_context_block applies to IST styles; a perceiver has none")
        super().__init__(dim_x, dim_y, hyper)

    def _encode_context(self, xc, yc, mask_c) -> PseudoTokens:
        zc = self.embed.context(xc, yc)
        u = self.pseudo.expand(xc.shape[0], -1, -1)
        states = []
        for cross, self_attn, _ in self.layers:
            u = cross(u, zc, mask_c)  # U <- MHCA(U, Zc)
            u = self_attn(u, u)  # U <- MHSA(U)
            states.append(u)
        return PseudoTokens(states)


PSEUDO_INITS = ("attention", "mean")


@dataclass
class TEPTTNPHyper(PTTNPHyper):
    tokens: str = "y-only"  # context [y, 0], targets [0, 1]: no x in a token (the only kind)
    relative: str = "post"
    location_update: bool = True  # TE Eq. 10 on pseudo, context and target locations
    pseudo_init: str = "attention"  # TE Eq. 11 ("attention") or v0 + mean of x_c ("mean")
    dim_relative_hidden: int | None = None  # width of the rho / phi MLPs (None: dim_model)
    chunk_elements: int = 2**24
    rho_order: str = "dots-first"  # rho(cat[dots, x_n - x_m]) | "rel-first" (the TE code)


class PseudoLocationInit(HeadProjections):
    """TE Eq. 11: ``v_m = v0_m + sum_h w_h sum_n alpha_hmn x_n`` with ``alpha_h`` a softmax
    over context tokens of ``(W_q u_m . W_k z_n) / sqrt(d_head)`` and ``w = softmax(a)``;
    rows sum to one, so shifting every ``x_n`` shifts every ``v_m`` by the same amount.

    ``float64``: the average in float64 with each row renormalised to sum to one there, so a
    shift ``s`` moves ``v_m`` by ``s`` up to float64 rounding (a float32 row sums to one only up
    to ~1e-7, which a shift of 10^3 turns into ~1e-4; rotary angles would amplify it).
    """

    def __init__(
        self,
        dim_model: int,
        n_heads: int,
        dim_head: int,
        qkv_bias: bool = True,
        float64: bool = False,
    ):
        super().__init__(dim_model, n_heads, dim_head, values=False, qkv_bias=qkv_bias)
        self.head_logits = nn.Parameter(torch.zeros(n_heads))
        self.float64 = float64

    def forward(self, u, zc, xc, mask_c):
        """u ``[b, M, d]``, zc ``[b, n, d]``, xc ``[b, n, dim_x]`` -> offsets ``[b, M, dim_x]``."""
        q, k = self._split(self.to_q(u)), self._split(self.to_k(zc))
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.dim_head)  # [b, H, M, n]
        if mask_c is None:
            alpha, has_key = logits.softmax(-1), None
        else:
            safe, has_key = safe_key_mask(mask_c)  # a fully masked task is zeroed below
            alpha = masked_softmax(logits, safe)
        weights = torch.softmax(self.head_logits, 0).view(1, -1, 1, 1)
        psi = (weights * alpha).sum(1)  # [b, M, n]
        if self.float64:
            psi, xc = psi.double(), xc.double()
            psi = psi / psi.sum(-1, keepdim=True)
        return zero_where_no_key(psi @ xc, has_key)


@register("te-pt-tnp")
class TEPTTNP(_PseudoTokenNP):
    """TE-PT-TNP: IST-style pseudo-tokens with pseudo-locations and TE attention (TE §3.1)."""

    Hyper = TEPTTNPHyper
    token_kinds = ("y-only",)
    translation_equivariant = True
    summary = "Translation-equivariant pseudo-token TNP with pseudo-locations (TE Eq. 11)"
    # Pseudo-locations in float64 (the rotary variant: see PseudoLocationInit's ``float64``).
    float64_locations: ClassVar[bool] = False

    def __init__(self, dim_x: int, dim_y: int, hyper: TEPTTNPHyper):
        check_option("pseudo_init", hyper.pseudo_init, PSEUDO_INITS)
        super().__init__(dim_x, dim_y, hyper)

    def _init_pseudo_locations(self) -> None:
        h = self.hyper
        self.pseudo_loc = nn.Parameter(torch.randn(h.n_pseudo, self.dim_x))
        self.loc_init = (
            PseudoLocationInit(
                h.dim_model, h.n_heads, h.dim_head, h.qkv_bias, self.float64_locations
            )
            if h.pseudo_init == "attention"
            else None
        )

    def _block(self) -> ResidualBlock:
        h = self.hyper
        return ResidualBlock(h.dim_model, h.dim_ff, te_attention(h, self.dim_x))

    def _encode_context(self, xc, yc, mask_c) -> PseudoTokens:
        """Pseudo-tokens and pseudo-locations after each layer (what the targets read)."""
        b = xc.shape[0]
        zc = self.embed.context(xc, yc)
        u = self.pseudo.expand(b, -1, -1)
        if self.loc_init is not None:
            offset = self.loc_init(u, zc, xc, mask_c)  # TE Eq. 11
        else:  # ablation: psi = 1/N
            offset = masked_mean(xc.double() if self.float64_locations else xc, mask_c)[:, None]
        v = self._located(self.pseudo_loc.expand(b, -1, -1) + offset)  # float64 if offset is
        xc = self._located(xc)
        tokens, locations = [], []
        for layer, (to_pseudo, to_context, _) in enumerate(self.layers):
            u, v = to_pseudo.located(u, zc, v, xc, mask_c)
            if layer < len(self.layers) - 1:  # the last update is read by no one
                zc, xc = to_context.located(zc, u, xc, v)
            tokens.append(u)
            locations.append(v)
        return PseudoTokens(tokens, locations)

    def _located(self, x: torch.Tensor):
        """Locations ``[b, n, dim_x]`` as the blocks take them: here ``x`` itself (TE attention
        moves them, TE Eq. 10)."""
        return x

    def _decode_targets(self, state: PseudoTokens, xt):
        zt, xt = self.embed.targets(xt), self._located(xt)
        for (*_, to_target), u, v in zip(self.layers, state.tokens, state.locations):
            zt, xt = to_target.located(zt, u, xt, v)
        return self.likelihood(self.decoder(zt))


@dataclass
class RopePTTNPHyper(PTTNPHyper):
    tokens: str = "y-only"  # as TE-PT-TNP: no x in a token
    pseudo_init: str = "attention"  # TE Eq. 11 ("attention") or v0 + mean of x_c ("mean")
    min_wavelength: float = 0.05  # the band of rotation wavelengths per input dimension
    max_wavelength: float = 20.0
    learn_frequencies: bool = False


@register("te-pt-tnp-rope")
class TEPTTNPRope(TEPTTNP):
    """TE-PT-TNP's structure with rotary attention: pseudo-tokens at their Eq. 11
    pseudo-locations, context and targets at x; logits depend on location differences only,
    and the locations never move (no Eq. 10)."""

    Hyper = RopePTTNPHyper
    summary = "TE-PT-TNP structure with rotary (RoPE) attention at Eq. 11 pseudo-locations, SDPA"
    # Angles reach ~10^2 rad per unit of x: a pseudo-location near 10^3 rounded to float32
    # (~3e-5) would turn a logit by ~4e-3 rad; in float64 a shift stays exact.
    float64_locations = True

    def __init__(self, dim_x: int, dim_y: int, hyper: RopePTTNPHyper):
        if not hyper.qkv_bias:
            raise ValueError("te-pt-tnp-rope takes qkv_bias=True only (rotary attention's q/k/v)")
        super().__init__(dim_x, dim_y, hyper)

    def _block(self) -> ResidualBlock:
        h = self.hyper
        return ResidualBlock(h.dim_model, h.dim_ff, rotary_attention(h, self.dim_x))

    def _located(self, x: torch.Tensor):
        """Locations that never move, turned once for every layer (:class:`TurnedLocations`)
        where the frequencies are fixed; learned ones differ by layer, so each turns its own."""
        return x if self.hyper.learn_frequencies else TurnedLocations(x)
