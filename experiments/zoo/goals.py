"""The 1D zoo's goals, met or missed, one row per model (a section of zoo.md).

Each goal is read from the result file that measures it, for the models that file scored:

- own shortfall on the single-kernel prior ≤ 0.10 nats, and ≤ 0.30 on its periodic tasks
  (``bayes-reference.json``, :mod:`experiments.bayes.reference`);
- on the smooth test functions from 20 noise-free points, relative RMSE within 3x of a fitted
  GP's (``test-functions*.json``, :mod:`experiments.zero_shot.functions`);
- interpolation level with a fitted GP on all four measured series, CO₂ included: the paired
  NLL difference over the same splits at most two standard errors above 0, as
  ``real-series*.md`` judges it (``real-series*.json``, :mod:`experiments.zero_shot.series`);
- still at least 100x faster than fitting the GP (the median over those interpolations);
- item 1's: forecasting beyond the context, targets beyond 5σ no more often than the GP's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from experiments.bayes.report import shortfalls
from experiments.zero_shot.functions_report import GOAL_RATIO, ratio
from experiments.zero_shot.series_report import GP, forecast_share, paired
from experiments.zoo.scored import scored_run

SHORTFALL_GOAL = 0.10  # nats per target point, single-kernel prior
PERIODIC_GOAL = 0.30  # nats per target point, its periodic tasks
SPEED_GOAL = 100.0  # the GP's fit and prediction over the model's prediction
NOT_MEASURED = "not measured"


def _verdict(text: str, met: bool) -> str:
    return f"{text} ({'met' if met else 'missed'})"


def shortfall_cells(name: str, bayes: dict | None, fresh: bool) -> list[str]:
    """The two shortfall goals' cells (``fresh``: the reference scored today's weights)."""
    models = (bayes or {}).get("eval", {}).get("models", {})
    if name not in models or not fresh:
        return [NOT_MEASURED] * 2
    own = models[name]["shortfall"]
    periodic = shortfalls(bayes, name)[2]
    return [
        _verdict(f"{own:.3f}", own <= SHORTFALL_GOAL),
        _verdict(f"{periodic:.3f}", periodic <= PERIODIC_GOAL),
    ]


def functions_cell(name: str, results: Path) -> str:
    """How many smooth test functions are within :data:`GOAL_RATIO` of the GP, and the worst."""
    found = scored_run(name, results, "test-functions")
    if found is None:
        return NOT_MEASURED
    run, label, _ = found
    smooth = [f for f in run["results"] if run["functions"][f]["smooth"]]
    ratios = {f: ratio(run["results"][f]["summary"], label) for f in smooth}
    worst = max(ratios, key=ratios.get)
    within = sum(r <= GOAL_RATIO for r in ratios.values())
    text = f"{within}/{len(ratios)}, worst {worst} {ratios[worst]:.1f}x"
    return _verdict(text, within == len(ratios))


def series_cells(name: str, results: Path) -> list[str]:
    """Interpolation level with the GP (series where it is), the median speed-up over the GP on
    those interpolations, and the forecast share beyond 5σ against the GP's."""
    found = scored_run(name, results, "real-series")
    if found is None:
        return [NOT_MEASURED] * 3
    run, label, _ = found
    keys = [k for k in run["results"] if k.endswith("/interpolation")]
    if all(len(run["results"][k]["splits"]) > 1 for k in keys):
        behind = [k.split("/")[0] for k in keys if _behind(run, k, label)]
        level = _verdict(
            f"{len(keys) - len(behind)}/{len(keys)}"
            + (f", behind on {', '.join(behind)}" if behind else ""),
            not behind,
        )
    else:  # a paired standard error needs two splits or more
        level = NOT_MEASURED
    speed = statistics.median(
        run["results"][k]["summary"][GP]["seconds"] / run["results"][k]["summary"][label]["seconds"]
        for k in keys
    )
    ours, gp = forecast_share(run, label), forecast_share(run, GP)
    forecast = (
        NOT_MEASURED
        if ours is None
        else _verdict(f"{100 * ours:.1f} % vs {100 * gp:.1f} %", ours <= gp)
    )
    return [
        level,
        _verdict(f"{speed:.0f}x", speed >= SPEED_GOAL),
        forecast,
    ]


def _behind(run: dict, key: str, label: str) -> bool:
    """Whether ``label``'s NLL on ``key`` is more than two standard errors above the GP's
    (paired over the same splits)."""
    diff, se = paired(run, key, label, "nll")
    return diff > 2 * se


def goals_section(
    names: list[str], bayes: dict | None, results: Path, fresh: Callable[[str], bool]
) -> list[str]:
    """The section's lines: a sentence saying where each goal is measured, and the table.
    ``fresh(name)``: whether the Bayes reference scored model ``name``'s current weights."""
    head = [
        "model",
        f"own shortfall ≤ {SHORTFALL_GOAL:.2f}",
        f"periodic ≤ {PERIODIC_GOAL:.2f}",
        f"smooth functions within {GOAL_RATIO:g}x of a GP",
        "interpolation level with a GP (series)",
        f"≥ {SPEED_GOAL:.0f}x faster than the GP",
        "forecast beyond 5σ ≤ the GP's",
    ]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name in names:
        cells = [
            *shortfall_cells(name, bayes, fresh(name)),
            functions_cell(name, results),
            *series_cells(name, results),
        ]
        rows.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return [
        "",
        "The zoo's goals, met or missed (`experiments/zoo/goals.py`): the shortfalls from "
        "`bayes-reference.md` (nats per target point above the Bayes average; "
        f"{NOT_MEASURED!r} where it did not score the model's current weights), the test "
        "functions from `test-functions.md` (of its smooth functions, how many have a relative "
        "RMSE within 3x of the fitted GP's), the series from the newest `real-series*.md` that "
        "scored the model (NLL level: at most two paired standard errors above the GP's; speed: "
        "the median over the interpolations; forecasts: the share of targets beyond 5 "
        "predicted standard deviations, pooled):",
        "",
        *rows,
    ]
