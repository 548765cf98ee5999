"""Training with a grid as extra context of the ``stations`` source (tnpx.data.stations.grid):
a model given the grid predicts the stations better than one without it, and ``tnpx train`` /
``tnpx eval`` run end to end with ``missing_outputs: true``, the grid's normalisation stored."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import tnpx
from tests.helpers.stations_grid_data import COLUMNS, make_grid, make_stations
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.data import batch_at, build_sampler
from tnpx.data.stations import StationsSampler
from tnpx.training.loop import build_train_sampler, fit, validation_ll

# The shared fixtures (grid, nc, stations), imported apart so the noqa covers them only.
# isort: split
from tests.helpers.stations_grid_data import grid_fixture, nc_fixture, stations_fixture  # noqa: F401 (fixtures)

SMALL = {"dim_model": 32, "n_layers": 2, "n_heads": 2, "dim_head": 16, "dim_ff": 32,
         "n_embed_hidden": 1, "n_decoder_hidden": 1}  # fmt: skip


@pytest.mark.slow  # 200 training steps of two models: about 10 s
def test_a_model_given_the_grid_predicts_the_stations_better():
    """With one to three context stations a day, the day's field is unknown without the grid;
    with it, a target station's value is its cell's (validation LL -0.30 against -1.41 when
    written; seeds 1 and 2 of the weights: -0.25 / 0.26 against -1.41)."""
    grid = make_grid(days=120, trend=0.0)
    frame = make_stations(grid)
    lls = {}
    for name, options in (("grid", {"grid": {"path": grid, "y": ["t2m"]}}), ("alone", {})):
        sampler = StationsSampler.from_frame(frame, 8, ctx_fraction=[0.1, 0.3], **COLUMNS,
                                             **options)  # fmt: skip
        torch.manual_seed(0)
        model = tnpx.build_model("tnp", 2, sampler.dim_y, missing_outputs=True, **SMALL)
        optimiser = torch.optim.Adam(model.parameters(), 3e-3)
        for step in range(200):
            loss = -model.log_likelihood(batch_at(sampler, step)).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        lls[name] = validation_ll(model, sampler, 4, torch.device("cpu"))
    assert lls["grid"] > lls["alone"] + 0.5, lls


# --- end to end: train with missing_outputs, the normalisation stored, eval ---------------------

CONFIG = """
name: stations-grid
model: {{name: tnp, dim_x: 2, dim_y: 2, dim_model: 16, n_layers: 1, n_heads: 2, dim_head: 8,
        dim_ff: 16, n_embed_hidden: 1, n_decoder_hidden: 1, missing_outputs: {missing}}}
data: {{name: stations, path: {path}, time: time, coords: [lat, lon], y: [temp], max_tgt: 8,
       batch_size: 4, grid: {{path: {grid}, y: [t2m], points: 24}}}}
optim: {{name: adamw, lr: 1.0e-2}}
schedule: {{name: cosine, warmup_steps: 2}}
train: {{steps: 6, log_every: 3, val_every: 6, val_batches: 1, checkpoint_every: 1000,
        progress: false, out_dir: {out}}}
eval: {{n_batches: 2, batch_size: 4}}
"""


def test_train_and_evaluate_with_a_grid_context(tmp_path, nc, stations):
    path = tmp_path / "readings.csv"
    stations.to_csv(path, index=False)
    config = tmp_path / "run.yaml"
    text = {"path": path, "grid": nc, "out": tmp_path / "run"}
    config.write_text(CONFIG.format(missing="false", **{**text, "out": tmp_path / "refused"}))
    with pytest.raises(ValueError, match="missing output values"):
        fit(load_config(config))
    config.write_text(CONFIG.format(missing="true", **text))
    cfg = load_config(config)
    fit(cfg)
    model = tmp_path / "run" / "model.pt"
    stored = tnpx.checkpoint.read_checkpoint(model)["normalisation"]
    limits = stored["x"].pop("limits")  # measured after training (training.range_limits)
    assert stored == build_train_sampler(cfg).normalisation
    assert set(limits) == {"warn_at", "refuse_at", "measured_on"}
    assert stored["y"]["columns"] == ["temp", "t2m"]
    out = tmp_path / "eval.json"
    assert main(["eval", str(model), "--out", str(out), "--no-baselines"]) == 0
    (ours,) = json.loads(out.read_text())["rows"]
    assert ours["n_tasks"] == 8 and np.isfinite(ours["ll"]) and np.isfinite(ours["rmse"][0])
    assert build_sampler("stations", **cfg.data_options(test=True)).dim_y == 2
