"""The ``tnp-nd`` preset ``tnpd-code`` computes the function of TNP-ND's code
(``docs/fidelity.md``): tung-nd/TNP-pytorch @ 73df9225ab584b6148645851d82f96df518da78a,
``regression/models/tnp.py`` (``TNP.encode``), ``regression/models/tnpnd.py`` (``TNPND.decode``),
``regression/models/modules.py`` (``build_mlp``) and ``regression/configs/gp/tnpnd.yaml``;
``bound_std`` from ``regression/configs/emnist/tnpnd.yaml``, ``cov_approx: lowrank`` from
``bayesian_optimization/configs/gp/tnpnd.yaml``.

The forward pass is re-derived here in float64 from those equations (explicit per-head softmax
attention, LayerNorm, MLPs, the covariance written out), reading the tnpx model's
``state_dict()`` by name and never calling its layers. The code takes no context mask, so each
task is computed on its own valid context points. Mean and covariance are compared to 1e-10,
and the joint log-likelihood per target with them.
"""

from __future__ import annotations

import pytest
import torch
from torch.distributions import MultivariateNormal
from torch.testing import assert_close

import tnpx
from tests.helpers.reference_ops import (
    TOL,
    assert_reloads_identically,
    layer_norm,
    masked_task,
    mlp,
    randomise,
    softmax_attention,
)
from tests.helpers.reference_ops import count_parameters as count
from tnpx.batch import Batch
from tnpx.models.registry import PRESETS

TINY = dict(
    dim_model=8, n_layers=2, n_heads=2, dim_ff=12, dim_decoder_hidden=12, dim_cov_hidden=12,
    rank=3, n_cov_layers=2,
)  # fmt: skip
# the code's variants: the GP config (cholesky), EMNIST (bound_std), the BO config (lowrank)
VARIANTS = {
    "cholesky": dict(covariance="cholesky", diagonal="factor"),
    "cholesky-bound-std": dict(covariance="cholesky", diagonal="factor-tanh"),
    "lowrank": dict(covariance="lowrank", diagonal="net"),
}


def post_norm_layer(z, keys, sd, b, n_heads):
    """``nn.TransformerEncoderLayer`` (``norm_first=False``, ReLU, dropout 0): ``x =
    norm1(x + sa(x, keys))``, ``x = norm2(x + linear2(relu(linear1(x))))``."""
    z = layer_norm(z + softmax_attention(z, keys, sd, f"{b}.attn", n_heads), sd, f"{b}.norm_attn")
    return layer_norm(z + mlp(z, sd, f"{b}.ff", 2), sd, f"{b}.norm_ff")


def tnpnd_reference(sd, xc, yc, xt, h):
    """TNP-ND of one task: ``TNP.encode`` (``build_mlp`` embedder of ``[x, y]`` / ``[x, 0]``,
    post-norm ``nn.TransformerEncoder`` where every token attends to the context, the target
    outputs); ``mean = mean_net(z)`` flattened target-major; ``std_encoder`` (post-norm layers,
    targets attending to targets, no mask); ``F = projector(.)`` viewed ``[n_tgt dy, rank]``;
    cholesky: ``L = tril(F F^T)`` (``bound_std``: diagonal ``0.05 + 0.95 tanh``); lowrank:
    ``Sigma = F F^T + diag(exp(diag_net(z)))``. Returns the mean and the covariance."""
    n_ctx, n_embed = len(xc), h["n_embed_hidden"] + 1
    yt = torch.zeros(len(xt), yc.shape[-1], dtype=xt.dtype)
    z = mlp(torch.cat([torch.cat([xc, yc], -1), torch.cat([xt, yt], -1)]), sd, "embed.mlp", n_embed)
    for layer in range(h["n_layers"]):
        z = post_norm_layer(z, z[:n_ctx], sd, f"stack.blocks.{layer}", h["n_heads"])
    zt = z[n_ctx:]  # out[:, -num_tar:]
    mean = mlp(zt, sd, "decoder", h["n_decoder_hidden"] + 1).reshape(-1)
    s = zt
    for layer in range(h["n_cov_layers"]):
        s = post_norm_layer(s, s, sd, f"cov_layers.{layer}", h["n_heads"])
    prj = mlp(s, sd, "projector", h["n_cov_hidden"] + 1).reshape(len(mean), -1)
    if h["covariance"] == "lowrank":
        diagonal = torch.exp(mlp(zt, sd, "diag_net", h["n_cov_hidden"] + 1)).reshape(-1)
        return mean, prj @ prj.T + torch.diag(diagonal)
    tril = torch.tril(prj @ prj.T)
    if h["diagonal"] == "factor-tanh":
        idx = torch.arange(len(mean))
        tril[idx, idx] = 0.05 + 0.95 * torch.tanh(tril[idx, idx])
    return mean, tril @ tril.T


def tiny(variant, n_heads=2, dim_x=2, dim_y=2):
    sizes = {**TINY, **VARIANTS[variant], "n_heads": n_heads}
    model = tnpx.build_model("tnp-nd", dim_x, dim_y, preset="tnpd-code", **sizes)
    return randomise(model, 0.4)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_tnpd_code_equals_the_reference_forward(variant):
    model = tiny(variant)
    xc, yc, xt, mask = masked_task()
    sd, hyper = model.state_dict(), vars(model.hyper)
    refs = [tnpnd_reference(sd, xc[i, mask[i]], yc[i, mask[i]], xt[i], hyper) for i in range(3)]
    mean = torch.stack([m for m, _ in refs]).reshape(xt.shape[0], xt.shape[1], -1)
    cov = torch.stack([c for _, c in refs])
    assert torch.linalg.eigvalsh(cov).min() > 1e-6  # a proper covariance, not a vacuous check
    assert cov.diagonal(dim1=-2, dim2=-1).max() < 1e4
    off = cov - torch.diag_embed(cov.diagonal(dim1=-2, dim2=-1))
    assert off.abs().max() > 1e-3  # the targets are correlated
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
    assert_close(pred.mean, mean, **TOL)
    assert_close(pred.covariance_matrix, cov, **TOL)
    yt = torch.randn(mean.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    reference_ll = MultivariateNormal(mean.flatten(1), cov).log_prob(yt.flatten(1)) / xt.shape[1]
    with torch.no_grad():
        ll = model.log_likelihood(Batch(xc, yc, xt, yt, mask_c=mask), pred)
    assert_close(ll, reference_ll, **TOL)


def test_the_bo_config_heads():
    """The BO config (``nhead: 8``, lowrank): heads of ``d_model / nhead``."""
    model = tiny("lowrank", n_heads=4)
    assert model.hyper.dim_head == 2
    xc, yc, xt, mask = masked_task()
    sd, hyper = model.state_dict(), vars(model.hyper)
    mean, cov = tnpnd_reference(sd, xc[0], yc[0], xt[0], hyper)
    with torch.no_grad():
        pred = model(xc[:1], yc[:1], xt[:1])
    assert_close(pred.covariance_matrix[0], cov, **TOL)
    assert_close(pred.mean[0].reshape(-1), mean, **TOL)


def test_the_preset_stack_is_tnp_d_tnpd_code():
    """TNP-ND's encoder is TNP-D's: the preset's stack options are the ``tnp-d`` preset's."""
    nd, d = PRESETS["tnp-nd"]["tnpd-code"], PRESETS["tnp-d"]["tnpd-code"]
    shared = ("share_weights", "targets_read", "norm", "tokens", "dim_model", "n_layers",
              "n_heads", "dim_head", "dim_ff", "n_embed_hidden", "n_decoder_hidden",
              "dim_decoder_hidden")  # fmt: skip
    assert {k: nd[k] for k in shared} == {k: d[k] for k in shared}


def test_parameter_count_at_the_code_sizes():
    # dx = dy = 1: TNP-D's encoder (embed 12,672 + 6 post-norm layers of 33,472); mean_net
    # 64 -> 128 -> 1 (8,449); std_encoder 2 layers (66,944); projector 64 -> 128 -> 128 -> 128
    # -> 20 (8,320 + 2 * 16,512 + 2,580).
    expected = 12_672 + 6 * 33_472 + 8_449 + 2 * 33_472 + 8_320 + 2 * 16_512 + 2_580
    assert expected == 332_821
    assert count(tnpx.build_model("tnp-nd", preset="tnpd-code")) == expected
    # lowrank adds diag_net 64 -> 128 -> 128 -> 128 -> 1
    lowrank = tnpx.build_model("tnp-nd", preset="tnpd-code", covariance="lowrank", diagonal="net")
    assert count(lowrank) == expected + 8_320 + 2 * 16_512 + 129


def test_preset_saves_and_loads(tmp_path):
    model = tiny("cholesky").float()
    assert_reloads_identically(model, tmp_path / "model.pt")


def test_defaults_are_unchanged():
    model = tnpx.build_model("tnp-nd")
    h = model.hyper
    assert (h.diagonal, h.tokens, h.dim_cov_hidden, h.covariance) == (
        "head", "flagged", None, "cholesky",
    )  # fmt: skip
    assert model.embed.kind == "flagged" and not hasattr(model, "diag_net")
    assert model.decoder[-1].out_features == 2  # mean and scale
    assert model.projector[0].out_features == h.dim_model


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"diagonal": "net"}, "needs covariance in"),
        ({"covariance": "lowrank", "diagonal": "factor"}, "needs covariance in"),
        ({"diagonal": "ones"}, "diagonal must be"),
        ({"tokens": "y-only"}, "tokens must be"),
    ],
)
def test_bad_options_fail_clearly(kw, message):
    with pytest.raises(ValueError, match=message):
        tnpx.build_model("tnp-nd", 1, 1, **kw)
