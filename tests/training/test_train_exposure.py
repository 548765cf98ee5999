"""Training a count model with an exposure column (issue 52, items 3 and 4): a tiny ``poisson``
``tnp`` trained from a config with ``data.exposure`` on a table, on stations and on a grid (an
exposure variable) lowers its validation loss and its checkpoint names the column; on the
table ``tnpx eval``'s scores of it run (the per-task baselines read the counts without the
exposures); on stations ``tnpx.predict`` then predicts each target's counts at its exposure."""

from __future__ import annotations

import numpy as np
import torch

import tnpx
from tests.helpers.user_tables import counts_stations, counts_table
from tnpx.checkpoint import read_checkpoint
from tnpx.evaluation.user_tasks import evaluate_tasks
from tnpx.training.loop import build_train_sampler, validation_ll


def config(path, out) -> dict:
    return {
        "name": "cases",
        "model": {"name": "tnp", "dim_x": 1, "dim_y": 1, "likelihood": "poisson",
                  "dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16,
                  "n_embed_hidden": 1, "n_decoder_hidden": 1},
        "data": {"name": "table", "path": str(path), "task": "site", "x": ["week"],
                 "y": ["cases"], "exposure": "person_years", "batch_size": 8},
        "optim": {"name": "adamw", "lr": 1.0e-2},
        "train": {"steps": 60, "log_every": 60, "val_every": 60, "val_batches": 2,
                  "checkpoint_every": 1000, "progress": False, "out_dir": str(out)},
        "eval": {"n_batches": 2, "batch_size": 4},
    }  # fmt: skip


def test_a_poisson_model_trains_on_a_table_with_an_exposure_column(tmp_path):
    counts_table(n_sites=40).to_csv(tmp_path / "cases.csv", index=False)
    raw = config(tmp_path / "cases.csv", tmp_path / "run")
    cfg = tnpx.config.load_config(raw)
    sampler = build_train_sampler(cfg)
    assert "exposure_t" in tnpx.data.batch_at(sampler, 0, split="val").info
    torch.manual_seed(cfg.train.seed)  # the weights training starts from
    untrained = tnpx.build_model("tnp", 1, 1, **cfg.model_options())
    before = validation_ll(untrained, sampler, 4, torch.device("cpu"))

    result = tnpx.train(raw)
    after = validation_ll(result.model, sampler, 4, torch.device("cpu"))
    assert np.isfinite(result.final_loss)
    assert after > before + 0.3, (before, after)

    record = read_checkpoint(result.out_dir / "model.pt")
    assert record["normalisation"]["exposure"] == {"column": "person_years"}
    rows = evaluate_tasks(result.model, sampler, 1, baselines=("context-moments",))
    assert [r.model for r in rows] == ["tnp", "context-moments"]
    assert all(np.isfinite(r.crps[0]) for r in rows)


def test_a_poisson_model_trains_on_stations_with_an_exposure_column_and_predicts_with_it(
    tmp_path,
):
    frame = counts_stations(days=60)
    frame.to_csv(tmp_path / "cases.csv", index=False)
    raw = config(tmp_path / "cases.csv", tmp_path / "run")
    raw["model"]["dim_x"] = 2
    raw["data"] = {"name": "stations", "path": str(tmp_path / "cases.csv"), "time": "day",
                   "coords": ["lat", "lon"], "y": ["cases"], "exposure": "hours",
                   "batch_size": 8}  # fmt: skip
    result = trained_better(raw)

    path = result.out_dir / "model.pt"
    assert read_checkpoint(path)["normalisation"]["exposure"] == {"column": "hours"}
    day = frame[frame.day == 55].drop(columns="day")
    context, targets = day.iloc[:5], day.iloc[5:].drop(columns="cases")
    pred = tnpx.predict(path, context, targets)
    twice = tnpx.predict(path, context, targets.assign(hours=2 * targets.hours))
    np.testing.assert_allclose(twice.cases_mean, 2 * pred.cases_mean, rtol=1e-5)


def test_a_poisson_model_trains_on_a_grid_with_an_exposure_variable(tmp_path):
    from tests.helpers.small_grids import counts_grid  # skips without xarray

    counts_grid(sea=True).to_netcdf(tmp_path / "cases.nc")
    raw = config(tmp_path / "cases.nc", tmp_path / "run")
    raw["model"]["dim_x"] = 2
    raw["data"] = {"name": "grid", "path": str(tmp_path / "cases.nc"), "y": ["cases"],
                   "exposure": "pop", "window": {"time": 1, "lat": 6, "lon": 7},
                   "batch_size": 8}  # fmt: skip
    result = trained_better(raw)
    assert read_checkpoint(result.out_dir / "model.pt")["normalisation"]["exposure"] == {
        "column": "pop"
    }


def trained_better(raw: dict):
    """Train the 2-input config ``raw``; its validation LL must rise by more than 0.3."""
    cfg = tnpx.config.load_config(raw)
    sampler = build_train_sampler(cfg)
    torch.manual_seed(cfg.train.seed)  # the weights training starts from
    untrained = tnpx.build_model("tnp", 2, 1, **cfg.model_options())
    before = validation_ll(untrained, sampler, 4, torch.device("cpu"))
    result = tnpx.train(raw)
    after = validation_ll(result.model, sampler, 4, torch.device("cpu"))
    assert after > before + 0.3, (before, after)
    return result
