"""Conditional neural process (Garnelo et al., 2018): DeepSet encoder, MLP decoder."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..nn import MLP
from .base import HeadHyper, NeuralProcess, likelihood_head, register


def masked_mean(z: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Mean over the set dimension of ``z [b, n, d]`` counting only ``mask [b, n]`` entries;
    an empty set gives zeros."""
    if mask is None:
        return z.sum(1) / max(z.shape[1], 1)
    w = mask.to(z.dtype)[..., None]
    return (z * w).sum(1) / w.sum(1).clamp_min(1.0)


@dataclass
class CNPHyper(HeadHyper):
    dim_model: int = 128
    n_encoder_hidden: int = 5
    n_decoder_hidden: int = 2


@register("cnp")
class CNP(NeuralProcess):
    """``r = mean_n phi([xc_n, yc_n])``; ``p(yt | xt) = N(decoder([r, xt]))`` (TE F.1 sizes)."""

    Hyper = CNPHyper
    summary = "Conditional NP: mean-pooled MLP encoder of (x, y) pairs, MLP decoder"

    def __init__(self, dim_x: int, dim_y: int, hyper: CNPHyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.encoder = MLP(dim_x + dim_y, d, d, hyper.n_encoder_hidden)
        self.decoder = MLP(d + dim_x, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _predict(self, xc, yc, xt, mask_c):
        return self._decode_targets(self._encode_context(xc, yc, mask_c), xt)

    def _encode_context(self, xc, yc, mask_c):
        return (masked_mean(self.encoder(torch.cat([xc, yc], -1)), mask_c),)  # r [b, d]

    def _decode_targets(self, state, xt):
        r = state[0][:, None, :].expand(-1, xt.shape[1], -1)
        return self.likelihood(self.decoder(torch.cat([r, xt], -1)))
