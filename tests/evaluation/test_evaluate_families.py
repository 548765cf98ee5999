"""``tnpx eval`` on a user's tasks for every likelihood family (issue 52, item 3): the CRPS in
the data's units beside LL, RMSE and coverage, the LL's shift to the data's units counting only
the values whose LL is a density (a dry day's probability does not move with units), and no LL
difference against the Gaussian baselines where the model's LL is a probability."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from tests.helpers.small_models import small_model
from tests.helpers.user_tables import write_sines
from tnpx.data import batch_at
from tnpx.data.table import TableSampler
from tnpx.evaluation.user_tasks import TaskMetrics, evaluate_tasks, format_task_table, per_task
from tnpx.likelihoods import normal_crps


def rain_table(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_tasks, n = 24, 12
    wet = rng.random(n * n_tasks) < 0.5
    return pd.DataFrame(
        {
            "site": np.repeat(np.arange(n_tasks), n),
            "day": rng.uniform(0, 30, n * n_tasks),
            "rain": np.where(wet, rng.gamma(2.0, 5.0, n * n_tasks), 0.0),
            "yes": wet.astype(float),
        }
    )


def per_task_means(sampler, n_batches: int, score) -> float:
    """The mean over test tasks of ``score(batch, t, keep)`` (a float64 per-task value)."""
    values = []
    for i in range(n_batches):
        b = batch_at(sampler, i, split="test")
        for t in range(b.batch_size):
            keep = b.mask_t[t] if b.mask_t is not None else torch.ones(b.yt.shape[1], dtype=bool)
            values.append(float(score(b, t, keep)))
    return float(np.mean(values))


def test_a_gaussian_models_crps_is_the_normal_closed_form_in_the_datas_units(tmp_path):
    frame = write_sines(tmp_path / "s.csv", n_curves=40)
    frame["value"] = 300 + 40 * frame["value"]
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["value"], batch_size=4)
    model = small_model("tnp")
    rows = evaluate_tasks(model, sampler, 2, baselines=("context-moments",))
    (loc,), (scale,) = sampler.normalisation["y"]["loc"], sampler.normalisation["y"]["scale"]

    def score(b, t, keep):
        with torch.no_grad():
            pred = model.predict_batch(b)
        mean = pred.mean[t, keep, 0].double() * scale + loc
        std = pred.stddev[t, keep, 0].double() * scale
        return normal_crps(mean, std, b.yt[t, keep, 0].double() * scale + loc).mean()

    assert rows[0].crps[0] == pytest.approx(per_task_means(sampler, 2, score), rel=1e-5)
    assert rows[0].ll_is_density and set(rows[0].vs) == {"context-moments"}
    assert len(rows[1].crps) == 1 and rows[1].crps[0] > 0  # the baseline's CRPS too
    assert "| CRPS ± s.e. |" in format_task_table(rows)


def test_a_bernoulli_models_crps_is_its_brier_score_and_its_ll_is_not_compared():
    sampler = TableSampler.from_frame(
        rain_table(), task="site", x=["day"], y=["yes"], batch_size=4, likelihood="bernoulli"
    )
    model = small_model("tnp", likelihood="bernoulli")
    rows = evaluate_tasks(model, sampler, 2, baselines=("context-moments",))

    def brier(b, t, keep):
        with torch.no_grad():
            p = model.predict_batch(b).probs[t, keep, 0].double()
        return (p - b.yt[t, keep, 0].double()).square().mean()

    assert rows[0].crps[0] == pytest.approx(per_task_means(sampler, 2, brier), rel=1e-5)
    assert not rows[0].ll_is_density and rows[0].vs == {}
    table = format_task_table(rows)
    assert "they do not compare (—); compare the CRPS" in table
    assert table.splitlines()[2].endswith("| — |")  # the model's row: no LL difference


def test_rain_lls_shift_to_the_datas_units_on_wet_days_only():
    sampler = TableSampler.from_frame(
        rain_table(), task="site", x=["day"], y=["rain"], batch_size=4, likelihood="bernoulli-gamma"
    )
    (scale,) = sampler.normalisation["y"]["scale"]
    assert sampler.normalisation["y"]["loc"] == [0.0] and scale > 1
    model = small_model("tnp", likelihood="bernoulli-gamma")
    (row,) = evaluate_tasks(model, sampler, 2, baselines=())

    def ll(b, t, keep):  # float64: each value's log-density, less log(scale) where it is one
        with torch.no_grad():
            values = model.predict_batch(b).log_prob(b.yt)[t, keep, 0].double()
        wet = b.yt[t, keep, 0] > 0
        return (values - math.log(scale) * wet.double()).mean()

    assert row.ll == pytest.approx(per_task_means(sampler, 2, ll), rel=1e-5)
    assert len(row.crps) == 1 and row.crps[0] > 0 and math.isfinite(row.crps[0])
    again = evaluate_tasks(model, sampler, 2, baselines=())[0]
    assert again.crps == row.crps  # a sampled CRPS draws the same samples every run


def test_scores_stored_before_the_crps_print_a_dash():
    row = TaskMetrics("tnp", 3, -1.0, 0.1, [0.5], [0.02], 0.95)
    assert "| 0.5 ± 0.02 | — | 0.950 |" in format_task_table([row]).splitlines()[2]


def test_the_paired_crps_difference_is_the_per_task_difference_in_the_datas_units():
    sampler = TableSampler.from_frame(
        rain_table(), task="site", x=["day"], y=["rain"], batch_size=4, likelihood="bernoulli-gamma"
    )
    model = small_model("tnp", likelihood="bernoulli-gamma")
    rows = evaluate_tasks(model, sampler, 2, baselines=("context-moments",))
    ours, base = (per_task(m, sampler, 2)["crps"][:, 0] for m in (model, moments()))
    (scale,) = sampler.normalisation["y"]["scale"]
    diff = (base - ours) * scale  # float64 per task; positive: the model's CRPS is lower
    mean, se = rows[0].crps_vs["context-moments"][0]
    assert mean == pytest.approx(diff.mean(), rel=1e-9)
    assert se == pytest.approx(diff.std(ddof=1) / math.sqrt(len(diff)), rel=1e-9)
    assert mean == pytest.approx(rows[1].crps[0] - rows[0].crps[0], rel=1e-9)
    assert "CRPS less tnp's, paired over tasks (positive: tnp's is lower): `context-moments`" in (
        format_task_table(rows)
    )


def test_another_trained_model_scores_on_its_own_sampler_in_its_own_units():
    """A Gaussian head beside a rain head: the same tasks and contexts, each model in the units
    its sampler maps (rain scaled, not centred; the Gaussian's standardised)."""
    frame = rain_table()
    rain, gauss = (
        TableSampler.from_frame(
            frame, task="site", x=["day"], y=["rain"], batch_size=4, likelihood=likelihood
        )
        for likelihood in ("bernoulli-gamma", None)
    )
    assert rain.normalisation["y"]["loc"] != gauss.normalisation["y"]["loc"]
    head, control = small_model("tnp", likelihood="bernoulli-gamma"), small_model("tnp")
    rows = evaluate_tasks(head, rain, 2, baselines=(), against={"gaussian head": (control, gauss)})
    alone = evaluate_tasks(control, gauss, 2, baselines=())[0]
    assert [r.model for r in rows] == ["tnp", "gaussian head"]
    assert rows[1].crps == pytest.approx(alone.crps) and rows[1].ll == pytest.approx(alone.ll)
    assert rows[0].vs == {} and not rows[0].ll_is_density and rows[1].ll_is_density
    assert rows[0].crps_vs["gaussian head"][0][0] == pytest.approx(
        alone.crps[0] - rows[0].crps[0], rel=1e-9
    )
    # two Gaussian models in different units: their LLs compare, each in the data's units
    std = TableSampler.from_frame(frame, task="site", x=["day"], y=["rain"], batch_size=4)
    raw = TableSampler.from_frame(
        frame, task="site", x=["day"], y=["rain"], batch_size=4, normalise=False
    )
    both = evaluate_tasks(control, std, 2, baselines=(), against={"raw": (control, raw)})
    own = [evaluate_tasks(control, s, 2, baselines=())[0].ll for s in (std, raw)]
    assert both[0].vs["raw"][0] == pytest.approx(own[0] - own[1], rel=1e-6)


def moments():
    from tnpx.models import build_model

    return build_model("context-moments", 1, 1)
