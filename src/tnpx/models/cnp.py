"""Conditional neural process (Garnelo et al., 2018): DeepSet encoder, MLP decoder."""

from __future__ import annotations

import torch

from ..nn import MLP
from .base import NeuralProcess, likelihood_head
from .cnp_family import CNPHyper, deterministic_width, pooling_encoder
from .registry import register


@register("cnp")
class CNP(NeuralProcess):
    """``r = mean_n phi([xc_n, yc_n])``; ``p(yt | xt) = N(decoder([r, xt]))`` (TE F.1 sizes).

    ``n_paths`` encoders side by side (``r = [r_1, r_2]``) and ``n_post_hidden`` (an MLP after
    the mean) give the BNP code's CNP (preset ``bnp-code``)."""

    Hyper = CNPHyper
    summary = "Conditional NP: mean-pooled MLP encoder of (x, y) pairs, MLP decoder"
    renamed_parameters = {1: (("encoder.", "encoder.mlp."),)}

    def __init__(self, dim_x: int, dim_y: int, hyper: CNPHyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.encoder = pooling_encoder(dim_x, dim_y, hyper)
        n_in = deterministic_width(hyper) + dim_x
        self.decoder = MLP(n_in, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _encode_context(self, xc, yc, mask_c) -> torch.Tensor:
        return self.encoder.pooled(xc, yc, mask_c)  # r [b, n_paths * d]

    def _decode_targets(self, state: torch.Tensor, xt):
        r = state[:, None, :].expand(-1, xt.shape[1], -1)
        return self.likelihood(self.decoder(torch.cat([r, xt], -1)))
