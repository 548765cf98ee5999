"""Every likelihood family trains from a config on a table (issue 52's "done when"): a tiny
``tnp`` with the family's head, the ``table`` source fitting the family's scaling, a few dozen
steps; the training loss falls and the checkpoint stores the family and its output map."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tnpx
from tests.apply.test_predict_families import CASES, table
from tnpx.checkpoint import read_checkpoint
from tnpx.likelihoods import family_of, scaling_rule


@pytest.mark.parametrize("case", list(CASES))
def test_each_family_trains_on_a_table_and_its_loss_falls(case, tmp_path):
    option, dim_y, _ = CASES[case]
    table(case).to_csv(tmp_path / "t.csv", index=False)
    y = [f"y{j}" for j in range(dim_y)]
    config = {
        "model": {"name": "tnp", "dim_x": 1, "dim_y": dim_y, "dim_model": 16, "n_layers": 1,
                  "n_heads": 2, "dim_head": 8, "dim_ff": 16, "likelihood": option},
        "data": {"name": "table", "path": str(tmp_path / "t.csv"), "task": "site",
                 "x": ["day"], "y": y, "batch_size": 8},
        "optim": {"name": "adamw", "lr": 1.0e-2},
        "schedule": {"name": "constant", "warmup_steps": 0},
        "train": {"steps": 60, "log_every": 1, "val_every": 60, "val_batches": 1,
                  "checkpoint_every": 1000, "progress": False, "out_dir": str(tmp_path / "run")},
    }  # fmt: skip
    result = tnpx.train(config)
    loss = pd.read_csv(result.out_dir / "metrics.csv")["loss"].dropna().to_numpy()
    assert np.isfinite(loss).all() and loss[-10:].mean() < loss[:10].mean(), case
    stored = read_checkpoint(result.out_dir / "model.pt")
    assert family_of(stored["model"]["hyper"]["likelihood"]) == family_of(option)
    loc = stored["normalisation"]["y"]["loc"]
    assert (np.asarray(loc) == 0).all() == (scaling_rule(option) != "standardise"), case
