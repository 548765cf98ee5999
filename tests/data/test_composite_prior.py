"""The broader 1D prior ``gp-composite`` (tnpx.data.synthetic.gp_composite): shapes,
reproducibility, the mixture's frequencies, draws from the composite covariance, and the exact
oracle on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tnpx.data import GPConfig, GPSampler, batch_at, build_sampler, task_generator
from tnpx.data.synthetic.gp_composite import CompositeGPConfig, CompositeGPSampler
from tnpx.evaluation.protocol import evaluate
from tnpx.gp.kernels import KERNELS
from tnpx.models import build_model
from tnpx.models.gp import GPOracleHyper

SINGLES = ["rbf", "matern12", "matern32", "matern52", "periodic"]
TODAY = dict(  # the single-kernel prior of configs/pretrained-gp1d-tnp.yaml
    kernels=SINGLES,
    lengthscale_prior="loguniform",
    lengthscale_a=0.1,
    lengthscale_b=2.0,
    noise_prior="loguniform",
    noise_range=[0.01, 0.3],
    layout="uniform",
    n_tgt=100,
    min_ctx=1,
    max_ctx=100,
)


def composite(batch_size: int = 8, seed: int = 0, **options) -> CompositeGPSampler:
    return build_sampler("gp-composite", batch_size, seed, **{**TODAY, **options})


# --- float64 re-derivation, written independently of tnpx.gp.kernels ----------------------------
def reference_kernel(kind: str, d: np.ndarray, lengthscale: float, period: float) -> np.ndarray:
    """Unit-variance stationary kernels of the distance ``d = |x - x'|`` (1D)."""
    r = d / lengthscale
    if kind == "rbf":
        return np.exp(-0.5 * r**2)
    if kind == "matern12":
        return np.exp(-r)
    if kind == "matern32":
        return (1 + math.sqrt(3) * r) * np.exp(-math.sqrt(3) * r)
    if kind == "matern52":
        return (1 + math.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-math.sqrt(5) * r)
    assert kind == "periodic"
    return np.exp(-2 * np.sin(math.pi * d / period) ** 2 / lengthscale**2)


def reference_covariance(info: dict, i: int, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """Task ``i``'s kernel, the sum of its components, between ``x1 [n]`` and ``x2 [m]``."""
    d = np.abs(x1[:, None] - x2[None, :])
    total = np.zeros_like(d)
    for c in range(info["kernel"].shape[1]):
        kind = KERNELS[int(info["kernel"][i, c])]
        ls, p = float(info["lengthscale"][i, c]), float(info["period"][i, c])
        total += float(info["variance"][i, c]) * reference_kernel(kind, d, ls, p)
    return total


def reference_ll(batch, i: int, jitter: float) -> float:
    """Exact GP predictive LL per target point of task ``i`` (noisy targets), float64."""
    xc, yc = batch.xc[i, :, 0].double().numpy(), batch.yc[i, :, 0].double().numpy()
    xt, yt = batch.xt[i, :, 0].double().numpy(), batch.yt[i, :, 0].double().numpy()
    noise_c, noise_t = float(batch.info["noise_ctx"][i]), float(batch.info["noise_tgt"][i])
    k_cc = reference_covariance(batch.info, i, xc, xc) + (noise_c**2 + jitter) * np.eye(len(xc))
    k_tc = reference_covariance(batch.info, i, xt, xc)
    k_tt = np.diag(reference_covariance(batch.info, i, xt, xt))
    mean = k_tc @ np.linalg.solve(k_cc, yc)
    var = k_tt - np.einsum("tc,ct->t", k_tc, np.linalg.solve(k_cc, k_tc.T)) + noise_t**2
    return float(np.mean(-0.5 * np.log(2 * math.pi * var) - 0.5 * (yt - mean) ** 2 / var))


# --- shapes and reproducibility -----------------------------------------------------------
def test_shapes_ranges_and_info():
    b = batch_at(composite(batch_size=6, composite_prob=0.5), 0)
    n_ctx = b.xc.shape[1]
    assert 1 <= n_ctx <= 100
    assert b.xc.shape == (6, n_ctx, 1) and b.yc.shape == (6, n_ctx, 1)
    assert b.xt.shape == (6, 100, 1) and b.yt.shape == (6, 100, 1)
    assert b.xc.abs().max() <= 2.0 and b.xt.abs().max() <= 3.0
    for key in ("kernel", "lengthscale", "period", "variance"):
        assert b.info[key].shape == (6, 3), key
    for key in ("noise_ctx", "noise_tgt", "composite"):
        assert b.info[key].shape == (6,), key
    assert all(torch.isfinite(t).all() for t in (b.xc, b.yc, b.xt, b.yt))


def test_reproducible_by_seed_and_step():
    def same(a, c):
        return all(torch.equal(getattr(a, n), getattr(c, n)) for n in ("xc", "yc", "xt", "yt"))

    first = batch_at(composite(seed=3), 5)
    assert same(first, batch_at(composite(seed=3), 5))
    assert all(
        torch.equal(first.info[k], v) for k, v in batch_at(composite(seed=3), 5).info.items()
    )
    assert not same(first, batch_at(composite(seed=4), 5))
    assert not same(first, batch_at(composite(seed=3), 6))


def test_single_kernel_tasks_are_todays_prior_exactly():
    """A single-kernel task's hyper-parameters are those GPSampler draws from the same stream,
    so composite_prob=0 is today's prior."""
    ours = CompositeGPSampler(CompositeGPConfig(**TODAY, composite_prob=0.0))
    today = GPSampler(GPConfig(**TODAY))
    mine = ours._hyperparameters(task_generator(0, "train", 7), 64)
    theirs = today._hyperparameters(task_generator(0, "train", 7), 64)
    assert not mine["composite"].any()
    for key in ("kernel", "lengthscale", "period", "variance"):
        assert torch.equal(mine[key][:, 0], theirs[key].to(mine[key].dtype)), key
        assert (mine["variance"][:, 1:] == 0).all()
    for key in ("noise_ctx", "noise_tgt"):
        assert torch.equal(mine[key], theirs[key]), key


# --- the mixture's frequencies ----------------------------------------------------------------
def test_mixture_frequencies():
    n, p = 20000, 0.3
    probs = [0.7, 0.5, 0.6]
    sampler = composite(n, composite_prob=p, component_probs=probs, min_ctx=1, max_ctx=1, n_tgt=1)
    info = batch_at(sampler, 0).info
    is_comp = info["composite"]

    def close(freq: float, prob: float, count: int) -> None:
        assert abs(freq - prob) < 4 * math.sqrt(prob * (1 - prob) / count), (freq, prob)

    close(is_comp.double().mean().item(), p, n)
    m = int(is_comp.sum())
    present = info["variance"][is_comp] > 0
    # The trend is switched on where no component was drawn.
    trend = probs[0] + (1 - probs[0]) * (1 - probs[1]) * (1 - probs[2])
    for slot, prob in enumerate([trend, probs[1], probs[2]]):
        close(present[:, slot].double().mean().item(), prob, m)
    assert present.any(1).all()
    kinds = info["kernel"][is_comp]
    assert (kinds[:, 0] == KERNELS.index("rbf")).all()
    assert (kinds[:, 1] == KERNELS.index("periodic")).all()
    close((kinds[:, 2] == KERNELS.index("matern12")).double().mean().item(), 0.5, m)
    assert set(kinds[:, 2].tolist()) == {KERNELS.index("matern12"), KERNELS.index("matern32")}
    singles = info["kernel"][~is_comp, 0]
    for name in SINGLES:
        close((singles == KERNELS.index(name)).double().mean().item(), 1 / 5, n - m)
    assert torch.equal(
        info["variance"][~is_comp], torch.tensor([1.0, 0.0, 0.0]).expand(n - m, 3).double()
    )
    # Output scale and noise-to-scale ratio within their log-uniform ranges.
    scale = info["variance"][is_comp].sum(1).sqrt()
    assert scale.min() >= 0.5 - 1e-12 and scale.max() <= 2.0 + 1e-12
    ratio = info["noise_ctx"][is_comp] / scale
    assert ratio.min() >= 0.01 - 1e-12 and ratio.max() <= 0.5 + 1e-12
    assert torch.equal(info["noise_ctx"], info["noise_tgt"])


def test_draws_follow_the_composite_covariance():
    """Whitened by the reference covariance (kernel sum + noise on context and targets), the
    values of 1,500 composite tasks are standard normal."""
    n = 1500
    sampler = composite(n, seed=1, composite_prob=1.0, min_ctx=6, max_ctx=6, n_tgt=6)
    b = batch_at(sampler, 0)
    z = []
    for i in range(n):
        x = torch.cat([b.xc[i], b.xt[i]])[:, 0].double().numpy()
        y = torch.cat([b.yc[i], b.yt[i]])[:, 0].double().numpy()
        cov = reference_covariance(b.info, i, x, x)
        cov += float(b.info["noise_ctx"][i]) ** 2 * np.eye(len(x))
        z.append(np.linalg.solve(np.linalg.cholesky(cov), y))
    z = np.concatenate(z)
    assert abs(z.mean()) < 4 / math.sqrt(z.size)
    assert abs(z.var() - 1) < 4 * math.sqrt(2 / z.size)


# --- the oracle -------------------------------------------------------------------------------
@pytest.mark.parametrize("composite_prob", [1.0, 0.5])
def test_oracle_ll_equals_float64_rederivation(composite_prob):
    b = batch_at(composite(6, seed=2, composite_prob=composite_prob), 1)
    oracle = build_model("gp-oracle")
    got = oracle.log_likelihood(b)
    want = torch.tensor([reference_ll(b, i, GPOracleHyper().jitter) for i in range(6)])
    torch.testing.assert_close(got.double(), want.double(), atol=1e-4, rtol=1e-5)
    if composite_prob == 1.0:
        assert b.info["composite"].all() and (b.info["variance"] > 0).sum(1).max() >= 2


def test_evaluate_scores_the_oracle_against_itself():
    metrics = evaluate(build_model("gp-oracle"), composite(4, composite_prob=1.0), 2)
    assert metrics.gap == pytest.approx(0.0, abs=1e-6) and math.isfinite(metrics.ll)


# --- options ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "options, message",
    [
        ({"composite_prob": 1.5}, "composite_prob"),
        ({"component_probs": [0.5, 0.5]}, "component_probs"),
        ({"trend_lengthscale": [0.0, 1.0]}, "trend_lengthscale"),
        ({"output_scale_range": [2.0, 1.0]}, "output_scale_range"),
        ({"rough_kernels": ["cosine"]}, "cosine"),
        ({"layout": "kr", "max_ctx": 50}, "layout"),
        ({"wiggle": 1}, "wiggle"),
    ],
)
def test_bad_options_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        composite(**options)


@pytest.mark.parametrize("name", ["tnp", "te-tnp-rope"])
def test_v2_zoo_configs_build(name):
    """The long-run configs of the v2 zoo load, and their sampler and model build and run."""
    from tnpx.config import load_config

    cfg = load_config(f"configs/pretrained-gp1d-v2-{name}.yaml")
    sampler = build_sampler(cfg.data["name"], 2, 0, **cfg.data_options())
    assert isinstance(sampler, CompositeGPSampler) and sampler.input_domain == (-2.0, 2.0)
    model = build_model(cfg.model["name"], **{k: v for k, v in cfg.model.items() if k != "name"})
    assert torch.isfinite(model.log_likelihood(batch_at(sampler, 0))).all()
