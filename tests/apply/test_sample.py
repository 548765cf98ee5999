"""Joint samples (tnpx.sample): autoregressive rollout and joint heads.

The GP oracle is the reference model: its autoregressive samples are exact joint samples of the
GP posterior when the targets carry the same noise as the context, so their covariance must
match the analytic posterior covariance."""

from __future__ import annotations

import pytest
import torch

import tnpx


def oracle(noise: float, lengthscale: float = 0.5):
    return tnpx.build_model(
        "gp-oracle", kernel="rbf", lengthscale=lengthscale, noise_ctx=noise, noise_tgt=noise
    )


def task(n_ctx=5, n_tgt=6, batch=2, seed=0, tgt_range=(-2.5, 2.5)):
    g = torch.Generator().manual_seed(seed)
    xc = torch.rand(batch, n_ctx, 1, generator=g) * 4 - 2
    yc = torch.sin(2 * xc)
    xt = torch.linspace(*tgt_range, n_tgt).expand(batch, n_tgt)[..., None].contiguous()
    return xc, yc, xt


def test_shapes_and_seed_reproducibility():
    model = oracle(0.1)
    xc, yc, xt = task()
    a = tnpx.sample(model, xc, yc, xt, n_samples=3, seed=4)
    b = tnpx.sample(model, xc, yc, xt, n_samples=3, seed=4)
    c = tnpx.sample(model, xc, yc, xt, n_samples=3, seed=5)
    assert a.shape == (3, 2, 6, 1)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_seed_leaves_the_global_rng_alone():
    model = oracle(0.1)
    xc, yc, xt = task()
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    tnpx.sample(model, xc, yc, xt, n_samples=2, seed=1)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("order", ["random", "given", "reversed"])
def test_covariance_matches_the_gp_posterior(order):
    noise, ls = 0.1, 0.5
    model = oracle(noise, ls)
    # targets 0.25 apart, partly beyond the context: large and strongly correlated variances
    xc, yc, xt = task(n_ctx=4, n_tgt=5, batch=1, tgt_range=(1.5, 2.5))
    if order == "reversed":
        order = torch.arange(4, -1, -1)
    s = tnpx.sample(model, xc, yc, xt, n_samples=20000, order=order, seed=0)[:, 0, :, 0].double()
    expected = model.posterior_covariance(xc, yc, xt)[0]  # analytic, float64
    empirical = torch.cov(s.T)
    # Monte Carlo error of a covariance entry ~ sqrt(2/20000) * var ~ 0.01 at var <= 1
    assert (empirical - expected).abs().max() < 0.05
    # the rollout must build correlations: neighbouring targets are strongly correlated
    assert expected[1, 2] > 0.1
    mean = model(xc, yc, xt).mean[0, :, 0].double()
    assert (s.mean(0) - mean).abs().max() < 0.03


def test_independent_draws_would_fail_the_covariance_check():
    """Guard for the test above: marginal draws (no rollout) miss the off-diagonal terms."""
    noise, ls = 0.1, 0.5
    model = oracle(noise, ls)
    # targets 0.25 apart, partly beyond the context: large and strongly correlated variances
    xc, yc, xt = task(n_ctx=4, n_tgt=5, batch=1, tgt_range=(1.5, 2.5))
    pred = model(xc, yc, xt)
    independent = pred.sample((20000,))[:, 0, :, 0].double()
    expected = model.posterior_covariance(xc, yc, xt)[0]  # analytic, float64
    assert (torch.cov(independent.T) - expected).abs().max() > 0.1


def test_samples_pass_through_noiseless_context_points():
    model = oracle(1e-3)
    xc, yc, _ = task(n_ctx=5, batch=2)
    xt = torch.cat([xc[:, :3], torch.tensor([[[0.3]], [[-1.1]]])], 1)  # 3 context points + 1
    s = tnpx.sample(model, xc, yc, xt, n_samples=50, seed=0)
    assert (s[:, :, :3] - yc[:, :3]).abs().max() < 0.02
    assert s[:, :, 3].std() > 0.01  # away from the data they still vary


def test_first_target_spread_matches_its_marginal():
    model = oracle(0.1)
    xc, yc, xt = task(n_ctx=3, n_tgt=4, batch=1)
    s = tnpx.sample(model, xc, yc, xt, n_samples=20000, order="given", seed=1)[:, 0, 0, 0]
    marginal = model(xc, yc, xt[:, :1])
    assert s.mean().item() == pytest.approx(marginal.mean.item(), abs=0.03)
    assert s.std().item() == pytest.approx(marginal.stddev.item(), rel=0.03)


def test_context_mask_is_respected():
    model = oracle(0.1)
    xc, yc, xt = task(n_ctx=5, batch=1)
    mask = torch.tensor([[True, True, True, False, False]])
    yc_junk = yc.clone()
    yc_junk[:, 3:] = 50.0
    a = tnpx.sample(model, xc, yc_junk, xt, n_samples=4, mask_c=mask, seed=2)
    b = tnpx.sample(model, xc[:, :3], yc[:, :3], xt, n_samples=4, seed=2)
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_neural_model_with_gaussian_head_rolls_out():
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", dim_model=16, n_layers=1, n_heads=2, dim_head=8, dim_ff=16)
    xc, yc, xt = task()
    s = tnpx.sample(model, xc, yc, xt, n_samples=3, seed=0)
    assert s.shape == (3, 2, 6, 1) and torch.isfinite(s).all()


def test_tnp_nd_samples_its_joint_directly():
    torch.manual_seed(0)
    model = tnpx.build_model("tnp-nd", dim_model=16, n_layers=1, n_heads=2, dim_head=8, dim_ff=16)
    xc, yc, xt = task()
    s = tnpx.sample(model, xc, yc, xt, n_samples=4000, seed=0)
    pred = model(xc, yc, xt)
    cov = pred.covariance_matrix[0].double()
    assert s.shape == (4000, 2, 6, 1)
    assert (torch.cov(s[:, 0, :, 0].T.double()) - cov).abs().max() < 0.1 * cov.diag().max()
    with pytest.raises(ValueError, match="targets interact"):
        tnpx.sample(model, xc, yc, xt, method="autoregressive")


def test_latent_np_samples_one_latent_per_path():
    torch.manual_seed(0)
    model = tnpx.build_model("np", dim_model=16)
    xc, yc, xt = task()
    s = tnpx.sample(model, xc, yc, xt, n_samples=5, seed=0)
    assert s.shape == (5, 2, 6, 1)
    ar = tnpx.sample(model, xc, yc, xt, n_samples=2, method="autoregressive", seed=0)
    assert ar.shape == (2, 2, 6, 1)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"method": "gibbs"}, "method"),
        ({"order": "sorted"}, "order"),
        ({"order": torch.tensor([0, 1, 2])}, "shape"),
        ({"order": torch.tensor([0, 0, 1, 2, 3, 4])}, "permutation"),
    ],
)
def test_bad_arguments_fail_clearly(kwargs, message):
    xc, yc, xt = task()
    with pytest.raises(ValueError, match=message):
        tnpx.sample(oracle(0.1), xc, yc, xt, **kwargs)


# -- the causal buffer (inc-tnp) ------------------------------------------------------------------
def inc_tnp(seed: int = 0):
    torch.manual_seed(seed)
    return tnpx.build_model(
        "inc-tnp", dim_model=16, n_layers=2, n_heads=2, dim_head=8, dim_ff=16
    ).eval()


def test_buffer_is_the_default_for_a_model_that_declares_it():
    model = inc_tnp()
    xc, yc, xt = task()
    auto = tnpx.sample(model, xc, yc, xt, n_samples=3, seed=4)
    assert auto.shape == (3, 2, 6, 1) and torch.isfinite(auto).all()
    assert torch.equal(auto, tnpx.sample(model, xc, yc, xt, n_samples=3, method="buffer", seed=4))
    assert not torch.equal(auto, tnpx.sample(model, xc, yc, xt, n_samples=3, seed=5))
    rollout = tnpx.sample(model, xc, yc, xt, n_samples=3, method="autoregressive", seed=4)
    assert not torch.equal(auto, rollout)
    with pytest.raises(ValueError, match="buffered_sampling"):
        tnpx.sample(oracle(0.1), xc, yc, xt, method="buffer")


def test_buffer_with_one_target_is_the_rollout():
    """K = 1: the buffer is empty when the only target is drawn, so both draw from the same
    marginal with the same random numbers; with more targets the first draw still agrees."""
    model = inc_tnp()
    xc, yc, xt = task(n_tgt=4)
    for n_tgt in (1, 4):
        kw = dict(n_samples=5, order="given", seed=2)
        buffer = tnpx.sample(model, xc, yc, xt[:, :n_tgt], method="buffer", **kw)
        rollout = tnpx.sample(model, xc, yc, xt[:, :n_tgt], method="autoregressive", **kw)
        torch.testing.assert_close(buffer[:, :, 0], rollout[:, :, 0])


def test_buffer_draws_follow_the_factorisation_it_scores():
    """Each draw is loc + scale * eps of the model's conditional given the path's earlier
    draws, the conditionals that joint_log_prob computes in one pass."""
    model = inc_tnp()
    xc, yc, xt = task(n_tgt=5, batch=2)
    s = tnpx.sample(model, xc, yc, xt, n_samples=3, order="given", seed=7)  # [3, 2, 5, 1]
    torch.manual_seed(7)
    eps = torch.cat([torch.randn(6, 1, 1) for _ in range(5)], 1)  # one draw per step
    paths = s.reshape(6, 5, 1)
    rows = lambda t: t.repeat(3, 1, 1)  # noqa: E731 (sample-major, as the sampler tiles)
    every = torch.full((6, 5), 6)
    earlier = torch.arange(5).expand(6, 5)
    with torch.no_grad():
        pred = model._read_prefixes(
            rows(xc), rows(yc), None, rows(xt), every, rows(xt), paths, earlier
        )
    torch.testing.assert_close(paths, pred.loc + pred.scale * eps, atol=1e-5, rtol=1e-4)


def test_buffer_respects_the_context_mask_and_the_order():
    model = inc_tnp()
    xc, yc, xt = task(n_ctx=5, batch=1)
    mask = torch.tensor([[True, True, True, False, False]])
    junk = yc.clone()
    junk[:, 3:] = float("nan")
    a = tnpx.sample(model, xc, junk, xt, n_samples=4, mask_c=mask, seed=2)
    b = tnpx.sample(model, xc[:, :3], yc[:, :3], xt, n_samples=4, seed=2)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    permuted = tnpx.sample(model, xc, yc, xt[:, perm], n_samples=2, order="given", seed=1)
    ordered = tnpx.sample(model, xc, yc, xt, n_samples=2, order=perm, seed=1)
    torch.testing.assert_close(ordered[:, :, perm], permuted)
