"""The ``bnp-code`` presets compute the BNP code's functions, and ``cnp`` ``te-code`` the
cambridge-mlg/tnp CNP's (``docs/fidelity.md``).

BNP code: juho-lee/bnp @ 4cf4b92b38b3ac2aa4bfbbd81de596c9bf7e9645, copied (the same model
functions) into tung-nd/TNP-pytorch @ 73df9225ab584b6148645851d82f96df518da78a:
``regression/models/{cnp,np,canp,anp,bnp,banp,modules,attention}.py``,
``regression/configs/gp/*.yaml``, ``regression/gp.py``. cambridge-mlg/tnp @ e2adb62:
``experiments/configs/models/cnp.yml``, ``tnp/models/cnp.py``, ``tnp/networks/{deepset,mlp}.py``,
``tnp/likelihoods/gaussian.py``.

Each forward pass (and each training objective that differs from tnpx's default) is re-derived
here in float64 from those equations, reading the tnpx model's parameters by name and never
calling its layers, per task on its own valid context points. Latent draws and bootstrap
indices come from other generators than the code's; they are fixed and shared (as
``test_fidelity_kr.py`` fixes ``np``'s draw), so the comparison is of the function given them.
The reference's shared operations are in ``tests/helpers/bnp_reference.py``; the parameter counts,
presets, defaults and checkpoints in ``test_fidelity_bnp_presets.py``.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.bnp_reference import (
    SIZES,
    canp_encode,
    cnp_encode,
    cross_attn_encoder,
    decoder,
    pooling_encoder,
    rep,
    self_attn_pooling,
)
from tests.helpers.reference_ops import (
    TOL,
    fix_bootstrap,
    fix_latent_draw,
    logmeanexp,
    masked_task,
    mlp,
    normal_kl,
    normal_log_prob,
    randomise,
    reference_prediction,
    sigmoid,
    softplus,
)
from tnpx.batch import Batch


def tiny(name, preset="bnp-code", **extra):
    model = tnpx.build_model(name, 2, 2, preset=preset, **{**SIZES[name], **extra})
    return randomise(model)


# --- the models ------------------------------------------------------------------------------


def cnp_reference(sd, xc, yc, xt, h):
    return decoder(cnp_encode(sd, xc, yc, xt), xt, sd)


def canp_reference(sd, xc, yc, xt, h):
    return decoder(canp_encode(sd, xc, yc, xt), xt, sd)


def latent_path(sd, xc, yc, attentive):
    """``lenc``: ``(mu, s) = PoolingEncoder(dim_lat)``, ``sigma = 0.1 + 0.9 sigmoid(s)``."""
    if attentive:
        stats = self_attn_pooling(xc, yc, sd, "latent")
    else:
        stats = mlp(mlp(torch.cat([xc, yc], -1), sd, "latent.embed", 4).mean(0), sd,
                    "latent.head", 2)  # fmt: skip
    mu, s = stats.chunk(2, -1)
    return mu, 0.1 + 0.9 * sigmoid(s)


def latent_decode(sd, xc, yc, xt, z, attentive):
    """``np.py`` / ``anp.py`` ``predict`` given ``z [K, d_z]``: ``dec([theta, z], x_t)``;
    ``theta = denc(xc, yc)`` (NP: ``PoolingEncoder``, ANP: ``CrossAttnEncoder``)."""
    if attentive:
        theta = cross_attn_encoder(xc, yc, xt, sd, "deterministic")
    else:
        theta = rep(pooling_encoder(xc, yc, sd, "deterministic"), len(xt))
    out = [decoder(torch.cat([theta, rep(zk[None], len(xt))], -1), xt, sd) for zk in z]
    return torch.stack([m for m, _ in out]), torch.stack([s for _, s in out])


# --- deterministic models: CNP, CANP, and cambridge's CNP -------------------------------------


def te_cnp_reference(sd, xc, yc, xt, h):
    """cambridge-mlg/tnp ``CNP``: ``z_encoder = MLP(dx + dy -> 128, 5 hidden layers)``,
    ``nanmean``; ``z_decoder = MLP(128 + dx -> 2 dy, 5 hidden)`` on ``[r, x_t]``;
    ``scale = softplus(raw) ** 0.5 + 0`` (``HeteroscedasticNormalLikelihood``)."""
    r = mlp(torch.cat([xc, yc], -1), sd, "encoder.mlp", 6).mean(0)
    mu, raw = mlp(torch.cat([rep(r, len(xt)), xt], -1), sd, "decoder", 6).chunk(2, -1)
    return mu, softplus(raw) ** 0.5


DETERMINISTIC = {
    ("cnp", "bnp-code"): cnp_reference,
    ("canp", "bnp-code"): canp_reference,
    ("cnp", "te-code"): te_cnp_reference,
}


@pytest.mark.parametrize("name,preset", list(DETERMINISTIC))
def test_deterministic_presets_equal_the_reference_forward(name, preset):
    model = tiny(name, preset) if preset == "bnp-code" else randomise(
        tnpx.build_model(name, 2, 2, preset=preset, dim_model=8))  # fmt: skip
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask)
        streamed = model.predict_streamed(xc, yc, xt, mask_c=mask, chunk_size=2)
    mean, std = reference_prediction(model, DETERMINISTIC[name, preset], xc, yc, xt, mask)
    assert std.min() > 0 and std.max() < 1e3 and mean.abs().max() > 1e-2  # not vacuous
    for p in (pred, streamed):
        assert_close(p.mean, mean, **TOL)
        assert_close(p.stddev, std, **TOL)


# --- NP and ANP: the prediction given the latent draws, and the training objective -------------


@pytest.mark.parametrize("name", ["np", "anp"])
def test_latent_presets_equal_the_reference_given_the_draws(monkeypatch, name):
    model = tiny(name)
    eps = torch.randn(3, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    fix_latent_draw(monkeypatch, model, eps)
    xc, yc, xt, mask = masked_task()
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask).component  # [K, b, n_tgt, dim_y]
    sd = model.state_dict()
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        mu, sigma = latent_path(sd, c, y, name == "anp")  # p(z | C) = lenc(xc, yc)
        mean, std = latent_decode(sd, c, y, xt[i], mu + sigma * eps, name == "anp")
        assert_close(pred.mean[:, i], mean, **TOL)
        assert_close(pred.stddev[:, i], std, **TOL)


def latent_objective_reference(sd, xc, yc, xt, yt, eps, attentive):
    """``np.py`` / ``anp.py`` ``forward`` in training: ``pz = lenc(xc, yc)``, ``qz = lenc(x,
    y)`` on all of the batch's points (here: the targets), ``z = qz.rsample([K])``; for ``K >
    1`` ``-logmeanexp(log p(y | z) + log pz(z) - log qz(z)) / N``, for ``K = 1`` ``-(log p(y |
    z) - KL(qz || pz)) / N``."""
    mu_p, s_p = latent_path(sd, xc, yc, attentive)
    mu_q, s_q = latent_path(sd, xt, yt, attentive)
    z = mu_q + s_q * eps
    mean, std = latent_decode(sd, xc, yc, xt, z, attentive)
    recon = normal_log_prob(yt, mean, std).sum((-1, -2))  # [K]
    if len(eps) == 1:
        return -(recon[0] - normal_kl(mu_q, s_q, mu_p, s_p).sum()) / len(xt)
    log_w = recon + normal_log_prob(z, mu_p, s_p).sum(-1) - normal_log_prob(z, mu_q, s_q).sum(-1)
    return -logmeanexp(log_w) / len(xt)


@pytest.mark.parametrize("k", [3, 1])
@pytest.mark.parametrize("name", ["np", "anp"])
def test_latent_training_objective_is_the_reference(monkeypatch, name, k):
    model = tiny(name, n_train_samples=k).train()
    eps = torch.randn(k, 3, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    fix_latent_draw(monkeypatch, model, eps)
    xc, yc, xt, mask = masked_task()
    yt = torch.randn(xt.shape[:2] + (2,), generator=torch.Generator().manual_seed(7),
                     dtype=torch.float64)  # fmt: skip
    loss = model.training_loss(Batch(xc=xc, yc=yc, xt=xt, yt=yt, mask_c=mask))
    sd = model.state_dict()
    ref = torch.stack([
        latent_objective_reference(sd, xc[i, mask[i]], yc[i, mask[i]], xt[i], yt[i], eps,
                                   name == "anp")
        for i in range(3)
    ]).mean()  # fmt: skip
    assert_close(loss, ref, **TOL)


# --- BNP and BANP: the bootstrap given the resampling indices ---------------------------------


def bootstrap_reference(sd, xc, yc, xt, index, encode, grad=False):
    """``bnp.py`` / ``banp.py`` ``predict`` given the indices ``[2, K, n]`` of one task:
    ``(bxc, byc) = SWR(xc, yc)``; ``(mu, sigma) = dec(encode(bxc, byc, xc), xc)``; ``res =
    SWR((yc - mu) / sigma)`` centred; ``byc = mu + sigma res`` at ``bxc = xc`` (under
    ``no_grad`` unless ``grad``); ``dec(encode(xc, yc, xt), xt, ctx=encode(xc, byc, xt))``.
    Returns the base model's ``(mean, std)`` and the components' ``[K, n_tgt, dim_y]``."""
    n, means, stds = len(xc), [], []
    r_base = encode(sd, xc, yc, xt)
    for pairs, residuals in zip(index[0, :, :n], index[1, :, :n]):
        with torch.set_grad_enabled(grad and torch.is_grad_enabled()):
            mu, sigma = decoder(encode(sd, xc[pairs], yc[pairs], xc), xc, sd)
            res = ((yc - mu) / sigma)[residuals]
            y_boot = mu + sigma * (res - res.mean(0))
        m, s = decoder(r_base, xt, sd, ctx=encode(sd, xc, y_boot, xt))
        means.append(m)
        stds.append(s)
    return decoder(r_base, xt, sd), (torch.stack(means), torch.stack(stds))


BOOTSTRAP = {"bnp": cnp_encode, "banp": canp_encode}


@pytest.mark.parametrize("name", list(BOOTSTRAP))
def test_bootstrap_presets_equal_the_reference_given_the_indices(monkeypatch, name):
    model = tiny(name)
    xc, yc, xt, mask = masked_task()
    index = fix_bootstrap(monkeypatch, mask, 3)
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask).component
    sd = model.state_dict()
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        _, (mean, std) = bootstrap_reference(sd, c, y, xt[i], index[:, :, i], BOOTSTRAP[name])
        assert_close(pred.mean[:, i], mean, **TOL)
        assert_close(pred.stddev[:, i], std, **TOL)
    assert std.std() > 1e-3  # the bootstrap contexts differ


@pytest.mark.parametrize("name", list(BOOTSTRAP))
def test_bootstrap_training_loss_and_gradient_are_the_reference(monkeypatch, name):
    """``forward`` in training: ``-(ll_base + ll)``, ``ll`` the per-point ``logmeanexp`` over
    the ``K`` bootstraps, both means over the batch's points; no gradient through the
    bootstrap contexts (``torch.no_grad``)."""
    model = tiny(name).train()
    xc, yc, xt, mask = masked_task()
    yt = torch.randn(xt.shape[:2] + (2,), generator=torch.Generator().manual_seed(9),
                     dtype=torch.float64)  # fmt: skip
    index = fix_bootstrap(monkeypatch, mask, 2)
    loss = model.training_loss(Batch(xc=xc, yc=yc, xt=xt, yt=yt, mask_c=mask))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    params = dict(model.named_parameters())
    ll_base, ll_boot = [], []
    for i in range(3):
        c, y = xc[i, mask[i]], yc[i, mask[i]]
        base, (m, s) = bootstrap_reference(params, c, y, xt[i], index[:, :, i], BOOTSTRAP[name])
        ll_base.append(normal_log_prob(yt[i], *base).sum(-1).mean())
        ll_boot.append(logmeanexp(normal_log_prob(yt[i], m, s).sum(-1)).mean())
    ref = -(torch.stack(ll_base).mean() + torch.stack(ll_boot).mean())
    assert_close(loss, ref, **TOL)
    for g, r in zip(grads, torch.autograd.grad(ref, list(params.values()))):
        assert_close(g, r, **TOL)
