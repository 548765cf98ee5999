"""End to end on a user's table: ``tnpx train`` on a CSV of noisy sine curves (the ``table``
task source), then ``tnpx eval`` of its ``model.pt`` on the held-out test curves."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import tnpx
from tests.helpers.user_tables import CONFIG, write_sines
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.evaluation.protocol import build_test_sampler
from tnpx.training.loop import build_train_sampler, validation_ll

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow


def test_train_and_evaluate_on_a_table(tmp_path):
    write_sines(tmp_path / "sines.csv")
    config = tmp_path / "sines.yaml"
    config.write_text(CONFIG.format(path=tmp_path / "sines.csv", out=tmp_path / "run"))
    cfg = load_config(config)
    sampler = build_train_sampler(cfg)
    torch.manual_seed(cfg.train.seed)  # the weights `tnpx train` starts from
    untrained = tnpx.build_model("tnp", 1, 1, **cfg.model_options())
    before = validation_ll(untrained, sampler, 4, torch.device("cpu"))

    assert main(["train", str(config)]) == 0
    trained = tnpx.load(tmp_path / "run" / "model.pt")
    after = validation_ll(trained, sampler, 4, torch.device("cpu"))
    assert after > before + 0.3, (before, after)  # -1.52 -> -0.97 when written

    out = tmp_path / "eval.json"
    assert main(["eval", str(tmp_path / "run" / "model.pt"), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    ours, gp, moments = report["rows"]  # the model, then the two per-task baselines
    assert (ours["model"], gp["model"], moments["model"]) == ("tnp", "gp", "context-moments")
    assert all(r["n_tasks"] == 8 and np.isfinite(r["ll"]) for r in report["rows"])
    assert 0 <= ours["coverage95"] <= 1 and set(ours["vs"]) == {"gp", "context-moments"}
    # the evaluation's tasks are the held-out test curves, none of them trained on
    test = build_test_sampler(cfg)
    keys = test.task_keys("test")
    assert len(keys) == 6 and not set(keys) & set(sampler.task_keys("train"))
    for step in range(2):
        assert batch_at(test, step, split="test").info["task"].max() < len(keys)
