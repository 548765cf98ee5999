"""Latent neural process ``np`` (Garnelo et al., 2018, with the deterministic path the TNP-KR
paper's baseline has): a CNP path plus a global latent ``z`` from ``q(z | C)``; the prediction
is the :class:`~tnpx.distributions.LatentMixture` over ``K`` latent samples (see
:mod:`tnpx.models.cnp_family`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..nn import DeepSetEncoder, LatentEncoder
from .base import HeadHyper
from .cnp_family import LatentNP, LatentOptions
from .registry import register
from .sizes import zero_allowed


@dataclass
class NPHyper(LatentOptions, HeadHyper):
    dim_model: int = 128
    n_encoder_hidden: int = 5
    n_decoder_hidden: int = 2
    n_latent_hidden: int | None = None  # the latent path's MLP depth; None: n_encoder_hidden
    # hidden layers of an MLP after the deterministic path's mean (None: none; BNP code: 1)
    n_post_hidden: int | None = zero_allowed(None)
    # one pooling path (the shared CNP-family code reads these of every hyper)
    n_paths: ClassVar[int] = 1
    pooled_path: ClassVar[bool] = False


@register("np")
class NP(LatentNP):
    """Latent NP: deterministic path ``r = mean_n MLP([x_n, y_n])`` (as CNP), latent path
    ``q(z | C)`` from a second mean-pooled MLP, decoder ``MLP([r, z, x_t])``."""

    Hyper = NPHyper
    summary = "Latent NP: CNP path plus a global latent z from q(z given context); K-sample mixture"

    def __init__(self, dim_x: int, dim_y: int, hyper: NPHyper):
        super().__init__(dim_x, dim_y, hyper)
        d, n_hidden = hyper.dim_model, hyper.n_encoder_hidden
        self.deterministic = DeepSetEncoder(dim_x + dim_y, d, n_hidden, hyper.n_post_hidden)
        n_latent = n_hidden if hyper.n_latent_hidden is None else hyper.n_latent_hidden
        self.latent = LatentEncoder(dim_x + dim_y, d, hyper.dim_latent, n_latent)
