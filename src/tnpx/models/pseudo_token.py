"""Pseudo-token TNPs (TE paper §2.3, §3.1): O(M·N) instead of O(N²).

- ``pt-tnp-ist`` (induced set transformer style, per layer):
  ``U <- MHCA(U, Zc)``; ``Zc <- MHCA(Zc, U)``; ``Zt <- MHCA(Zt, U)``.
- ``pt-tnp-perceiver``: ``U <- MHCA(U, Zc)``; ``U <- MHSA(U)``; ``Zt <- MHCA(Zt, U)``.
- ``te-pt-tnp``: the IST style with TE attention; pseudo-tokens carry pseudo-locations
  initialised by TE Eq. 11, ``v_m = v0_m + sum_n psi(u_m, z_n) x_n``.

M learned pseudo-tokens start from a standard normal (TE F.1). Targets read only from the
pseudo-tokens, so they are conditionally independent given the context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ..nn import MLP, PreNormAttentionBlock, TEAttentionBlock
from .base import NeuralProcess, likelihood_head, register, register_preset
from .cnp import masked_mean
from .te_tnp import te_tokens
from .tnp import TNPHyper


@dataclass
class PTTNPHyper(TNPHyper):
    n_pseudo: int = 32


class _PTTNPBase(NeuralProcess):
    Hyper = PTTNPHyper

    def __init__(self, dim_x: int, dim_y: int, hyper: PTTNPHyper, n_blocks: int):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.embed = MLP(dim_x + dim_y + 1, d, d, hyper.n_embed_hidden)
        self.pseudo = nn.Parameter(torch.randn(hyper.n_pseudo, d))
        self.layers = nn.ModuleList(
            nn.ModuleList(
                PreNormAttentionBlock(d, hyper.n_heads, hyper.dim_head, hyper.dim_ff)
                for _ in range(n_blocks)
            )
            for _ in range(hyper.n_layers)
        )
        self.decoder = MLP(d, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _predict(self, xc, yc, xt, mask_c):
        return self._decode_targets(self._encode_context(xc, yc, mask_c), xt)

    def _decode_targets(self, state, xt):
        """Targets read the pseudo-tokens only: ``Zt <- MHCA(Zt, U_l)`` per layer."""
        (pseudo_states,) = state
        _, zt = self._tokens(xt[:, :0], xt.new_zeros(xt.shape[0], 0, self.dim_y), xt)
        for (*_, to_target), u in zip(self.layers, pseudo_states):
            zt = to_target(zt, u)
        return self.likelihood(self.decoder(zt))

    def _tokens(self, xc, yc, xt):
        """As TNP: ``MLP([x, y, 1])`` for context, ``MLP([x, 0, 0])`` for targets."""
        zc = self.embed(torch.cat([xc, yc, xc.new_ones(*xc.shape[:2], 1)], -1))
        zt = self.embed(torch.cat([xt, xt.new_zeros(*xt.shape[:2], self.dim_y + 1)], -1))
        return zc, zt


@register("pt-tnp-ist")
class PTTNPIST(_PTTNPBase):
    """PT-TNP, IST style: pseudo-tokens read the context, context reads them, targets read them."""

    summary = "Pseudo-token TNP, induced-set-transformer style (M pseudo-tokens, O(M N))"

    def __init__(self, dim_x: int, dim_y: int, hyper: PTTNPHyper):
        super().__init__(dim_x, dim_y, hyper, n_blocks=3)

    def _encode_context(self, xc, yc, mask_c):
        zc, _ = self._tokens(xc, yc, xc[:, :0])
        u = self.pseudo.expand(xc.shape[0], -1, -1)
        pseudo_states = []
        for to_pseudo, to_context, _ in self.layers:
            u = to_pseudo(u, zc, mask_c)  # U <- MHCA(U, Zc)
            zc = to_context(zc, u)  # Zc <- MHCA(Zc, U)
            pseudo_states.append(u)
        return (pseudo_states,)


@register("pt-tnp-perceiver")
class PTTNPPerceiver(_PTTNPBase):
    """PT-TNP, perceiver style: pseudo-tokens read the context, then attend among themselves."""

    summary = "Pseudo-token TNP, perceiver style (LBANP-like; O(M N))"

    def __init__(self, dim_x: int, dim_y: int, hyper: PTTNPHyper):
        super().__init__(dim_x, dim_y, hyper, n_blocks=3)

    def _encode_context(self, xc, yc, mask_c):
        zc, _ = self._tokens(xc, yc, xc[:, :0])
        u = self.pseudo.expand(xc.shape[0], -1, -1)
        pseudo_states = []
        for cross, self_attn, _ in self.layers:
            u = cross(u, zc, mask_c)  # U <- MHCA(U, Zc)
            u = self_attn(u, u)  # U <- MHSA(U)
            pseudo_states.append(u)
        return (pseudo_states,)


PSEUDO_INITS = ("attention", "mean")


@dataclass
class TEPTTNPHyper(PTTNPHyper):
    relative: str = "post"
    location_update: bool = True  # TE Eq. 10 on pseudo, context and target locations
    pseudo_init: str = "attention"  # TE Eq. 11 ("attention") or v0 + mean of x_c ("mean")
    dim_relative_hidden: int | None = None  # width of the rho / phi MLPs (None: dim_model)
    chunk_elements: int = 2**24


class PseudoLocationInit(nn.Module):
    """TE Eq. 11: ``v_m = v0_m + sum_h w_h sum_n alpha_hmn x_n`` with ``alpha_h`` a softmax
    over context tokens of ``(W_q u_m . W_k z_n) / sqrt(d_head)`` and ``w = softmax(a)``;
    rows sum to one, so shifting every ``x_n`` shifts every ``v_m`` by the same amount."""

    def __init__(self, dim_model: int, n_heads: int, dim_head: int):
        super().__init__()
        self.n_heads, self.dim_head = n_heads, dim_head
        self.to_q = nn.Linear(dim_model, n_heads * dim_head)
        self.to_k = nn.Linear(dim_model, n_heads * dim_head)
        self.head_logits = nn.Parameter(torch.zeros(n_heads))

    def forward(self, u, zc, xc, mask_c):
        """u ``[b, M, d]``, zc ``[b, n, d]``, xc ``[b, n, dim_x]`` -> offsets ``[b, M, dim_x]``."""
        b, m, _ = u.shape
        q = self.to_q(u).view(b, m, self.n_heads, self.dim_head).transpose(1, 2)
        k = self.to_k(zc).view(b, zc.shape[1], self.n_heads, self.dim_head).transpose(1, 2)
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.dim_head)  # [b, H, M, n]
        has_key = xc.new_ones(b, dtype=torch.bool)
        if mask_c is not None:
            has_key = mask_c.any(-1)
            safe = mask_c | ~has_key[:, None]  # a fully masked task is zeroed below
            logits = logits.masked_fill(~safe[:, None, None, :], float("-inf"))
        alpha = torch.softmax(logits, -1)
        weights = torch.softmax(self.head_logits, 0).view(1, -1, 1, 1)
        return ((weights * alpha).sum(1)) @ xc * has_key[:, None, None].to(xc.dtype)


@register("te-pt-tnp")
class TEPTTNP(NeuralProcess):
    """TE-PT-TNP: IST-style pseudo-tokens with pseudo-locations and TE attention (TE §3.1)."""

    Hyper = TEPTTNPHyper
    translation_equivariant = True
    summary = "Translation-equivariant pseudo-token TNP with pseudo-locations (TE Eq. 11)"

    def __init__(self, dim_x: int, dim_y: int, hyper: TEPTTNPHyper):
        super().__init__(dim_x, dim_y, hyper)
        if hyper.pseudo_init not in PSEUDO_INITS:
            raise ValueError(
                f"pseudo_init must be one of {PSEUDO_INITS}, got {hyper.pseudo_init!r}"
            )
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.embed = MLP(dim_y + 1, d, d, hyper.n_embed_hidden)
        self.pseudo = nn.Parameter(torch.randn(hyper.n_pseudo, d))
        self.pseudo_loc = nn.Parameter(torch.randn(hyper.n_pseudo, dim_x))
        self.loc_init = (
            PseudoLocationInit(d, hyper.n_heads, hyper.dim_head)
            if hyper.pseudo_init == "attention"
            else None
        )
        te = {
            "dim_x": dim_x,
            "relative": hyper.relative,
            "location_update": hyper.location_update,
            "chunk_elements": hyper.chunk_elements,
            "dim_hidden": hyper.dim_relative_hidden,
        }
        self.layers = nn.ModuleList(
            nn.ModuleList(
                TEAttentionBlock(d, hyper.n_heads, hyper.dim_head, hyper.dim_ff, **te)
                for _ in range(3)
            )
            for _ in range(hyper.n_layers)
        )
        self.decoder = MLP(d, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _predict(self, xc, yc, xt, mask_c):
        return self._decode_targets(self._encode_context(xc, yc, mask_c), xt)

    def _encode_context(self, xc, yc, mask_c):
        """Pseudo-tokens and pseudo-locations after each layer (what the targets read)."""
        b = xc.shape[0]
        zc, _ = te_tokens(self.embed, yc, 0)
        u = self.pseudo.expand(b, -1, -1)
        if self.loc_init is not None:
            offset = self.loc_init(u, zc, xc, mask_c)  # TE Eq. 11
        else:  # ablation: psi = 1/N
            offset = masked_mean(xc, mask_c)[:, None, :]
        v = self.pseudo_loc.expand(b, -1, -1) + offset
        states = []
        for to_pseudo, to_context, _ in self.layers:
            u, v = to_pseudo(u, zc, v, xc, mask_c)
            zc, xc = to_context(zc, u, xc, v)
            states.append((u, v))
        return (states,)

    def _decode_targets(self, state, xt):
        (states,) = state
        zt = te_tokens(self.embed, xt.new_zeros(xt.shape[0], 0, self.dim_y), xt.shape[1])[1]
        for (*_, to_target), (u, v) in zip(self.layers, states):
            zt, xt = to_target(zt, u, xt, v)
        return self.likelihood(self.decoder(zt))


# TE Table 7 ablation: no input adjustment (psi = 1/N in Eq. 11, no Eq. 10 updates).
register_preset("te-pt-tnp", "no-input-adjustment", location_update=False, pseudo_init="mean")
