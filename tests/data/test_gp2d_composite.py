"""The 2D composite GP prior (``gp2d-composite``): its tasks, its anisotropic kernel, the GP
oracle's exact posterior on them, and the shifts of BSA-TNP's suite (translation, density)."""

from __future__ import annotations

import math

import pytest
import torch

from tnpx.data import batch_at, build_sampler
from tnpx.gp.kernels_anisotropic import anisotropic_kernel_matrix, transform_matrix
from tnpx.models import build_model

SMALL = {"min_ctx": 10, "max_ctx": 40, "n_tgt": 30}


def _oracle():
    return build_model("gp-oracle", dim_x=2, dim_y=1)


def _reference_kernel(info, i: int, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """Task ``i``'s kernel written out pair by pair in float64: ``sum_c v_c k_c(r_c)`` with
    ``r_c = |diag(1/l) R(theta) (x - x')|``."""
    names = {0: "rbf", 1: "matern12", 2: "matern32", 3: "matern52"}
    diff = (x1[:, None, :] - x2[None, :, :]).double()
    total = torch.zeros(diff.shape[:2], dtype=torch.float64)
    for c in range(info["kernel"].shape[1]):
        theta, (l1, l2) = info["angle"][i, c], info["lengthscales"][i, c]
        along = diff[..., 0] * theta.cos() + diff[..., 1] * theta.sin()
        across = -diff[..., 0] * theta.sin() + diff[..., 1] * theta.cos()
        r = ((along / l1) ** 2 + (across / l2) ** 2).sqrt()
        name = names[int(info["kernel"][i, c])]
        if name == "rbf":
            k = (-0.5 * r**2).exp()
        elif name == "matern12":
            k = (-r).exp()
        elif name == "matern32":
            k = (1 + math.sqrt(3) * r) * (-math.sqrt(3) * r).exp()
        else:
            s = math.sqrt(5) * r
            k = (1 + s + s**2 / 3) * (-s).exp()
        total = total + info["variance"][i, c] * k
    return total


def test_tasks_shapes_info_and_reproducible():
    sampler = build_sampler("gp2d-composite", batch_size=3, seed=1, n_grid=4, **SMALL)
    batch = batch_at(sampler, 0)
    n_ctx = batch.xc.shape[1]
    assert 10 <= n_ctx <= 40 and batch.xc.shape == (3, n_ctx, 2) and batch.yc.shape == (3, n_ctx, 1)
    assert batch.xt.shape == (3, 30 + 16, 2) and batch.yt.shape == (3, 46, 1)
    assert batch.xc.abs().max() <= 2 and batch.xt.abs().max() <= 2
    info = batch.info
    assert info["kernel"].shape == (3, 2) and info["transform"].shape == (3, 2, 2, 2)
    assert (info["variance"] >= 0).all() and (info["variance"].sum(1) > 0).all()
    assert (info["lengthscales"][..., 0] >= info["lengthscales"][..., 1]).all()  # l1 the long one
    again = batch_at(build_sampler("gp2d-composite", batch_size=3, seed=1, n_grid=4, **SMALL), 0)
    torch.testing.assert_close(again.yt, batch.yt, rtol=0, atol=0)
    assert not torch.equal(batch_at(sampler, 1).xt, batch.xt)


def test_context_sizes_span_the_range():
    sampler = build_sampler("gp2d-composite", batch_size=1, n_tgt=4, min_ctx=10, max_ctx=1000)
    sizes = [batch_at(sampler, s).xc.shape[1] for s in range(40)]
    assert min(sizes) >= 10 and max(sizes) <= 1000
    assert min(sizes) < 40 and max(sizes) > 250  # log-uniform: both ends are drawn


def test_kernel_matches_pairwise_derivation_and_is_psd():
    batch = batch_at(build_sampler("gp2d-composite", batch_size=4, seed=3, **SMALL), 0)
    info, x = batch.info, batch.xt.double()
    k = anisotropic_kernel_matrix(info["kernel"], info["transform"], info["variance"], x, x)
    for i in range(4):
        torch.testing.assert_close(k[i], _reference_kernel(info, i, x[i], x[i]))
    torch.testing.assert_close(k, k.transpose(1, 2))
    eig = torch.linalg.eigvalsh(k)
    assert (eig >= -1e-9 * eig.amax(-1, keepdim=True)).all()


def test_oracle_is_the_float64_posterior():
    batch = batch_at(build_sampler("gp2d-composite", batch_size=3, seed=4, **SMALL), 0)
    pred = _oracle().predict_batch(batch)
    info = batch.info
    for i in range(3):
        xc, xt, yc = batch.xc[i].double(), batch.xt[i].double(), batch.yc[i].double()
        noise = info["noise_ctx"][i] ** 2 + 1e-6  # the oracle's jitter
        k_cc = _reference_kernel(info, i, xc, xc) + noise * torch.eye(len(xc), dtype=torch.float64)
        k_tc = _reference_kernel(info, i, xt, xc)
        mean = k_tc @ torch.linalg.solve(k_cc, yc)
        var = info["variance"][i].sum() - (k_tc * torch.linalg.solve(k_cc, k_tc.T).T).sum(1)
        std = (var + info["noise_tgt"][i] ** 2).sqrt()
        torch.testing.assert_close(pred.mean[i, :, 0].double(), mean[:, 0], rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(pred.stddev[i, :, 0].double(), std, rtol=1e-4, atol=1e-5)


def test_rotating_inputs_and_kernel_leaves_the_posterior_unchanged():
    batch = batch_at(build_sampler("gp2d-composite", batch_size=3, seed=5, **SMALL), 0)
    phi = 0.7
    rot = torch.tensor([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
    info = dict(batch.info)
    info["angle"] = batch.info["angle"] + phi
    info["transform"] = transform_matrix(info["lengthscales"], info["angle"])
    turned = batch.__class__(batch.xc @ rot.T, batch.yc, batch.xt @ rot.T, batch.yt, info=info)
    before, after = _oracle().predict_batch(batch), _oracle().predict_batch(turned)
    torch.testing.assert_close(after.mean, before.mean, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(after.stddev, before.stddev, rtol=1e-4, atol=1e-5)
    wrong = dict(info, transform=batch.info["transform"])  # inputs turned, kernel not
    moved = batch.__class__(turned.xc, batch.yc, turned.xt, batch.yt, info=wrong)
    assert not torch.allclose(_oracle().predict_batch(moved).mean, before.mean, atol=1e-3)


def _oracle_ll(batch) -> torch.Tensor:
    return _oracle().predict_batch(batch).log_prob(batch.yt).mean((1, 2))


@pytest.mark.parametrize("shift", [3.0, -10.0])
def test_translated_field_is_the_same_task_moved(shift):
    base = batch_at(build_sampler("gp2d-composite", batch_size=4, seed=6, **SMALL), 0)
    moved = batch_at(build_sampler("gp2d-composite", batch_size=4, seed=6, shift=shift, **SMALL), 0)
    torch.testing.assert_close(moved.xc, base.xc + shift)
    torch.testing.assert_close(moved.xt, base.xt + shift)
    torch.testing.assert_close(moved.yt, base.yt, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(_oracle_ll(moved), _oracle_ll(base), rtol=1e-3, atol=1e-3)


def test_scaled_field_is_the_same_function_at_a_quarter_of_the_density():
    base_sampler = build_sampler("gp2d-composite", batch_size=4, seed=7, **SMALL)
    scaled_sampler = build_sampler("gp2d-composite", batch_size=4, seed=7, scale=2.0, **SMALL)
    base, scaled = batch_at(base_sampler, 0), batch_at(scaled_sampler, 0)
    torch.testing.assert_close(scaled.xc, 2 * base.xc)
    torch.testing.assert_close(scaled.info["lengthscales"], 2 * base.info["lengthscales"])
    torch.testing.assert_close(scaled.yt, base.yt, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(_oracle_ll(scaled), _oracle_ll(base), rtol=1e-3, atol=1e-3)
    (lo, hi), (slo, shi) = base_sampler.input_domain, scaled_sampler.input_domain
    density = base.xc.shape[1] / (hi - lo) ** 2
    assert scaled.xc.shape[1] / (shi - slo) ** 2 == pytest.approx(density / 4)


@pytest.mark.parametrize(
    "options",
    [
        {"component_probs": [0.5]},
        {"smooth_lengthscale": [1.0, 0.5]},
        {"anisotropy": [0.0, 2.0]},
        {"box": [1.0, -1.0]},
        {"min_ctx": 0},
        {"min_ctx": 50, "max_ctx": 10},
        {"scale": 0.0},
        {"rough_kernels": ["periodic"]},
        {"n_tgt": 0},
    ],
)
def test_bad_options_are_refused_in_one_line(options):
    with pytest.raises(ValueError) as err:
        build_sampler("gp2d-composite", **options)
    assert "\n" not in str(err.value)


def test_evaluate_scores_the_oracle_on_the_2d_prior():
    # evaluate() (tnpx eval, the zoo's scores) puts the GP oracle beside a model only for
    # samplers that say their batches carry the oracle's information
    from tnpx.evaluation.protocol import evaluate

    sampler = build_sampler("gp2d-composite", batch_size=2, max_ctx=30, n_tgt=20, seed=3)
    oracle = build_model("gp-oracle", 2, 1)
    result = evaluate(oracle, sampler, n_batches=2)
    assert result.oracle_ll is not None
    assert result.oracle_ll == pytest.approx(result.ll, abs=1e-6)  # the oracle against itself
