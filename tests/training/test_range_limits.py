"""After training on a user's data, how far outside the training range the model stays
calibrated is measured on its own validation tasks moved along each input (issue 51, item 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tnpx.batch import Batch, observed_score
from tnpx.data import batch_at, build_sampler
from tnpx.data.table import TableSampler
from tnpx.training.range_limits import LADDER, _moved, measured_limits, read_ladder

CPU = torch.device("cpu")


def test_a_calibrated_ladder_is_trusted_to_its_end():
    assert read_ladder((0.95, 0.1), [(0.95, 0.1)] * len(LADDER)) == (2.0, 2.0)


def test_warn_at_the_last_calibrated_rung_refuse_at_the_first_failed_one():
    scores = [(0.95, 0.1), (0.94, 0.0), (0.92, 0.0), (0.86, -0.2), (0.7, -1.0)]
    assert read_ladder((0.95, 0.1), scores) == (0.25, 1.0)


def test_a_lost_likelihood_ends_the_warn_range():
    scores = [(0.95, 0.1), (0.95, -0.3), (0.95, 0.1), (0.95, 0.1), (0.95, 0.1), (0.95, 0.1)]
    assert read_ladder((0.95, 0.1), scores) == (0.05, 2.0)


def test_a_rung_that_is_not_finite_fails():
    nan = float("nan")
    assert read_ladder((0.95, 0.1), [(0.95, 0.1), (0.95, nan), (nan, nan)]) == (0.05, 0.25)


def test_a_model_poor_already_unmoved_is_judged_by_how_much_worse_it_gets():
    scores = [(0.745, 0.0), (0.735, 0.0), (0.7, 0.0), (0.6, 0.0)]
    assert read_ladder((0.75, 0.0), scores) == (0.1, 0.5)


def test_a_task_moves_whole_half_up_half_down():
    batch = Batch(torch.zeros(4, 3, 2), torch.zeros(4, 3, 1), torch.ones(4, 5, 2))
    moved = _moved(batch, 1, 0.5)
    assert moved.xc[0, :, 1].tolist() == [0.5] * 3 and moved.xc[1, :, 1].tolist() == [-0.5] * 3
    assert moved.xt[2, :, 1].tolist() == [1.5] * 5 and moved.xt[3, :, 1].tolist() == [0.5] * 5
    assert (moved.xc[..., 0] == 0).all() and (batch.xc == 0).all()  # the batch is untouched


class _KnowsOnlyItsBox(torch.nn.Module):
    """A stand-in model: N(0, 1) inside the model-unit box [-2, 2], confidently 0 (std 0.01)
    outside it, as a model that never saw inputs there might be."""

    def predict_batch(self, batch: Batch) -> torch.distributions.Normal:
        inside = (batch.xt.abs() <= 2).all(-1, keepdim=True)
        std = torch.where(inside, 1.0, 0.01)
        return torch.distributions.Normal(torch.zeros_like(std), std)

    def log_likelihood(self, batch: Batch, pred) -> torch.Tensor:
        return observed_score(pred.log_prob(batch.yt), batch.mask_t, batch.mask_yt)


def _noise_table(seed: int = 0) -> TableSampler:
    rng = np.random.default_rng(seed)
    n = 40 * 30
    frame = pd.DataFrame({"task": np.repeat(np.arange(40), 30), "t": rng.uniform(0, 10, n),
                          "v": rng.standard_normal(n)})  # fmt: skip
    return TableSampler.from_frame(frame, task="task", x=["t"], y=["v"], batch_size=16)


def test_a_model_that_fails_outside_its_box_gets_near_limits():
    sampler = _noise_table()
    limits = measured_limits(_KnowsOnlyItsBox(), sampler, 2, CPU)
    (warn,), (refuse,) = limits["warn_at"], limits["refuse_at"]
    assert warn < refuse <= 0.5  # a shift of 0.25 widths (0.87 model units) puts many out
    assert limits["measured_on"] == "32 validation tasks"
    assert batch_at(sampler, 0, split="val").xc.abs().max() < 2  # the unmoved tasks fit


def test_a_source_without_a_training_range_measures_nothing():
    sampler = build_sampler("gp", 4, 0)
    assert measured_limits(_KnowsOnlyItsBox(), sampler, 2, CPU) is None


def test_no_validation_split_measures_nothing():
    xr = pytest.importorskip("xarray")
    from tnpx.data.grid import GridSampler

    t = np.arange(40.0)
    data = xr.Dataset({"v": (("time", "x"), np.sin(t[:, None] + np.arange(12.0)))},
                      coords={"time": t, "x": np.arange(12.0)})  # fmt: skip
    no_val = GridSampler.from_dataset(data, y=["v"], window={"time": 3, "x": 4}, val_fraction=0)
    with pytest.raises(ValueError, match="val split has no windows"):
        batch_at(no_val, 0, split="val")
    assert measured_limits(_KnowsOnlyItsBox(), no_val, 2, CPU) is None
