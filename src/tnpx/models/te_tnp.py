"""Translation-equivariant TNPs (Ashman et al., 2024; thesis §4.3): ``te-tnp``, ``re-te-tnp``.

Tokens never contain x: context tokens are ``MLP([y, 0])``, every target token starts as
``MLP([0, 1])`` (the flag marks a target). Each layer applies TE self-attention to the
context and TE cross-attention from targets to context; locations enter only through
relative positions (or distances, for ``re-te-tnp``), so predictions are unchanged when
context and targets are shifted together (and, for ``re-te-tnp``, rotated).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nn import MLP, TEAttentionBlock
from .base import NeuralProcess, likelihood_head, register, register_preset
from .tnp import TNPHyper

UPDATE_ORDERS = ("sequential", "parallel")


@dataclass
class TETNPHyper(TNPHyper):
    relative: str = "post"  # post (TE Eq. 8) | pre | rbf | identity (thesis variants)
    location_update: bool = True  # TE Eq. 10 (the paper's model)
    share_weights: bool = False  # one block for context MHSA and target MHCA (released code)
    update_order: str = "sequential"  # targets attend to the updated context, or the layer input
    dim_relative_hidden: int | None = None  # width of the rho / phi MLPs (None: dim_model)
    chunk_elements: int = 2**24  # bound on pair features per query chunk


def te_tokens(embed: nn.Module, yc: torch.Tensor, n_tgt: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Context tokens ``MLP([y, 0])`` ``[b, n_ctx, d]`` and target tokens ``MLP([0, 1])``
    ``[b, n_tgt, d]``: no input location enters a token."""
    b, n_ctx, dim_y = yc.shape
    zc = embed(torch.cat([yc, yc.new_zeros(b, n_ctx, 1)], -1))
    target_input = torch.cat([yc.new_zeros(b, 1, dim_y), yc.new_ones(b, 1, 1)], -1)
    return zc, embed(target_input).expand(b, n_tgt, -1)


class _TETNPBase(NeuralProcess):
    Hyper = TETNPHyper
    translation_equivariant = True
    rotation_invariant_logits = False

    def __init__(self, dim_x: int, dim_y: int, hyper: TETNPHyper):
        super().__init__(dim_x, dim_y, hyper)
        if hyper.update_order not in UPDATE_ORDERS:
            raise ValueError(
                f"update_order must be one of {UPDATE_ORDERS}, got {hyper.update_order!r}"
            )
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.embed = MLP(dim_y + 1, d, d, hyper.n_embed_hidden)
        te = {
            "dim_x": dim_x,
            "relative": hyper.relative,
            "location_update": hyper.location_update,
            "rotation_invariant": self.rotation_invariant_logits,
            "chunk_elements": hyper.chunk_elements,
            "dim_hidden": hyper.dim_relative_hidden,
        }

        def block():
            return TEAttentionBlock(d, hyper.n_heads, hyper.dim_head, hyper.dim_ff, **te)

        self.context_layers = nn.ModuleList(block() for _ in range(hyper.n_layers))
        self.target_layers = (
            self.context_layers
            if hyper.share_weights
            else nn.ModuleList(block() for _ in range(hyper.n_layers))
        )
        self.decoder = MLP(d, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _predict(self, xc, yc, xt, mask_c):
        return self._decode_targets(self._encode_context(xc, yc, mask_c), xt)

    def _encode_context(self, xc, yc, mask_c):
        """The context tokens and locations each target layer reads, per layer."""
        zc, _ = te_tokens(self.embed, yc, 0)
        sequential = self.hyper.update_order == "sequential"
        states = []
        for ctx_layer in self.context_layers:
            zc_new, xc_new = ctx_layer(zc, zc, xc, xc, mask_c)  # TE-MHSA on the context
            states.append((zc_new, xc_new) if sequential else (zc, xc))
            zc, xc = zc_new, xc_new
        return (states, mask_c)

    def _decode_targets(self, state, xt):
        states, mask_c = state
        zt = te_tokens(self.embed, xt.new_zeros(xt.shape[0], 0, self.dim_y), xt.shape[1])[1]
        for tgt_layer, (zc, xc) in zip(self.target_layers, states):
            zt, xt = tgt_layer(zt, zc, xt, xc, mask_c)  # TE-MHCA targets -> context
        return self.likelihood(self.decoder(zt))


@register("te-tnp")
class TETNP(_TETNPBase):
    """TE-TNP: TE-MHSA over the context and TE-MHCA from the targets (TE Eq. 7-10)."""

    summary = "Translation-equivariant TNP: attention logits from rho(q.k, x_n - x_m) (TE Eq. 7-10)"


@dataclass
class RETETNPHyper(TETNPHyper):
    location_update: bool = False  # Eq. 10 needs x_n - x_m; undefined for distances


@register("re-te-tnp")
class RETETNP(_TETNPBase):
    """RE-TE-TNP (thesis §6.3): TE-TNP with the distance |x_n - x_m| in place of the difference."""

    Hyper = RETETNPHyper
    rotation_equivariant = True
    rotation_invariant_logits = True
    summary = "Rotation- and translation-equivariant TE-TNP: logits use |x_n - x_m| (thesis)"


# The authors' released configs: weights shared between context MHSA and target MHCA, no
# location update (PROTOCOLS "Details the papers leave out").
register_preset("te-tnp", "released-code", share_weights=True, location_update=False)
