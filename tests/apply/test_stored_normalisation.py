"""A model trained on a user's table stores its normalisation (fitted on the training tasks);
predict, the CLI and NPRegressor map with it, so absolute inputs keep their meaning; a record
that cannot be read is refused in one line; the model's sizes must match the data's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.user_tables import CONFIG, write_sines
from tnpx.checkpoint import CheckpointError, read_checkpoint
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.training.loop import build_train_sampler, fit


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny model trained for a few steps on sine curves whose t is in days 100-108."""
    tmp = tmp_path_factory.mktemp("table")
    frame = write_sines(tmp / "raw.csv")
    frame["t"] += 100.0
    frame["value"] = 20 + 5 * frame["value"]
    frame.to_csv(tmp / "sines.csv", index=False)
    config = tmp / "sines.yaml"
    config.write_text(CONFIG.format(path=tmp / "sines.csv", out=tmp / "run"))
    cfg = load_config(config, ["train.steps=20"])
    fit(cfg)
    return tmp, cfg, build_train_sampler(cfg).normalisation


def test_the_checkpoint_stores_the_training_tasks_normalisation(trained):
    tmp, _, normalisation = trained
    record = read_checkpoint(tmp / "run" / "model.pt")
    limits = record["normalisation"]["x"].pop("limits")  # measured after training
    assert record["normalisation"] == normalisation
    assert limits["measured_on"].endswith("validation tasks")
    ((low, high),) = normalisation["x"]["range"]  # the training curves' days
    assert 100 <= low < 100.5 and 107.5 < high <= 108
    assert record["normalisation"]["x"]["columns"] == ["t"]
    assert 103 < normalisation["x"]["loc"][0] < 105 and normalisation["y"]["loc"][0] > 15


def test_predict_maps_with_it_in_the_users_units(trained):
    tmp, _, norm = trained
    path = tmp / "run" / "model.pt"
    ctx = pd.DataFrame({"t": [101.0, 101.5, 102.0], "value": [21.0, 23.0, 24.0]})
    tgt = pd.DataFrame({"t": [101.2, 101.9]})
    out = tnpx.predict(path, ctx, tgt)
    assert out.attrs["tnpx"]["scaling"] == "stored"
    (xl,), (xs,) = norm["x"]["loc"], norm["x"]["scale"]
    (yl,), (ys,) = norm["y"]["loc"], norm["y"]["scale"]
    model = tnpx.load(path)
    t = lambda a: torch.tensor(a, dtype=torch.float32)[None, :, None]  # noqa: E731
    with torch.no_grad():
        pred = model(t((ctx.t - xl) / xs), t((ctx.value - yl) / ys), t((tgt.t - xl) / xs))
    np.testing.assert_allclose(out["value_mean"], pred.mean[0, :, 0] * ys + yl, rtol=1e-5)
    np.testing.assert_allclose(out["value_std"], pred.stddev[0, :, 0] * ys, rtol=1e-5)
    # the context's own maps are another prediction, on request
    with pytest.warns(UserWarning, match="domain is unknown"):  # a table states no box
        by_context = tnpx.predict(path, ctx, tgt, scaling="context")
    assert "scaling" not in by_context.attrs["tnpx"]
    assert not np.allclose(by_context["value_mean"], out["value_mean"])
    with pytest.raises(ValueError, match="stores no normalisation"):
        tnpx.predict("gp1d-tnp", ctx.rename(columns={"t": "x"}), tgt.rename(columns={"t": "x"}),
                     scaling="stored")  # fmt: skip
    reg = tnpx.NPRegressor(str(path)).fit(ctx[["t"]].to_numpy(), ctx["value"].to_numpy())
    np.testing.assert_allclose(reg.predict(tgt[["t"]].to_numpy()), out["value_mean"], rtol=1e-6)


def test_the_cli_says_which_maps_it_used(trained, capsys):
    tmp, _, _ = trained
    pd.DataFrame({"t": [101.0, 102.0], "value": [21.0, 24.0]}).to_csv(tmp / "c.csv", index=False)
    pd.DataFrame({"t": [101.5]}).to_csv(tmp / "t.csv", index=False)
    args = ["predict", str(tmp / "run" / "model.pt"), "--context", str(tmp / "c.csv"),
            "--targets", str(tmp / "t.csv")]  # fmt: skip
    assert main(args) == 0
    assert "stored normalisation" in capsys.readouterr().err
    assert main([*args, "--scaling", "context"]) == 0
    assert "stored normalisation" not in capsys.readouterr().err


def test_an_unreadable_record_is_refused_in_one_line(trained, tmp_path):
    tmp, _, _ = trained
    record = read_checkpoint(tmp / "run" / "model.pt")
    bad = {**record, "normalisation": {**record["normalisation"], "y": {"loc": [1.0]}}}
    torch.save(bad, tmp_path / "bad-norm.pt")
    ctx = pd.DataFrame({"t": [101.0, 102.0], "value": [21.0, 24.0]})
    with pytest.raises(CheckpointError, match="stored normalisation cannot be read") as err:
        tnpx.predict(tmp_path / "bad-norm.pt", ctx, ctx[["t"]])
    assert "\n" not in str(err.value)
    torch.save({**record, "experiment": "model: [not, a, mapping"}, tmp_path / "bad-exp.pt")
    with pytest.raises(CheckpointError, match="recorded training experiment cannot be read"):
        tnpx.predict(tmp_path / "bad-exp.pt", ctx, ctx[["t"]])


def test_the_models_sizes_must_match_the_data(trained, tmp_path):
    _, cfg, _ = trained
    cfg2 = type(cfg)(**{**cfg.__dict__, "model": {**cfg.model, "dim_y": 2}})
    cfg2.train.out_dir = str(tmp_path / "run")
    with pytest.raises(ValueError, match=r"1 input\(s\) and 1 output\(s\).*dim_y=2.*model.dim_y=1"):
        fit(cfg2)
