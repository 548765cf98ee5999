"""Scores on a user's held-out tasks in the data's units (tnpx.evaluation.user_tasks): equal to a
float64 re-derivation on the raw values, and the baselines scored on the very same tasks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tnpx
from tests.helpers.user_tables import write_sines
from tnpx.data import batch_at
from tnpx.data.table import TableSampler
from tnpx.evaluation.user_tasks import evaluate_tasks, format_task_table, per_task


def test_scores_are_in_the_datas_units(tmp_path):
    frame = write_sines(tmp_path / "s.csv", n_curves=40)
    frame["value"] = 300 + 40 * frame["value"]  # kelvin-like units
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["value"], batch_size=4)
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", 1, 1, dim_model=16, n_layers=1, n_heads=2, dim_head=8)
    rows = evaluate_tasks(model, sampler, 2, baselines=("context-moments",))
    ours = rows[0]
    # float64 re-derivation: predictions mapped back to the raw units, scored there
    norm = sampler.normalisation["y"]
    loc, scale = norm["loc"][0], norm["scale"][0]
    lls, rmses = [], []
    with torch.no_grad():
        for i in range(2):
            b = batch_at(sampler, i, split="test")
            pred = model.predict_batch(b)
            for t in range(b.batch_size):
                keep = (
                    b.mask_t[t] if b.mask_t is not None else torch.ones(b.yt.shape[1], dtype=bool)
                )
                y = b.yt[t, keep, 0].double() * scale + loc
                mean = pred.mean[t, keep, 0].double() * scale + loc
                std = pred.stddev[t, keep, 0].double() * scale
                z = (y - mean) / std
                lls.append((-0.5 * z**2 - torch.log(std) - 0.5 * math.log(2 * math.pi)).mean())
                rmses.append(((y - mean) ** 2).mean().sqrt())
    assert ours.n_tasks == 8
    assert ours.ll == pytest.approx(float(torch.stack(lls).mean()), rel=1e-5)
    assert ours.rmse[0] == pytest.approx(float(torch.stack(rmses).mean()), rel=1e-5)
    # the baseline on the same tasks: the paired difference is the difference of the means
    diff, _ = ours.vs["context-moments"]
    assert diff == pytest.approx(ours.ll - rows[1].ll, abs=1e-6)
    table = format_task_table(rows)
    assert "| context-moments | 8 |" in table and "model LL − this" in table


def test_every_task_score_is_per_real_target(tmp_path):
    frame = write_sines(tmp_path / "s.csv", n_curves=30)
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["value"], batch_size=4)
    model = tnpx.build_model("context-moments", 1, 1)
    scores = per_task(model, sampler, 1)
    assert scores["ll"].shape == (4,) and scores["mse"].shape == (4, 1)
    assert np.isfinite(scores["ll"]).all() and (scores["covered"] <= 1).all()


def test_an_output_no_target_observes_has_no_rmse_in_the_table():
    from tnpx.evaluation.user_tasks import TaskMetrics

    row = TaskMetrics("tnp", 3, -1.0, 0.1, [0.5, math.nan], [0.02, math.nan], 0.95)
    line = format_task_table([row]).splitlines()[2]  # the row, under the header
    assert "0.5 ± 0.02, —" in line and "nan" not in line
