"""Training a count model on a user's table with an exposure column (issue 52, item 4): a tiny
``poisson`` ``tnp`` trained from a config with ``data.exposure`` lowers its validation loss,
its checkpoint names the column, and ``tnpx eval``'s scores of it run (the per-task baselines
read the counts without the exposures)."""

from __future__ import annotations

import numpy as np
import torch

import tnpx
from tests.helpers.user_tables import counts_table
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
