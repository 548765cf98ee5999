"""Scoring one head on a family's held-out test tasks, for the likelihood study
(:mod:`experiments.likelihoods.family_scores`): LL and CRPS per task, coverage of central
intervals by the randomised PIT, time; a trained model's prediction, or the per-task GP's with
the family's own likelihood (:func:`tnpx.gp.approx_fit.approx_gp_predictive`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.distributions import Distribution

from tnpx.batch import Batch, observed_mean, observed_score
from tnpx.data import batch_at
from tnpx.data.synthetic import true_predictive_log_prob
from tnpx.likelihoods import crps, family_of, target_log_prob

GP_HEAD = "per-task GP"  # the heads' name of the GP fitted to each task's context
# The per-task GP is scored on the first 16 test batches (256 tasks) only: its fit takes
# 10-20 s a batch of 16 tasks on one core, 10-20 minutes a family at the study's 64 batches.
GP_BATCHES = 16

# Outputs with masses at single values: the left limit F(y-) differs from F(y) there. Counts
# and 0/1 take integers (the limit is F(y - 1)); rain has a mass at 0, fractions with spikes at
# 0 and 1 (the limit is F just below: the continuous part adds nothing in between).
INTEGER_FAMILIES = {"bernoulli", "poisson", "negative-binomial"}
ATOM_FAMILIES = {"bernoulli-gamma", "beta"}
LEVELS = (0.5, 0.9)


@dataclass
class HeadScores:
    """One trained model's scores on the test tasks (per-task values kept for pairing)."""

    head: str
    train_s: float | None
    score_s: float
    ll: list[float] = field(default_factory=list)
    crps: list[float] = field(default_factory=list)
    coverage: dict[str, float] = field(default_factory=dict)


def left_limit(pred: Distribution, y: torch.Tensor, family: str) -> torch.Tensor:
    """``F(y-) = P(Y < y)`` per target and output, ``[b, n_tgt, dim_y]``, for a prediction of
    ``family`` (the head's: a Gaussian head's prediction has no masses, whatever the data)."""
    if family in INTEGER_FAMILIES:
        return pred.cdf(y - 1)
    if family in ATOM_FAMILIES:
        return pred.cdf(y - 1e-6)
    return pred.cdf(y)


def randomised_pit(
    pred: Distribution, y: torch.Tensor, family: str, generator: torch.Generator
) -> torch.Tensor:
    """``u = F(y-) + V (F(y) - F(y-))``, ``V ~ U(0, 1)``, per target and output: uniform on
    (0, 1) when ``pred`` is the law of ``y``, whatever mass it puts on single values."""
    upper, lower = pred.cdf(y), left_limit(pred, y, family)
    v = torch.rand(y.shape, generator=generator, dtype=upper.dtype)
    return lower + v * (upper - lower)


def score_head(model, sampler, n_batches: int, train_s: float | None) -> HeadScores:
    """``model`` on test batches ``0..n_batches-1`` of ``sampler`` (:func:`score_predictions`)."""
    family = family_of(model.hyper.likelihood)
    return score_predictions(model.predict_batch, sampler, n_batches, family, family, train_s)


def score_gp(sampler, n_batches: int, family: str) -> HeadScores:
    """The per-task GP with ``family``'s likelihood (GPyTorch's variational inference, fitted
    to each task's context: its fit counts in the time) on the first ``min(n_batches,
    GP_BATCHES)`` test batches; its CRPS from draws of a generator seeded here."""
    from tnpx.gp import approx_gp_predictive  # needs the gp extra

    def predict(batch: Batch) -> Distribution:
        return approx_gp_predictive(batch, family)

    with torch.random.fork_rng():
        torch.manual_seed(0)
        n = min(n_batches, GP_BATCHES)
        return score_predictions(predict, sampler, n, family, GP_HEAD, None)


def score_predictions(
    predict: Callable[[Batch], Distribution],
    sampler,
    n_batches: int,
    family: str,
    head: str,
    train_s: float | None,
) -> HeadScores:
    """``predict`` (a batch -> its prediction, of ``family``) on test batches ``0..n_batches-1``
    of ``sampler``: LL and CRPS per task (means over its targets; CRPS summed over outputs),
    and PIT coverage over all targets and outputs at each level; ``head`` names it."""
    generator = torch.Generator().manual_seed(0)  # the PIT's uniforms: the same for each head
    out = HeadScores(head, train_s, 0.0)
    inside = {level: [] for level in LEVELS}
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(n_batches):
            batch = batch_at(sampler, i, split="test")
            pred = predict(batch)
            ll = observed_score(target_log_prob(pred, batch.yt)[..., None], batch.mask_t, None)
            out.ll += ll.tolist()
            out.crps += observed_score(crps(pred, batch.yt), batch.mask_t, batch.mask_yt).tolist()
            u = randomised_pit(pred, batch.yt, family, generator)
            for level in LEVELS:
                hit = ((u - 0.5).abs() <= level / 2).double()
                inside[level].append(observed_mean(hit, batch.mask_t, batch.mask_yt))
    out.score_s = time.perf_counter() - start
    out.coverage = {f"{level:g}": float(torch.cat(v).mean()) for level, v in inside.items()}
    return out


def reference_ll(sampler, n_batches: int) -> list[float]:
    """The generating law's LL per task (given the latent function) on the same tasks."""
    values = []
    for i in range(n_batches):
        values += true_predictive_log_prob(batch_at(sampler, i, split="test")).tolist()
    return values
