"""experiments/zero_shot/functions.py: the designs, the relative RMSE, the goal's verdict on
the smooth functions only, and one tiny run end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tnpx

pytest.importorskip("gpytorch", reason="needs the gp extra")
from experiments.kit import pm_small  # noqa: E402
from experiments.zero_shot import functions as pf  # noqa: E402
from experiments.zero_shot import functions_report as report  # noqa: E402
from experiments.zero_shot.scoring import ZeroShot  # noqa: E402
from experiments.zero_shot.series_report import GP  # noqa: E402


def test_there_are_ten_functions_finite_and_varying_on_their_domains():
    assert len(pf.FUNCTIONS) == 10
    assert sum(fn.smooth for fn in pf.FUNCTIONS.values()) == 5
    for fn in pf.FUNCTIONS.values():
        y = fn.f(np.linspace(*fn.domain, 1001))
        assert np.isfinite(y).all() and y.std() > 0, fn.name


def test_forrester_is_its_published_formula():
    # Forrester et al. (2008): f(0.5) = (1)^2 sin(2) and the minimum near x = 0.7572 of -6.0207.
    f = pf.FUNCTIONS["forrester"].f
    assert f(np.array([0.5]))[0] == pytest.approx(np.sin(2.0))
    x = np.linspace(0, 1, 100_001)
    assert x[np.argmin(f(x))] == pytest.approx(0.7572, abs=1e-3)
    assert f(x).min() == pytest.approx(-6.0207, abs=1e-3)


def test_a_design_has_one_context_point_per_bin_and_a_grid_over_the_domain():
    fn = pf.FUNCTIONS["x-sin-x"]
    for seed in range(5):
        xc, yc, xt, yt = pf.design(fn, np.random.default_rng(seed))
        bins = np.floor((xc - 0.0) / 10.0 * pf.N_CONTEXT).astype(int)
        assert np.array_equal(bins, np.arange(pf.N_CONTEXT))
        np.testing.assert_array_equal(yc, xc * np.sin(xc))
        assert len(xt) == pf.N_TARGETS and xt[0] == 0.0 and xt[-1] == 10.0
        np.testing.assert_array_equal(yt, fn.f(xt))
    a, b = (pf.design(fn, np.random.default_rng(s))[0] for s in (0, 1))
    assert not np.array_equal(a, b)


class _Fixed:
    """A model or fitted GP that predicts ``mean(x)`` with std 0.1."""

    def __init__(self, label, mean):
        self.label, self.mean, self.nu = label, mean, 0.5

    def predict(self, xc, yc=None, xt=None):
        x = xc if xt is None else xt
        return self.mean(x), np.full(len(x), 0.1)


def test_relative_rmse_is_rmse_over_the_functions_std_on_the_grid(monkeypatch):
    fn = pf.FUNCTIONS["gavana-11"]
    xt = np.linspace(*fn.domain, pf.N_TARGETS)
    grid_mean = fn.f(xt).mean()
    # A model that predicts the grid's mean everywhere has relative RMSE exactly 1; the truth 0.
    flat = _Fixed("flat", lambda x: np.full(len(x), grid_mean))
    monkeypatch.setattr(pf, "fit_gp_1d", lambda xc, yc: _Fixed(GP, fn.f))
    row = pf.score_draw(fn, [flat], np.random.default_rng(0), repeats=1)
    assert row["scores"]["flat"]["rel_rmse"] == pytest.approx(1.0, rel=1e-12)
    assert row["scores"][GP]["rel_rmse"] == 0.0
    assert len(row["draw"]["xc"]) == pf.N_CONTEXT


def _run(ratios: dict[str, float]) -> dict:
    """A scored run whose model's relative RMSE is ``ratio`` times the GP's (0.01)."""
    return {
        "functions": {n: {"smooth": pf.FUNCTIONS[n].smooth} for n in ratios},
        "results": {
            n: {
                "summary": {
                    "m": {"rel_rmse": (0.01 * r, 0.0), "seconds": 0.01, "coverage95": 1.0},
                    GP: {"rel_rmse": (0.01, 0.0), "seconds": 1.0, "coverage95": 0.9},
                }
            }
            for n, r in ratios.items()
        },
    }


def test_the_goal_is_judged_on_the_smooth_functions_only():
    met = _run({"forrester": 2.9, "x-sin-x": 1.0, "gramacy-lee": 40.0})
    verdict = report.goal_verdicts(met, ["m", GP])["m"]
    assert verdict["met"] and set(verdict["ratios"]) == {"forrester", "x-sin-x"}
    missed = report.goal_verdicts(_run({"forrester": 3.1, "x-sin-x": 1.0}), ["m", GP])["m"]
    assert not missed["met"]
    text = report.reading(_run({"forrester": 3.1, "x-sin-x": 1.0}), ["m", GP])
    assert "on 1 of 2 smooth functions" in text and "missed" in text and "forrester (3.1x)" in text
    assert "100x the GP's speed" in text and "cover 1.000 of" in text and "GP's: 0.900" in text


@pytest.mark.slow
def test_tiny_run_end_to_end(tmp_path):
    model = tnpx.build_model("tnp", dim_x=1, dim_y=1, dim_model=16, n_layers=1, n_heads=2)
    checkpoint = tmp_path / "tiny.pt"
    tnpx.save(model, checkpoint)
    out = tmp_path / "out"
    argv = ["--models", str(checkpoint), "--functions", "forrester", "gramacy-lee"]
    pf.main([*argv, "--draws", "2", "--repeats", "1", "--out", str(out)])
    text = (out / "test-functions.md").read_text()
    assert (out / "test-functions.png").stat().st_size > 0
    assert "| forrester | yes |" in text and "| gramacy-lee | no |" in text
    saved = json.loads((out / "test-functions.json").read_text())
    draws = saved["results"]["forrester"]["draws"]
    assert len(draws) == 2 and all(np.isfinite(d["scores"]["tiny"]["nll"]) for d in draws)
    # The model's score is tnpx.predict's on the design the seed gives.
    fn = pf.FUNCTIONS["forrester"]
    xc, yc, xt, yt = pf.design(fn, np.random.default_rng([0, 0, 1]))
    mean, std = ZeroShot(str(checkpoint)).predict(xc, yc, xt)
    want = np.sqrt(np.mean((mean - yt) ** 2)) / yt.std()
    assert draws[1]["scores"]["tiny"]["rel_rmse"] == pytest.approx(want, rel=1e-5)


def test_small_errors_keep_their_digits():
    # A GP's relative RMSE on a smooth function is ~1e-4: it must not print as 0.000.
    assert pm_small((4.1e-4, 3e-5)) == "4.1e-04 ± 3.0e-05"
    assert pm_small((0.027, 0.002)) == "0.027 ± 0.002"
