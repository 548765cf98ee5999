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
from .base import NeuralProcess, likelihood_head, register, register_preset
from .cnp_family import (
    CANPHyper,
    LatentNP,
    LatentOptions,
    attentive_encoder,
    attentive_pooling,
    deterministic_width,
)


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


# The TNP-KR code's CANP / ANP: MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c,
# dl4bi/meta_regression/{canp,anp}.py, dl4bi/core/{attention,mlp}.py, configs/gp/model/
# {canp,anp}.yaml: tokens enc_det = MLP([128] * 3)([x, y]) (2 hidden layers); self_attn_det a
# bare MultiHeadAttention (8 heads of 16, q/k/v/out Dense with bias; no residual, LayerNorm or
# feed-forward); cross_attn (the same kind) with queries embed_s(x_t), keys embed_s(x_c),
# embed_s = MLP([128, 128]) (1 hidden layer), values the tokens; decoder MLP([128] * 4 + [2])
# on [r, x] (CANP) or [x, r, z] (ANP); std = min_std + (1 - min_std) softplus(raw). ANP's
# latent path: enc_lat = MLP([128] * 3), a bare self-attention, masked mean, z_dist =
# MLP([128, 256]), sigma = 0.1 + 0.9 sigmoid; n_z = 1; trained by npf_elbo_train_step.
_KR_ATTENTIVE = dict(
    dim_model=128, n_layers=1, n_heads=8, dim_head=16, n_embed_hidden=2, n_decoder_hidden=4,
    layer="bare", keys="x", n_key_hidden=1, scale_transform="affine_softplus", min_std=0.0,
)  # fmt: skip
register_preset("canp", "kr-code", **_KR_ATTENTIVE)
register_preset(
    "anp",
    "kr-code",
    objective="kr-code",
    n_samples=1,
    n_train_samples=1,
    dim_latent=128,
    decoder_order="x-r-z",
    **_KR_ATTENTIVE,
)

# The BNP code's CANP / ANP: juho-lee/bnp @ 4cf4b92b38b3ac2aa4bfbbd81de596c9bf7e9645 =
# tung-nd/TNP-pytorch @ 73df9225, regression/models/{canp,anp,modules,attention}.py,
# configs/gp/{canp,anp}.yaml, gp.py. CrossAttnEncoder: values build_mlp(dx + dy, 128, 128, 2)
# (1 hidden layer) then SelfAttn; queries and keys build_mlp(dx, 128, 128, 2)(x); every
# attention is MultiHeadAttn (post-norm, residual on the projected query, logits / sqrt(128),
# 8 heads, no q/k/v bias, relu(fc_out) residual). CANP adds a PoolingEncoder(self_attn=True):
# build_mlp(depth 2), ReLU, SelfAttn, mean, build_mlp(128, 128, 128, 2); decoder on [r_1, r_2,
# x] (CANP) or [r, z, x] (ANP) with 2 hidden layers; sigma = 0.1 + 0.9 softplus(raw). ANP's
# latent path is that PoolingEncoder with output 2 * 128, sigma = 0.1 + 0.9 sigmoid. NP-style
# training: 4 samples from q(z | all points), importance-weighted; evaluation with 50 samples,
# logmeanexp per target point.
_BNP_ATTENTIVE = dict(
    dim_model=128, n_layers=1, n_heads=8, dim_head=16, n_embed_hidden=1, n_key_hidden=1,
    n_decoder_hidden=2, layer="bnp", keys="x", scale_transform="affine_softplus", min_std=0.1,
)  # fmt: skip
register_preset("canp", "bnp-code", **_BNP_ATTENTIVE, pooled_path=True)
register_preset(
    "anp",
    "bnp-code",
    objective="bnp-code",
    n_samples=50,
    n_train_samples=4,
    ll_estimate="marginal",
    dim_latent=128,
    **_BNP_ATTENTIVE,
)
