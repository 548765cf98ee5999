"""The ``gp-link`` sampler (tnpx.data.synthetic.link_priors): batches of every likelihood family
have the right shapes and dtypes, are a function of the seed, keep their outputs in the family's
support, carry the truth in ``Batch.info``, and refuse a bad option in one line."""

from __future__ import annotations

import pytest
import torch

from tnpx.data import SAMPLERS, batch_at, build_sampler
from tnpx.data.synthetic.link_families import BETA_CLIP, FAMILIES
from tnpx.data.synthetic.link_priors import LinkPriorConfig, LinkPriorSampler

NAMES = (
    "gaussian student-t bernoulli bernoulli-gamma poisson negative-binomial beta mixture "
    "lowrank-gaussian"
).split()


def test_the_families_are_the_shared_names():
    # the likelihood heads (tnpx.likelihoods) use exactly these names
    assert list(FAMILIES) == NAMES
    assert SAMPLERS["gp-link"] == (LinkPriorSampler, LinkPriorConfig)


@pytest.mark.parametrize("family", NAMES)
@pytest.mark.parametrize("dim_x", [1, 2])
def test_shapes_dtypes_and_info(family, dim_x):
    sampler = build_sampler("gp-link", 5, 3, family=family, dim_x=dim_x, n_tgt=20, max_ctx=12)
    batch = batch_at(sampler, step=0)
    dim_y = 2 if family == "lowrank-gaussian" else 1
    n_ctx = batch.xc.shape[1]
    assert 3 <= n_ctx <= 12 and sampler.dim_y == dim_y and sampler.dim_x == dim_x
    assert batch.xc.shape == (5, n_ctx, dim_x) and batch.xt.shape == (5, 20, dim_x)
    assert batch.yc.shape == (5, n_ctx, dim_y) and batch.yt.shape == (5, 20, dim_y)
    assert {t.dtype for t in (batch.xc, batch.yc, batch.xt, batch.yt)} == {torch.float32}
    n_latents = {"mixture": 2, "lowrank-gaussian": 2}.get(family, 1)
    assert batch.info["family"] == family
    assert batch.info["latent_t"].shape == (5, 20, n_latents)
    assert batch.info["latent_c"].shape == (5, n_ctx, n_latents)
    assert batch.info["latent_lengthscale"].shape == (5, n_latents)
    if family in ("poisson", "negative-binomial"):
        assert batch.info["exposure_c"].shape == (5, n_ctx, 1)
        assert batch.info["exposure_t"].shape == (5, 20, 1)
    # a task of the batch is a batch of its own (Batch.select keeps the info aligned)
    assert batch.select(slice(1, 2)).info["latent_t"].shape == (1, 20, n_latents)


@pytest.mark.parametrize("family", NAMES)
def test_same_seed_same_tasks_other_seed_or_step_others(family):
    def draw(seed, step):
        return batch_at(build_sampler("gp-link", 4, seed, family=family), step)

    a, b = draw(7, 2), draw(7, 2)
    for name in ("xc", "yc", "xt", "yt"):
        assert torch.equal(getattr(a, name), getattr(b, name))
    assert torch.equal(a.info["latent_t"], b.info["latent_t"])
    assert not torch.equal(a.yt, draw(8, 2).yt)
    assert not torch.equal(a.yt, draw(7, 3).yt)


def _outputs(family: str, **options) -> torch.Tensor:
    sampler = build_sampler("gp-link", 32, 0, family=family, **options)
    batch = batch_at(sampler, 0)
    return torch.cat([batch.yc.flatten(), batch.yt.flatten()])


@pytest.mark.parametrize("family", ["poisson", "negative-binomial"])
def test_counts_are_whole_numbers_from_zero(family):
    y = _outputs(family)
    assert bool((y >= 0).all()) and torch.equal(y, y.round())
    assert bool((y == 0).any()) and bool((y > 1).any())


def test_bernoulli_outputs_are_zero_or_one_both_present():
    y = _outputs("bernoulli")
    assert set(y.unique().tolist()) == {0.0, 1.0}


def test_beta_outputs_lie_strictly_inside_zero_one_even_near_the_edges():
    # a large latent spread pushes means to 1e-9 and 1 - 1e-9: the clipping keeps (0, 1)
    y = _outputs("beta", variance=100.0, concentration=0.5)
    assert bool((y > 0).all()) and bool((y < 1).all())
    assert float(y.min()) == pytest.approx(BETA_CLIP) and bool((y == y.max()).any())


def test_rain_has_dry_days_and_positive_amounts_only():
    y = _outputs("bernoulli-gamma")
    assert bool((y >= 0).all())
    dry = float((y == 0).float().mean())
    assert 0.35 < dry < 0.65  # the documented 1/2 at threshold 0 (tested exactly elsewhere)


@pytest.mark.parametrize("family", ["gaussian", "student-t", "mixture", "lowrank-gaussian"])
def test_real_valued_families_give_finite_values_of_both_signs(family):
    y = _outputs(family)
    assert bool(torch.isfinite(y).all()) and bool((y < 0).any()) and bool((y > 0).any())


def test_three_outputs_and_their_mixing_matrix():
    sampler = build_sampler("gp-link", 4, 0, family="lowrank-gaussian", n_outputs=3, n_latents=2)
    batch = batch_at(sampler, 0)
    assert sampler.dim_y == 3 and batch.yt.shape[-1] == 3
    assert batch.info["mixing"].shape == (4, 3, 2)


def test_gaussian_tasks_are_scored_exactly_by_the_gp_oracle():
    from tnpx.data.synthetic.link_priors import true_predictive_log_prob
    from tnpx.models import build_model

    sampler = build_sampler("gp-link", 64, 0, family="gaussian")
    assert sampler.exact_gp_posterior
    batch = batch_at(sampler, 0, split="test")
    oracle = build_model("gp-oracle", 1, 1).log_likelihood(batch).double()
    knows_latent = true_predictive_log_prob(batch)
    # knowing the latent function beats the best use of the context, on average
    gap = knows_latent - oracle
    assert float(gap.mean()) > 4 * float(gap.std() / len(gap) ** 0.5)
    # a nonzero latent mean leaves the zero-mean gp-oracle out
    assert not build_sampler("gp-link", 4, 0, family="gaussian", latent_mean=1.0).exact_gp_posterior
    assert not build_sampler("gp-link", 4, 0, family="poisson").exact_gp_posterior


@pytest.mark.parametrize(
    "options, message",
    [
        ({"family": "poison"}, r"family must be one of \['gaussian', 'student-t', 'bernoulli'"),
        ({"family": "student-t", "df": -1.0}, "df must be > 0, got -1.0"),
        ({"noise": 0.0}, "noise must be > 0, got 0.0"),
        ({"dispersion": -2.0}, "dispersion must be > 0"),
        ({"concentration": 0.0}, "concentration must be > 0"),
        ({"power": 0.0}, "power must be > 0"),
        ({"rain_noise": -0.1}, "rain_noise must be > 0"),
        ({"mixture_weight": 1.0}, r"mixture_weight must lie in \(0, 1\), got 1.0"),
        ({"exposure_range": [0.0, 2.0]}, "exposure_range must be .low, high. with 0 < low"),
        ({"exposure_range": [2.0, 1.0]}, "exposure_range must be .low, high. with 0 < low"),
        ({"exposure_range": [1.0]}, "exposure_range must be .low, high."),
        ({"n_outputs": 1}, "n_outputs must be >= 2"),
        ({"n_latents": 0}, "n_latents must be >= 1"),
        ({"dim_x": 3}, "dim_x must be 1 or 2"),
        ({"kernels": ["rbff"]}, "unknown kernel 'rbff'; choose from rbf"),
        ({"min_ctx": 5, "max_ctx": 2}, "need 0 <= min_ctx <= max_ctx"),
        ({"famliy": "poisson"}, r"unknown option\(s\) \['famliy'\] for data sampler 'gp-link'"),
    ],
)
def test_a_bad_option_gives_one_line_naming_the_choices(options, message):
    with pytest.raises(ValueError, match=message) as info:
        build_sampler("gp-link", 4, 0, **options)
    assert "\n" not in str(info.value)
