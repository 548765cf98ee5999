"""experiments/zero_shot/series.py: the splits, the scores, the per-series GP baseline, and one
tiny run end to end (one series, one split of each kind, a tiny untrained model)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import tnpx

pytest.importorskip("statsmodels.datasets", reason="needs the real-data extra")
from experiments.zero_shot import scoring  # noqa: E402
from experiments.zero_shot import series as pr  # noqa: E402
from experiments.zero_shot.fitted_gp import fit_series_gp, periodogram_peak  # noqa: E402
from tnpx.data.synthetic.real_series import load_series  # noqa: E402

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("n_points", [100, 309, 732])
def test_interpolation_targets_lie_inside_the_context_and_apart_from_it(n_points):
    for i in range(20):
        split = pr.make_split(n_points, "interpolation", np.random.default_rng(i))
        ctx, tgt = split.context, split.targets
        assert len(ctx) == 70 and len(tgt) > 0 and not set(ctx) & set(tgt)
        assert ctx.min() < tgt.min() and tgt.max() < ctx.max() and ctx.max() - ctx.min() < 100
        assert ctx.min() >= 0 and ctx.max() < n_points


@pytest.mark.parametrize("n_points, window", [(100, 60), (309, 80)])
def test_extrapolation_targets_follow_the_context(n_points, window):
    starts = set()
    for i in range(20):
        split = pr.make_split(n_points, "extrapolation", np.random.default_rng(i))
        ctx, tgt = split.context, split.targets
        assert np.array_equal(ctx, np.arange(ctx[0], ctx[0] + window))
        assert np.array_equal(tgt, np.arange(ctx[-1] + 1, ctx[-1] + 1 + window // 4))
        assert tgt[-1] < n_points
        starts.add(ctx[0])
    assert len(starts) > 5  # the splits differ, even on the Nile's 100 years


def test_forecast_targets_are_the_next_window():
    for i in range(10):
        split = pr.make_split(309, "forecast", np.random.default_rng(i))
        ctx, tgt = split.context, split.targets
        assert np.array_equal(ctx, np.arange(ctx[0], ctx[0] + 50))
        assert np.array_equal(tgt, np.arange(ctx[-1] + 1, ctx[-1] + 51)) and tgt[-1] < 309


def test_score_is_rmse_and_gaussian_nll():
    rng = np.random.default_rng(0)
    y, mean, std = rng.normal(size=50), rng.normal(size=50), rng.uniform(0.5, 2, 50)
    got = scoring.score(y, mean, std)
    assert got["rmse"] == pytest.approx(np.sqrt(np.mean((y - mean) ** 2)))
    assert got["nll"] == pytest.approx(-norm.logpdf(y, mean, std).mean())
    z = np.abs(y - mean) / std
    assert got["beyond_5sd"] == np.mean(z > 5) and got["coverage95"] == np.mean(z <= 1.96)


def test_series_gp_finds_the_period_and_predicts_in_the_series_units():
    """A noisy sinusoid plus a trend in odd units: the fitted GP is periodic with the data's
    period (or a multiple of it), held-out
    points are predicted far better than by the context mean, and rescaling the data's units
    rescales the prediction (the GP works on the context's standardised units)."""
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(1900, 1960, 80))
    y = 300 + 0.5 * (x - 1900) + 4 * np.sin(2 * math.pi * x / 7.0) + rng.normal(0, 0.5, 80)
    ctx = np.ones(80, bool)
    ctx[::4] = False
    held = ~ctx
    peak = periodogram_peak(x[ctx], y[ctx])
    assert peak == pytest.approx(7.0, rel=0.05)
    gp = fit_series_gp(x[ctx], y[ctx])
    period = gp.gp.periodic.base_kernel.period_length.item() * (x[ctx].max() - x[ctx].min())
    mean, std = gp.predict(x[held])
    rmse = np.sqrt(np.mean((mean - y[held]) ** 2))
    assert rmse < 0.2 * np.std(y[held] - y[ctx].mean())
    # A whole multiple of the true period fits a periodic function too (with harmonics).
    cycles = period / 7.0
    assert round(cycles) >= 1 and abs(cycles - round(cycles)) < 0.05 * round(cycles)
    assert gp.gp.periodic.outputscale.item() > 0.1
    scaled = fit_series_gp(x[ctx] * 10, 1000 + 3 * y[ctx]).predict(x[held] * 10)
    np.testing.assert_allclose(scaled[0], 1000 + 3 * mean, rtol=1e-4)
    np.testing.assert_allclose(scaled[1], 3 * std, rtol=1e-3)


def test_tiny_run_end_to_end(tmp_path):
    model = tnpx.build_model("tnp", dim_x=1, dim_y=1, dim_model=16, n_layers=1, n_heads=2)
    checkpoint = tmp_path / "tiny.pt"
    tnpx.save(model, checkpoint)
    out = tmp_path / "out"
    argv = ["--models", str(checkpoint), "--series", "nile", "--splits", "1", "--out", str(out)]
    run = pr.main(argv)
    text = (out / "real-series.md").read_text()
    assert (out / "real-series.png").stat().st_size > 0
    assert "| nile (10^8 m^3 per year) |" in text and "tiny RMSE" in text
    saved = json.loads((out / "real-series.json").read_text())
    assert saved["results"].keys() == {"nile/interpolation", "nile/extrapolation", "nile/forecast"}
    assert "## Calibration: targets beyond 5σ" in text and "Forecasts, targets beyond 5" in text
    for kind in ("interpolation", "extrapolation", "forecast"):
        scores = saved["results"][f"nile/{kind}"]["splits"][0]["scores"]
        assert all(math.isfinite(s["nll"]) and s["seconds"] > 0 for s in scores.values())
        # The model's score is that of tnpx.predict on the split the seed gives.
        k_index = ("interpolation", "extrapolation", "forecast").index(kind)
        series = load_series("nile")
        split = pr.make_split(100, kind, np.random.default_rng([0, 0, k_index, 0]))
        pred = tnpx.predict(
            model,
            pd.DataFrame({"t": series.x[split.context], "y": series.y[split.context]}),
            pd.DataFrame({"t": series.x[split.targets]}),
            domain=(-2.0, 2.0),
        )
        want = scoring.score(
            series.y[split.targets], pred["y_mean"].to_numpy(), pred["y_std"].to_numpy()
        )
        assert scores["tiny"]["nll"] == pytest.approx(want["nll"], rel=1e-5)
        assert scores["tiny"]["rmse"] == pytest.approx(want["rmse"], rel=1e-5)
        assert scores["tiny"]["beyond_5sd"] == pytest.approx(want["beyond_5sd"])
    assert run["models"] == {"tiny": str(checkpoint)}


def test_run_checkpoints_are_labelled_by_their_run_folder():
    # Every long run's checkpoint is `last.pt`: labelling by file stem would merge two runs.
    assert scoring.model_label("long-runs/gp1d-v2-tnp/checkpoints/last.pt") == "gp1d-v2-tnp"
    assert scoring.model_label("long-runs/gp1d-v2-te-tnp-rope/checkpoints/last.pt") == (
        "gp1d-v2-te-tnp-rope"
    )
    assert scoring.model_label("some/dir/my-model.pt") == "my-model"
    assert scoring.model_label("gp1d-tnp") == "gp1d-tnp"
