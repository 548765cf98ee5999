"""The safe-range measurement (tnpx.evaluation.extrapolation): distances binned as predict measures
them, each task scored through predict's unit maps, and the range read from the profile."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tnpx.config import config_from_dict
from tnpx.evaluation.extrapolation import (
    DistanceBin,
    distance_profile,
    prior_profile_sampler,
    safe_range,
    task_scores,
)

GP = {"name": "gp", "batch_size": 4, "kernels": ["rbf"], "layout": "uniform",
      "ctx_range": [-2.0, 2.0], "min_ctx": 5, "max_ctx": 20}  # fmt: skip


def _bin(low, high, coverage, std, n=500):
    return DistanceBin(low, high, n, coverage, 0.0, std, 0.0)


def test_the_range_ends_at_the_first_bin_that_fails():
    profile = [_bin(0, 0, 0.95, 0.3), _bin(0, 0.5, 0.93, 0.9), _bin(0.5, 1, 0.86, 1.0),
               _bin(1, 2, 0.7, 1.1)]  # fmt: skip
    found = safe_range(profile)
    assert (found.widths, found.hard_limit) == (0.5, 1.0)
    collapsed = [*profile[:2], _bin(0.5, 1, 0.95, 0.1)]  # calibrated by luck, std collapsed
    assert safe_range(collapsed).widths == 0.5 and safe_range(collapsed).hard_limit == 0.5
    thin = [*profile[:2], _bin(0.5, 1, 0.95, 1.0, n=10)]  # too few targets: no evidence
    assert safe_range(thin).hard_limit == 0.5
    assert safe_range([_bin(0, 0, 0.5, 0.3), *profile[1:]]).widths == 0.0


def test_a_task_is_scored_in_its_own_units_as_predict_would():
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", 1, 1, dim_model=16, n_layers=1, n_heads=2, dim_head=8)
    rng = np.random.default_rng(0)
    xc = rng.uniform(100, 110, (12, 1))
    yc = 50 + 3 * rng.normal(size=(12, 1))
    xt = np.array([[105.0], [112.0], [130.0]])
    yt = np.array([[50.0], [51.0], [40.0]])
    scores = task_scores(model, (-2.0, 2.0), xc, yc, xt, yt)
    ctx = pd.DataFrame({"x": xc[:, 0], "y": yc[:, 0]})
    with pytest.warns(UserWarning, match="1 of 3 targets"):
        frame = tnpx.predict(model, ctx, pd.DataFrame({"x": xt[:, 0]}), domain=(-2, 2))
    mean, std = frame["y_mean"].to_numpy(), frame["y_std"].to_numpy()
    np.testing.assert_allclose(scores["z"], (yt[:, 0] - mean) / std, rtol=1e-4)
    ll = -0.5 * ((yt[:, 0] - mean) / std) ** 2 - np.log(std) - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(scores["ll"], ll, rtol=1e-4, atol=1e-5)
    span = xc.max() - xc.min()
    np.testing.assert_allclose(scores["distance"], [0, (112 - xc.max()) / span,
                                                    (130 - xc.max()) / span])  # fmt: skip


def test_a_profile_bins_every_target_once():
    cfg = config_from_dict({"data": GP, "eval": {"batch_size": 4}})
    sampler = prior_profile_sampler(cfg)
    model = tnpx.build_model("cnp", 1, 1)
    profile = distance_profile(model, sampler, 2, (-2.0, 2.0), edges=(0.0, 1.0, 100.0))
    assert [(b.low, b.high) for b in profile] == [(0, 0), (0, 1), (1, 100)]
    assert sum(b.n for b in profile) == 2 * 4 * 200  # PROFILE_TARGETS' 200 targets a task
    assert all(0 <= b.coverage95 <= 1 and b.mean_std > 0 for b in profile)


def test_a_profile_needs_a_gp_prior_in_the_uniform_layout():
    with pytest.raises(ValueError, match="uniform layout"):
        prior_profile_sampler(config_from_dict({"data": {**GP, "layout": "kr"}}))
