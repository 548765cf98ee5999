"""Overconfidence flagged (tnpx.evaluation.coverage_flags): a model whose std is scaled down is
flagged overall and, where only small contexts are overconfident, in their bins, with the likely
causes (the held-out period with time as an input first, where the split makes it likely); a
calibrated one is not."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch.distributions import Normal

import tnpx
from tnpx.data.table import TableSampler
from tnpx.evaluation.coverage_flags import (
    CoverageBin,
    context_bins,
    coverage_by_context,
    coverage_flags,
    format_coverage_bins,
)
from tnpx.evaluation.user_tasks import evaluate_tasks
from tnpx.models.reference import ContextMoments, ContextMomentsHyper


class Shrunk(ContextMoments):
    """``context-moments`` with its std multiplied by ``factor`` where a task has at most
    ``upto`` context points: a deliberately overconfident model."""

    def __init__(self, factor: float, upto: int = 10**9):
        super().__init__(1, 1, ContextMomentsHyper())
        self.factor, self.upto = factor, upto

    def forward(self, xc, yc, xt, mask_c=None, mask_yc=None):
        pred = super().forward(xc, yc, xt, mask_c=mask_c, mask_yc=mask_yc)
        n = torch.full((xc.shape[0],), xc.shape[1]) if mask_c is None else mask_c.sum(1)
        scale = torch.where(n <= self.upto, self.factor, 1.0)[:, None, None]
        return Normal(pred.mean, pred.stddev * scale, validate_args=False)


@pytest.fixture(scope="module")
def sampler():
    """Tasks of 40 i.i.d. Gaussian values (a mean and a spread per task), contexts from 1
    point: ``context-moments`` is calibrated on them (coverage 0.98 over 120 tasks)."""
    rng = np.random.default_rng(0)
    frames = []
    for c in range(150):
        values = rng.normal(0, 3) + rng.uniform(0.5, 2) * rng.standard_normal(40)
        frames.append(pd.DataFrame({"task": f"c{c}", "t": rng.uniform(0, 1, 40), "v": values}))
    frame = pd.concat(frames, ignore_index=True)
    return TableSampler.from_frame(frame, task="task", x=["t"], y=["v"], batch_size=15,
                                   ctx_fraction=[0.02, 0.3])  # fmt: skip


def _flags(model, sampler):
    row = evaluate_tasks(model, sampler, 8, baselines=())[0]
    bins = [CoverageBin(**b) for b in row.coverage_by_ctx]
    return row, coverage_flags(row.coverage95, bins, sampler)


def test_a_calibrated_model_is_not_flagged(sampler):
    row, flags = _flags(tnpx.build_model("context-moments", 1, 1), sampler)
    assert 0.85 <= row.coverage95 <= 0.99
    assert flags == []


def test_a_model_with_its_std_scaled_down_is_flagged_overconfident(sampler):
    row, flags = _flags(Shrunk(0.3), sampler)
    assert row.coverage95 < 0.85
    assert flags[0].startswith(f"overconfident: 95% intervals cover {row.coverage95:.3f}")
    causes = [line for line in flags if line.startswith("likely cause:")]
    assert any("outside the training range" in c for c in causes)
    assert any("too few context points" in c for c in causes)
    assert any("shift between the training and the test data" in c for c in causes)


def test_overconfidence_at_small_contexts_alone_is_flagged_in_its_bins(sampler):
    row, flags = _flags(Shrunk(0.35, upto=3), sampler)
    small = [b for b in row.coverage_by_ctx if b["hi"] <= 3 and b["n_tasks"] >= 5]
    assert small and all(b["coverage"] < 0.85 for b in small)
    assert not any(f.startswith("overconfident: ") for f in flags)  # not overall
    assert any(f.startswith("overconfident at small contexts: coverage") for f in flags)
    assert flags[-3] == "likely cause: too few context points (see the coverage by context size)"


def test_underconfidence_is_flagged_too():
    flags = coverage_flags(0.999, [])
    assert flags == [
        "underconfident: 95% intervals cover 0.999 of the test targets (nominal 0.95, flagged "
        "above 0.99): the predictive std is too large"
    ]


def test_context_bins_put_each_small_size_alone_then_powers_of_two():
    n_ctx = np.array([1, 2, 2, 4, 7, 9, 16, 40])
    assert context_bins(n_ctx) == [(1, 1), (2, 2), (4, 4), (5, 8), (9, 16), (33, 64)]
    covered = np.array([0.5, 0.6, 0.8, 1.0, 0.9, 0.95, 0.97, 0.94])
    bins = coverage_by_context(covered, n_ctx)
    assert bins[1] == CoverageBin(2, 2, 2, pytest.approx(0.7))
    few = format_coverage_bins(bins)
    assert "| 2 | 2 | 0.700 |" in few  # 2 tasks: reported, too few to flag
    many = format_coverage_bins([CoverageBin(1, 1, 9, 0.6)])
    assert "| 1 | 9 | 0.600 (low) |" in many


def _monthly_grid(**options):
    from tnpx.data.grid import GridSampler

    xr = pytest.importorskip("xarray")
    time = np.arange("2000-01", "2002-01", dtype="datetime64[M]").astype("datetime64[ns]")
    v = np.random.default_rng(0).standard_normal((24, 6, 8))
    coords = {"time": time, "lat": np.arange(6.0), "lon": np.arange(8.0)}
    data = xr.Dataset({"v": (("time", "lat", "lon"), v)}, coords=coords)
    window = {"time": 1, "lat": 3, "lon": 3}
    return GridSampler.from_dataset(data, y=["v"], window=window, **options)


def test_a_held_out_period_with_time_as_an_input_is_named_as_the_likely_cause():
    flags = coverage_flags(0.73, [], _monthly_grid(x=["lat", "lon", "time"]))
    assert flags[1].startswith(
        "likely cause: test inputs outside the training range: the test split is held out "
        "along 'time', which is an input"
    )
    flags = coverage_flags(0.73, [], _monthly_grid())  # time left out (the default)
    assert "held out along" not in " ".join(flags)
    assert "outside the training range" in flags[1]
