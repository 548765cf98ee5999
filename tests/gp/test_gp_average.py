"""The GP Bayesian model average over a prior's hyper-parameters (tnpx.gp.average)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch.distributions import MultivariateNormal

from tnpx.batch import Batch
from tnpx.data import GPConfig, GPSampler, batch_at
from tnpx.gp.average import HyperGrid, average_log_likelihood
from tnpx.gp.kernels import kernel_matrix
from tnpx.models import build_model

BROAD = GPConfig(
    kernels=["rbf", "matern12", "periodic"],
    lengthscale_prior="loguniform",
    lengthscale_a=0.1,
    lengthscale_b=2.0,
    noise_prior="loguniform",
    noise_range=[0.01, 0.3],
    layout="uniform",
    n_tgt=7,
    min_ctx=0,
    max_ctx=9,
)


def sample(config: GPConfig, seed: int = 0, batch_size: int = 3, step: int = 0) -> Batch:
    return batch_at(GPSampler(config, batch_size=batch_size, seed=seed), step)


@pytest.mark.parametrize(
    "options",
    [
        # TE protocol: fixed noise on context and targets
        dict(layout="uniform", noise_ctx=0.1, noise_tgt=0.1, n_tgt=20, min_ctx=3, max_ctx=15),
        # KR protocol: the targets are the noiseless function
        dict(layout="kr", noise_ctx=0.1, noise_tgt=0.0, n_random=20, n_grid=10, max_ctx=15),
    ],
)
def test_a_one_point_prior_is_the_oracle(options):
    """A prior with every hyper-parameter fixed has a one-point grid: the average is the GP
    oracle itself."""
    config = GPConfig(kernels=["matern32"], lengthscale_prior="fixed", lengthscale_a=0.4, **options)
    batch = sample(config)
    expected = build_model("gp-oracle", 1, 1).log_likelihood(batch).double()
    got = average_log_likelihood(batch, HyperGrid.from_config(config))
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


def naive_average(batch: Batch, grid: HyperGrid) -> torch.Tensor:
    """Float64 re-derivation: every grid point's GP posterior by Cholesky, weights from
    MultivariateNormal evidences, the mixture density per target summed point by point."""
    out = []
    for i in range(batch.batch_size):
        xc, yc = batch.xc[i : i + 1].double(), batch.yc[i, :, 0].double()
        xt, yt = batch.xt[i : i + 1].double(), batch.yt[i, :, 0].double()
        log_w, log_p = [], []
        for kernel in grid.kernels:
            cells = grid.initial_cells(kernel)
            for log_ls, freq, log_mass in zip(
                cells.log_lengthscale, cells.frequency, cells.log_mass
            ):
                hyper = dict(lengthscale=log_ls.exp().view(1), period=1 / freq.view(1))
                hyper["variance"] = torch.tensor([grid.variance]).double()
                for noise in grid.noises:
                    s2 = noise.item() ** 2 + 1e-6
                    k_tt = kernel_matrix(kernel, xt, xt, **hyper)[0].diagonal()
                    if xc.shape[1] == 0:
                        ml, mean, var = 0.0, torch.zeros_like(yt), k_tt
                    else:
                        k_cc = kernel_matrix(kernel, xc, xc, **hyper)[0]
                        k_cc = k_cc + s2 * torch.eye(xc.shape[1]).double()
                        k_tc = kernel_matrix(kernel, xt, xc, **hyper)[0]
                        ml = MultivariateNormal(torch.zeros_like(yc), k_cc).log_prob(yc)
                        mean = k_tc @ torch.linalg.solve(k_cc, yc)
                        var = k_tt - (k_tc * torch.linalg.solve(k_cc, k_tc.T).T).sum(1)
                    var = var + s2  # noisy targets
                    log_w.append(log_mass.item() - math.log(len(grid.noises)) + ml)
                    log_p.append(
                        -0.5 * ((yt - mean) ** 2 / var + var.log() + math.log(2 * math.pi))
                    )
        log_w_t = torch.tensor(log_w, dtype=torch.float64)
        log_w_t = log_w_t - log_w_t.logsumexp(0)
        out.append((log_w_t[:, None] + torch.stack(log_p)).logsumexp(0).mean())
    return torch.stack(out)


@pytest.mark.parametrize("n_ctx", [0, 1, 9])
def test_equals_a_float64_re_derivation(n_ctx):
    config = dataclasses.replace(BROAD, min_ctx=n_ctx, max_ctx=n_ctx)
    grid = HyperGrid.from_config(config, n_lengthscale=3, n_period=2, n_noise=2, refinements=0)
    batch = sample(config, seed=3)
    torch.testing.assert_close(
        average_log_likelihood(batch, grid, chunk=4), naive_average(batch, grid), rtol=0, atol=1e-7
    )


def test_cells_follow_the_prior():
    grid = HyperGrid.from_config(BROAD, n_lengthscale=4, n_period=2, n_noise=3)
    cells = grid.initial_cells("periodic")
    # log-uniform lengthscale: equal cells in log space, midpoints half a cell inside
    step = math.log(20) / 4
    log_ls = cells.log_lengthscale.unique()
    torch.testing.assert_close(log_ls.diff(), torch.full((3,), step).double())
    assert log_ls[0].item() == pytest.approx(math.log(0.1) + step / 2)
    # frequency 1 / period on [0.5, 2] in equal cells, each holding its share of the period
    freq = cells.frequency.unique()
    torch.testing.assert_close(freq, torch.tensor([0.875, 1.625]).double())
    # cells [0.5, 1.25] and [1.25, 2] in frequency: periods [0.8, 2] and [0.5, 0.8] of [0.5, 2]
    share = (cells.log_mass.exp() * 3 * 4).unique()  # within a (kernel, lengthscale) cell
    torch.testing.assert_close(share, torch.tensor([0.2, 0.8]).double())
    rbf = grid.initial_cells("rbf")
    assert rbf.log_mass.numel() == 4 and (rbf.frequency_half == 0).all()
    # every kernel carries a third of the prior mass
    for kernel in ("periodic", "rbf"):
        total = grid.initial_cells(kernel).log_mass.logsumexp(0).exp().item()
        assert total == pytest.approx(1 / 3)


def test_splitting_keeps_the_mass_and_the_box():
    cells = HyperGrid.from_config(BROAD, n_lengthscale=3, n_period=2).initial_cells("periodic")
    children = cells.split()
    assert children.log_mass.numel() == 4 * cells.log_mass.numel()
    torch.testing.assert_close(children.log_mass.logsumexp(0), cells.log_mass.logsumexp(0))
    area = lambda c: (4 * c.lengthscale_half * c.frequency_half).sum()  # noqa: E731
    torch.testing.assert_close(area(children), area(cells))
    # each child holds the prior mass of its own period range
    low = children.frequency - children.frequency_half
    high = children.frequency + children.frequency_half
    lengthscale_share = 1 / (3 * 3)  # kernel, then lengthscale cell of its split parent / 2
    expected = (1 / low - 1 / high) / 1.5 * lengthscale_share / 2
    torch.testing.assert_close(children.log_mass.exp(), expected)
    # a zero-width axis (non-periodic kernels' period) is not split
    rbf = HyperGrid.from_config(BROAD, n_lengthscale=3).initial_cells("rbf")
    assert rbf.split().log_mass.numel() == 6


def test_refinement_approaches_the_exact_average():
    """Refining concentrates cells where the evidence is: with many context points a coarse
    fixed grid misses the periodic kernel's sharp peak, the refined rule finds it."""
    config = dataclasses.replace(BROAD, kernels=["periodic"], min_ctx=50, max_ctx=50, n_tgt=30)
    batch = sample(config, seed=1, batch_size=4)
    oracle = build_model("gp-oracle", 1, 1).log_likelihood(batch).double().mean()
    coarse = HyperGrid.from_config(config, n_lengthscale=4, n_period=24, refinements=0)
    refined = dataclasses.replace(coarse, refinements=6)
    gap_coarse = (oracle - average_log_likelihood(batch, coarse).mean()).item()
    gap_refined = (oracle - average_log_likelihood(batch, refined).mean()).item()
    assert gap_refined < gap_coarse
    assert gap_refined < 0.1


def test_invariant_to_context_order_and_chunking():
    config = dataclasses.replace(BROAD, min_ctx=8, max_ctx=8)
    grid = HyperGrid.from_config(config, n_lengthscale=5, n_period=3, n_noise=4, refinements=3)
    batch = sample(config, seed=5)
    perm = torch.randperm(8, generator=torch.Generator().manual_seed(0))
    shuffled = dataclasses.replace(batch, xc=batch.xc[:, perm], yc=batch.yc[:, perm])
    reference = average_log_likelihood(batch, grid, chunk=64)
    torch.testing.assert_close(average_log_likelihood(shuffled, grid), reference)
    torch.testing.assert_close(average_log_likelihood(batch, grid, chunk=1), reference)
    per_target = average_log_likelihood(batch, grid, per_target=True)
    assert per_target.shape == batch.yt.shape[:2]
    torch.testing.assert_close(per_target.mean(-1), reference)


def test_never_better_than_the_oracle_on_average():
    """The oracle knows each task's hyper-parameters; the average must infer them, so over
    many tasks it scores lower, yet within a fraction of a nat when the context is large."""
    config = dataclasses.replace(BROAD, kernels=["rbf"], min_ctx=40, max_ctx=40, n_tgt=30)
    batch = sample(config, seed=2, batch_size=24)
    oracle = build_model("gp-oracle", 1, 1).log_likelihood(batch).double()
    average = average_log_likelihood(batch, HyperGrid.from_config(config))
    gap = (oracle - average).mean().item()
    assert 0 < gap < 0.2


def test_bad_input_fails_clearly():
    with pytest.raises(ValueError, match="lengthscale_prior='beta'"):
        HyperGrid.from_config(GPConfig())
    with pytest.raises(ValueError, match="dim_x = 1"):
        HyperGrid.from_config(dataclasses.replace(BROAD, dim_x=2))
    with pytest.raises(ValueError, match="period_prior"):
        HyperGrid.from_config(dataclasses.replace(BROAD, period_prior="lengthscale"))
    with pytest.raises(ValueError, match=">= 1"):
        HyperGrid.from_config(BROAD, n_noise=0)
    with pytest.raises(ValueError, match="refinements >= 0"):
        HyperGrid.from_config(BROAD, refinements=-1)
    batch = sample(dataclasses.replace(BROAD, min_ctx=3, max_ctx=3))
    grid = HyperGrid.from_config(BROAD, n_lengthscale=2, n_period=2, n_noise=2)
    with pytest.raises(ValueError, match="masked"):
        average_log_likelihood(
            dataclasses.replace(batch, mask_c=torch.ones(3, 3, dtype=torch.bool)), grid
        )
    with pytest.raises(ValueError, match="yt is None"):
        average_log_likelihood(dataclasses.replace(batch, yt=None), grid)


def test_refining_stops_once_the_evidence_settles():
    """With an infinite tolerance the evidence 'settles' at once: two rounds, then stop."""
    config = dataclasses.replace(BROAD, min_ctx=6, max_ctx=6)
    batch = sample(config, seed=4)
    grid = HyperGrid.from_config(config, n_lengthscale=3, n_period=4, n_noise=3)
    settled = dataclasses.replace(grid, refinements=16, tolerance=math.inf)
    two_rounds = dataclasses.replace(grid, refinements=2, tolerance=0.0)
    three_rounds = dataclasses.replace(grid, refinements=3, tolerance=0.0)
    reference = average_log_likelihood(batch, two_rounds)
    torch.testing.assert_close(average_log_likelihood(batch, settled), reference)
    assert not torch.allclose(average_log_likelihood(batch, three_rounds), reference)
