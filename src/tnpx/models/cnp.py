"""Conditional neural process (Garnelo et al., 2018): DeepSet encoder, MLP decoder."""

from __future__ import annotations

import torch

from ..nn import MLP
from .base import NeuralProcess, likelihood_head, register, register_preset
from .cnp_family import CNPHyper, deterministic_width, pooling_encoder


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


# MLGlobalHealth/dl4bi @ 0205a5ca7871bc523512c0b007c47e36ca8a567c (the TNP-KR paper's code),
# dl4bi/meta_regression/cnp.py with benchmarks/meta_regression/configs/gp/model/cnp.yaml:
# r = mean over the valid context of MLP([128] * 6)([x, y]) (5 hidden layers, ReLU); decoder
# MLP([128] * 4 + [2 dim_y]) on [r, x_t]; std = min_std + (1 - min_std) softplus(raw),
# min_std = 0 for the GPs (0.05 for MNIST).
register_preset(
    "cnp",
    "kr-code",
    dim_model=128,
    n_encoder_hidden=5,
    n_decoder_hidden=4,
    scale_transform="affine_softplus",
    min_std=0.0,
)


# juho-lee/bnp @ 4cf4b92b38b3ac2aa4bfbbd81de596c9bf7e9645 = tung-nd/TNP-pytorch @ 73df9225,
# regression/models/cnp.py, modules.py (PoolingEncoder, Decoder), configs/gp/cnp.yaml: two
# PoolingEncoders, each build_mlp(dx + dy, 128, 128, depth 4) (3 hidden layers), mean,
# build_mlp(128, 128, 128, depth 2) (1 hidden layer); decoder on [r_1, r_2, x]: Linear, ReLU,
# Linear, ReLU, Linear (depth 3: 2 hidden layers); sigma = 0.1 + 0.9 softplus(raw).
register_preset(
    "cnp",
    "bnp-code",
    dim_model=128,
    n_paths=2,
    n_encoder_hidden=3,
    n_post_hidden=1,
    n_decoder_hidden=2,
    scale_transform="affine_softplus",
    min_std=0.1,
)

# cambridge-mlg/tnp @ e2adb62406a2382b47c4a10f06b2d38c7aa97001, experiments/configs/models/
# cnp.yml with tnp/models/cnp.py (CNPEncoder), tnp/networks/deepset.py (agg: mean),
# tnp/networks/mlp.py, tnp/likelihoods/gaussian.py: z_encoder MLP(dx + dy -> 128, 5 hidden
# layers of 128), nanmean over the context; z_decoder MLP(128 + dx -> 2 dy, 5 hidden layers) on
# [r, x_t]; scale = softplus(raw) ** 0.5 + min_noise, min_noise = 0.
register_preset(
    "cnp",
    "te-code",
    dim_model=128,
    n_encoder_hidden=5,
    n_decoder_hidden=5,
    scale_transform="sqrt_softplus",
    min_std=0.0,
)
