"""Latent neural process ``np`` (Garnelo et al., 2018, with the deterministic path the TNP-KR
paper's baseline has): a CNP path plus a global latent ``z`` from ``q(z | C)``; the prediction
is the :class:`~tnpx.distributions.LatentMixture` over ``K`` latent samples (see
:mod:`tnpx.models.cnp_family`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..nn import DeepSetEncoder, LatentEncoder
from .base import HeadHyper, register, register_preset
from .cnp_family import LatentNP, LatentOptions


@dataclass
class NPHyper(LatentOptions, HeadHyper):
    zero_allowed: ClassVar[frozenset[str]] = frozenset({"n_post_hidden"})

    dim_model: int = 128
    n_encoder_hidden: int = 5
    n_decoder_hidden: int = 2
    n_latent_hidden: int | None = None  # the latent path's MLP depth; None: n_encoder_hidden
    # hidden layers of an MLP after the deterministic path's mean (None: none; BNP code: 1)
    n_post_hidden: int | None = None


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


# The TNP-KR code's NP/ANP: one z, reconstruction under q(z | C) plus KL(q(z | T) || q(z | C)),
# and scored with that single z (its LL is this model's estimate with K = 1).
# MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c, dl4bi/meta_regression/np.py
# with benchmarks/meta_regression/configs/gp/model/np.yaml: r = mean MLP([128] * 6)([x, y]);
# q(z | C) from mean MLP([128] * 3)([x, y]) through MLP([128, 256]), sigma = 0.1 + 0.9
# sigmoid; decoder MLP([128] * 4 + [2 dim_y]) on [r, z, x]; std = min_std + (1 - min_std)
# softplus(raw); n_z = 1; trained by npf_elbo_train_step (train_utils.py).
register_preset(
    "np",
    "kr-code",
    objective="kr-code",
    n_samples=1,
    n_train_samples=1,
    dim_model=128,
    dim_latent=128,
    n_encoder_hidden=5,
    n_latent_hidden=2,
    n_decoder_hidden=4,
    scale_transform="affine_softplus",
    min_std=0.0,
)


# juho-lee/bnp @ 4cf4b92 = tung-nd/TNP-pytorch @ 73df9225, regression/models/np.py, modules.py,
# configs/gp/np.yaml, gp.py: deterministic PoolingEncoder (build_mlp depth 4, mean, build_mlp
# depth 2); latent PoolingEncoder (depth 4, mean, build_mlp(128, 128, 2 * 128, 2)), sigma =
# 0.1 + 0.9 sigmoid; decoder on [r, z, x] with 2 hidden layers; sigma_y = 0.1 + 0.9
# softplus(raw). Trained with 4 samples z ~ q(z | all points) (importance-weighted), scored
# with 50 samples from q(z | C), logmeanexp per target point (--train_num_samples 4,
# --eval_num_samples 50).
register_preset(
    "np",
    "bnp-code",
    objective="bnp-code",
    n_samples=50,
    n_train_samples=4,
    ll_estimate="marginal",
    dim_model=128,
    dim_latent=128,
    n_encoder_hidden=3,
    n_post_hidden=1,
    n_latent_hidden=3,
    n_decoder_hidden=2,
    scale_transform="affine_softplus",
    min_std=0.1,
)
