"""Attentive neural processes (Kim et al., 2019): ``canp`` (deterministic) and ``anp`` (plus
the latent path of :mod:`~tnpx.models.cnp_family`).

Deterministic path (KR §2.3.1, :class:`~tnpx.nn.AttentiveEncoder`): context tokens
``h = MLP([x_c, y_c])`` pass through ``n_layers`` pre-norm self-attention blocks, then each
target reads them by cross-attention from the query ``MLP(x_t)``: ``r_t = CrossAttn(MLP(x_t),
h)``. The decoder maps ``[r_t, x_t]`` (``canp``) or ``[r_t, z, x_t]`` (``anp``) to the Gaussian
head.

By default cross-attention keys and values are both the self-attended context tokens (which
carry ``x_c`` and ``y_c``). The ANP paper's form, which both reference codes use, keys
``MLP(x_c)`` and values ``h``, is ``keys="x"`` with an attention ``layer`` of the codes
(``"bare"``: the TNP-KR code, ``"bnp"``: the BNP code; :mod:`tnpx.nn.set_attention`); the
presets ``bnp-code`` and ``kr-code`` set them (``docs/fidelity.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..nn import MLP, LatentEncoder
from .base import NeuralProcess, likelihood_head
from .cnp_family import (
    CANPHyper,
    LatentNP,
    LatentOptions,
    attentive_encoder,
    attentive_pooling,
    deterministic_width,
)
from .registry import register


@register("canp")
class CANP(NeuralProcess):
    """Conditional ANP: :class:`~tnpx.nn.AttentiveEncoder`, decoder ``MLP([r_t, x_t])``."""

    Hyper = CANPHyper
    summary = "Conditional attentive NP: context self-attention, target-to-context cross-attention"

    def __init__(self, dim_x: int, dim_y: int, hyper: CANPHyper):
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        self.encoder = attentive_encoder(dim_x, dim_y, hyper)
        n_in = deterministic_width(hyper) + dim_x
        self.decoder = MLP(n_in, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def _predict(self, xc, yc, xt, mask_c):
        r = self.encoder(xc, yc, xt, mask_c)
        return self.likelihood(self.decoder(torch.cat([r, xt], -1)))


@dataclass
class ANPHyper(LatentOptions, CANPHyper):
    pass


@register("anp")
class ANP(LatentNP):
    """ANP: the ``canp`` deterministic path plus a latent path ``q(z | C)`` whose tokens
    ``MLP([x, y])`` self-attend before mean pooling; decoder ``MLP([r_t, z, x_t])``."""

    Hyper = ANPHyper
    summary = (
        "Attentive NP: CANP paths plus a global latent z from q(z given context); K-sample mixture"
    )

    def __init__(self, dim_x: int, dim_y: int, hyper: ANPHyper):
        super().__init__(dim_x, dim_y, hyper)
        h = hyper
        self.deterministic = attentive_encoder(dim_x, dim_y, h)
        self.latent = attentive_pooling(dim_x + dim_y, h.dim_latent, h, cls=LatentEncoder)
