"""``tnpx eval`` of a model trained on a user's grid: the table gives the s.e. over tasks and
over the split's clusters and says what each assumes, coverage by context size follows, and
coverage far from nominal is a warning; the JSON holds the same."""

from __future__ import annotations

import json

import pytest

from tests.helpers.small_grids import CONFIG, make_dataset
from tnpx.cli import main

pytest.importorskip("xarray")
pytest.importorskip("netCDF4")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A 4-step ``tnp`` on windows (time 3, lat 4, lon 5) of a 6-hourly field."""
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    tmp = tmp_path_factory.mktemp("grid_eval")
    nc = tmp / "t2m.nc"
    make_dataset(n_time=80).to_netcdf(nc)  # 8 test steps: windows in 2-3 blocks of 3
    config = tmp / "grid.yaml"
    config.write_text(CONFIG.format(path=nc, out=tmp / "run"))
    fit(load_config(config))
    return tmp / "run" / "model.pt"


def test_eval_prints_both_standard_errors_with_their_assumptions(checkpoint, tmp_path, capsys):
    out = tmp_path / "eval.json"
    args = ["eval", str(checkpoint), "--no-baselines", "--n-batches", "3", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr()
    report = json.loads(out.read_text())
    row = report["rows"][0]
    assert "LL (data units) ± s.e. tasks / clusters" in printed.out
    assert f"{row['ll']:.3f} ± {row['ll_se']:.3f} / {row['ll_se_clustered']:.3f}" in printed.out
    assert "s.e. over tasks: each of the 12 test tasks independent" in printed.out
    unit = "'time' block of 3 points (test windows starting in one block are one unit"
    assert unit in printed.out and unit in report["standard_errors"]
    assert row["cluster_unit"].startswith(unit) and row["n_clusters"] >= 2
    assert f"s.e. over clusters: {row['n_clusters']} clusters, one per {unit}" in printed.out
    assert "95% coverage by context size:" in printed.out
    assert sum(b["n_tasks"] for b in row["coverage_by_ctx"]) == 12
    # the flags (a 4-step model is rarely calibrated) are printed and stored alike
    for flag in report["coverage_flags"]:
        assert f"warning: {flag}" in printed.out
    if report["coverage_flags"]:
        assert f"tnpx eval: warning: {report['coverage_flags'][0]}" in printed.err


def test_a_badly_calibrated_model_is_flagged_by_eval(checkpoint, tmp_path, capsys, monkeypatch):
    from torch.distributions import Normal

    from tnpx.models import NeuralProcess

    predict = NeuralProcess.predict_batch

    def overconfident(self, batch):  # the model's own mean, a tenth of its std
        pred = predict(self, batch)
        return Normal(pred.mean, pred.stddev / 10, validate_args=False)

    monkeypatch.setattr(NeuralProcess, "predict_batch", overconfident)
    out = tmp_path / "eval.json"
    assert main(["eval", str(checkpoint), "--no-baselines", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    flags = json.loads(out.read_text())["coverage_flags"]
    assert flags[0].startswith("overconfident: 95% intervals cover")
    assert "tnpx eval: warning: overconfident" in printed.err
    assert "warning: likely cause: test inputs outside the training range" in printed.out
