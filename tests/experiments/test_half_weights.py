"""A finished long run's model.pt stored at half precision (experiments/long_runs/half_weights.py):
it loads as a float32 model of the same config and predicts the rounded weights' prediction,
keeps the rest of its record, takes about half the bytes, and is written once; the driver's
tidy applies it to the runs named for it only."""

from __future__ import annotations

import pytest
import torch

import tnpx
from experiments.long_runs import driver
from experiments.long_runs.half_weights import HALF_WEIGHT_RUNS, main, store_half
from tests.helpers.small_models import make_task, small_model
from tnpx.checkpoint import read_checkpoint


def saved(path):
    model = small_model("tnp")
    units = {side: {"columns": [name], "loc": [0.0], "scale": [1.0]}
             for side, name in (("x", "t"), ("y", "v"))}  # fmt: skip
    tnpx.save(model, path, normalisation=units)
    return model


def test_the_half_weights_load_as_float32_and_predict_the_rounded_weights(tmp_path):
    path = tmp_path / "model.pt"
    model = saved(path)
    before, after = store_half(path)
    assert after < 0.6 * before
    record = read_checkpoint(path)
    assert record["stored_as"] == "float16" and record["normalisation"]["y"]["columns"] == ["v"]
    assert all(v.dtype == torch.float16 for v in record["state_dict"].values()
               if v.is_floating_point())  # fmt: skip
    loaded = tnpx.load(path)
    assert all(p.dtype == torch.float32 for p in loaded.parameters())
    rounded = small_model("tnp")
    with torch.no_grad():
        for p in rounded.parameters():
            p.copy_(p.half().float())
    xc, yc, xt = make_task()
    with torch.no_grad():
        got, want, full = loaded(xc, yc, xt), rounded(xc, yc, xt), model(xc, yc, xt)
    assert torch.equal(got.mean, want.mean) and torch.equal(got.stddev, want.stddev)
    assert (got.mean - full.mean).abs().max() < 1e-2  # the rounding moves it a little
    assert store_half(path) == (after, after)  # once only


def test_a_weight_float16_cannot_hold_is_refused(tmp_path):
    path = tmp_path / "model.pt"
    saved(path)
    record = torch.load(path, weights_only=False)
    key = next(k for k, v in record["state_dict"].items() if v.is_floating_point())
    record["state_dict"][key] = record["state_dict"][key] * 0 + 1e6
    torch.save(record, path)
    with pytest.raises(ValueError, match=f"weight {key} exceeds float16's range"):
        store_half(path)


@pytest.mark.parametrize("name", [HALF_WEIGHT_RUNS[0], "kr3-tnp-d"])
def test_tidy_halves_only_the_runs_named_for_it(tmp_path, monkeypatch, capsys, name):
    run = tmp_path / name
    (run / "checkpoints").mkdir(parents=True)
    saved(run / "model.pt")
    monkeypatch.setattr(driver, "FOLDER", tmp_path)
    assert driver.tidy([name]) == [name]
    halved = read_checkpoint(run / "model.pt").get("stored_as") == "float16"
    assert halved == (name in HALF_WEIGHT_RUNS)
    assert main([str(run / "model.pt")]) == 0 and "MiB ->" in capsys.readouterr().out
