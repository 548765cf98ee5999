"""Relational CNP, the "simple RCNP" of Huang et al. (2023) as in the TE paper (App. F.1).

Encoder: ``e(x_t, D_c) = mean_n phi([x_t - x_c,n, y_c,n])``, one representation per target,
``phi`` an MLP with 5 hidden layers of ``dim_model``; decoder: an MLP (2 hidden layers) from
``e`` alone to the likelihood. Inputs enter only as differences, so the model is translation
equivariant. Cost O(n_ctx * n_tgt): targets are processed in chunks, so peak memory is bounded
by ``chunk_elements`` pair features, never ``[batch, n_tgt, n_ctx, dim_model]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..nn import MLP, map_target_chunks, masked_mean
from .base import HeadHyper, NeuralProcess, likelihood_head
from .registry import register


@dataclass
class RCNPHyper(HeadHyper):
    dim_model: int = 128
    n_encoder_hidden: int = 5
    n_decoder_hidden: int = 2
    chunk_elements: int = 2**24  # bound on batch * chunk * n_ctx * dim_model


@register("rcnp")
class RCNP(NeuralProcess):
    """``p(y_t | x_t, D_c) = N(decoder(mean_n phi([x_t - x_c,n, y_c,n])))`` (TE F.1 sizes)."""

    Hyper = RCNPHyper
    summary = "Relational CNP: mean over context of MLP(x_t - x_c, y_c), MLP decoder (Huang 2023)"
    translation_equivariant = True

    def __init__(self, dim_x: int, dim_y: int, hyper: RCNPHyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.phi = MLP(dim_x + dim_y, d, d, hyper.n_encoder_hidden)
        self.decoder = MLP(d, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def chunk_size(self, batch: int, n_ctx: int) -> int:
        """Targets per chunk so a chunk's pair features stay within ``chunk_elements``."""
        return max(1, self.hyper.chunk_elements // max(batch * n_ctx * self.hyper.dim_model, 1))

    def _encode(self, xt, xc, yc, mask_c):
        """xt ``[b, n_tgt, dim_x]`` (one chunk) -> ``e(x_t, D_c)`` ``[b, n_tgt, dim_model]``."""
        b, n_tgt, _ = xt.shape
        n_ctx = xc.shape[1]
        diff = xt[:, None, :, :] - xc[:, :, None, :]  # [b, n_ctx, n_tgt, dim_x]
        pairs = torch.cat([diff, yc[:, :, None, :].expand(-1, -1, n_tgt, -1)], -1)
        z = self.phi(pairs)  # [b, n_ctx, n_tgt, d]
        # masked mean over the context (padding ignored; an empty context gives zeros)
        d = z.shape[-1]
        return masked_mean(z.reshape(b, n_ctx, n_tgt * d), mask_c).view(b, n_tgt, d)

    def _predict(self, xc, yc, xt, mask_c):
        size = self.chunk_size(*xc.shape[:2])
        e = map_target_chunks(self._encode, xt, size, xc, yc, mask_c)
        return self.likelihood(self.decoder(e))
