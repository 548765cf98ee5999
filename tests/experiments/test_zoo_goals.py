"""experiments/zoo/goals.py: issue 33's goals read from the result files that measure them."""

from __future__ import annotations

import json

from experiments.zero_shot.series_report import GP
from experiments.zoo import goals


def _summary(model: dict, gp: dict) -> dict:
    return {"m": model, GP: gp}


def _functions_run(ratios: dict[str, float]) -> dict:
    smooth = {"forrester": True, "x-sin-x": True, "gramacy-lee": False}
    return {
        "models": {"m": "gp1d-x"},
        "commit": "c0",
        "functions": {f: {"smooth": smooth[f]} for f in ratios},
        "results": {
            f: {"summary": _summary({"rel_rmse": [0.01 * r, 0.0]}, {"rel_rmse": [0.01, 0.0]})}
            for f, r in ratios.items()
        },
    }


def _split(model_nll: float, gp_nll: float, n_tgt: int = 10) -> dict:
    return {"n_tgt": n_tgt, "scores": {"m": {"nll": model_nll}, GP: {"nll": gp_nll}}}


def _series_run() -> dict:
    """Two series: level on 'a' (paired differences around 0), behind on 'b' (always +1)."""
    timing = _summary({"seconds": 0.01, "beyond_5sd": 0.0}, {"seconds": 3.0, "beyond_5sd": 0.0})
    forecast = _summary({"seconds": 0.01, "beyond_5sd": 0.05}, {"seconds": 3.0, "beyond_5sd": 0.02})
    return {
        "models": {"m": "gp1d-x"},
        "commit": "c0",
        "n_splits": 3,
        "results": {
            "a/interpolation": {
                "splits": [_split(1.1, 1.0), _split(0.9, 1.0), _split(1.0, 1.0)],
                "summary": timing,
            },
            "b/interpolation": {
                "splits": [_split(2.0, 1.0), _split(2.1, 1.0), _split(1.9, 1.0)],
                "summary": timing,
            },
            "a/forecast": {"splits": [_split(0, 0, 30)], "summary": forecast},
            "b/forecast": {"splits": [_split(0, 0, 10)], "summary": forecast},
        },
    }


def test_the_smooth_functions_goal_counts_smooth_functions_only(tmp_path):
    run = _functions_run({"forrester": 2.5, "x-sin-x": 4.0, "gramacy-lee": 50.0})
    (tmp_path / "test-functions.json").write_text(json.dumps(run))
    assert goals.functions_cell("gp1d-x", tmp_path) == "1/2, worst x-sin-x 4.0x (missed)"
    run = _functions_run({"forrester": 2.5, "x-sin-x": 1.0, "gramacy-lee": 50.0})
    (tmp_path / "test-functions.json").write_text(json.dumps(run))
    assert goals.functions_cell("gp1d-x", tmp_path) == "2/2, worst forrester 2.5x (met)"
    assert goals.functions_cell("gp1d-other", tmp_path) == goals.NOT_MEASURED


def test_series_goals_level_speed_and_forecast(tmp_path):
    (tmp_path / "real-series-v9.json").write_text(json.dumps(_series_run()))
    level, speed, forecast = goals.series_cells("gp1d-x", tmp_path)
    assert level == "1/2, behind on b (missed)"
    assert speed == "300x (met)"
    assert forecast == "5.0 % vs 2.0 % (missed)"
    assert goals.series_cells("gp1d-other", tmp_path) == [goals.NOT_MEASURED] * 3


def test_shortfalls_need_a_reference_of_the_current_weights():
    bayes = {
        "eval": {
            "models": {"gp1d-x": {"shortfall": 0.08}},
            "interpolation": {"models": {"gp1d-x": {"shortfall": 0.05}}},
            "extrapolation": {"models": {"gp1d-x": {"shortfall": 0.2}}},
        },
        "per_kernel": {"periodic": {"models": {"gp1d-x": {"shortfall": 0.35}}}},
    }
    assert goals.shortfall_cells("gp1d-x", bayes, True) == ["0.080 (met)", "0.350 (missed)"]
    assert goals.shortfall_cells("gp1d-x", bayes, False) == [goals.NOT_MEASURED] * 2
    assert goals.shortfall_cells("gp1d-y", bayes, True) == [goals.NOT_MEASURED] * 2
    assert goals.shortfall_cells("gp1d-x", None, True) == [goals.NOT_MEASURED] * 2


def test_the_section_has_a_row_per_model(tmp_path):
    lines = goals.goals_section(["gp1d-x", "gp1d-y"], None, tmp_path, lambda name: True)
    table = [line for line in lines if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in table] == ["| `gp1d-x`", "| `gp1d-y`"]
    assert all(row.count(goals.NOT_MEASURED) == 6 for row in table)


def test_level_is_not_judged_without_two_splits(tmp_path):
    run = _series_run()
    run["results"]["b/interpolation"]["splits"] = run["results"]["b/interpolation"]["splits"][:1]
    (tmp_path / "real-series.json").write_text(json.dumps(run))
    assert goals.series_cells("gp1d-x", tmp_path)[0] == goals.NOT_MEASURED
