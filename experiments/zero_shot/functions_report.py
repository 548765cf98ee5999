"""The report of ``experiments/zero_shot/functions.py``: the markdown file (RESULTS.md's order)
and the figure of one draw per function with every model's and the fitted GP's bands."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments.kit import pm_small
from experiments.zero_shot.series_report import GP, named_models

COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:purple"]
GOAL_RATIO = 3.0  # the zoo's goal: relative RMSE within 3x of the fitted GP's, on smooth functions


def ratio(summary: dict, label: str) -> float:
    """A model's mean relative RMSE over the fitted GP's on one function."""
    return summary[label]["rel_rmse"][0] / summary[GP]["rel_rmse"][0]


def goal_verdicts(run: dict, labels: list[str]) -> dict[str, dict]:
    """Per model: its ratio to the GP on each smooth function and whether every one is within
    :data:`GOAL_RATIO` (the zoo's goal)."""
    smooth = [name for name in run["results"] if run["functions"][name]["smooth"]]
    out = {}
    for label in (lab for lab in labels if lab != GP):
        ratios = {name: ratio(run["results"][name]["summary"], label) for name in smooth}
        out[label] = {"ratios": ratios, "met": all(r <= GOAL_RATIO for r in ratios.values())}
    return out


def _scores(run: dict, labels: list[str], metric: str) -> list[str]:
    """One row per function: each label's ``metric`` (mean ± s.e. over the draws) and, for
    the relative RMSE, each model's ratio to the GP."""
    models = [lab for lab in labels if lab != GP]
    head = ["function", "smooth"] + [f"`{lab}`" if lab != GP else lab for lab in labels]
    if metric == "rel_rmse":
        head += [f"`{m}` / GP" for m in models]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, result in run["results"].items():
        s = result["summary"]
        cells = [name, "yes" if run["functions"][name]["smooth"] else "no"]
        cells += [pm_small(s[lab][metric]) for lab in labels]
        if metric == "rel_rmse":
            cells += [f"{ratio(s, m):.1f}x" for m in models]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _calibration_and_speed(run: dict, labels: list[str]) -> list[str]:
    """Per function: each label's 95 % coverage and share beyond 5σ (pooled over the draws),
    and median milliseconds per prediction."""
    head = ["function"] + [f"{lab} cov. / >5σ % / ms" for lab in labels]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, result in run["results"].items():
        s = result["summary"]
        cells = [
            f"{s[lab]['coverage95']:.2f} / {100 * s[lab]['beyond_5sd']:.0f} / "
            f"{1000 * s[lab]['seconds']:.0f}"
            for lab in labels
        ]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return rows


def reading(run: dict, labels: list[str]) -> str:
    """The zoo's goal per model (every smooth function within 3x of the GP's relative RMSE),
    its worst smooth function, and how much faster than the GP it is."""
    parts = []
    for label, verdict in goal_verdicts(run, labels).items():
        ratios = verdict["ratios"]
        worst = max(ratios, key=ratios.get)
        speed = np.median(
            [
                r["summary"][GP]["seconds"] / r["summary"][label]["seconds"]
                for r in run["results"].values()
            ]
        )
        within = sum(r <= GOAL_RATIO for r in ratios.values())
        cover = {lab: _smooth_coverage(run, lab) for lab in (label, GP)}
        parts.append(
            f"`{label}` is within {GOAL_RATIO:g}x of the fitted GP's relative RMSE on "
            f"{within} of {len(ratios)} smooth functions (goal: all; "
            f"{'met' if verdict['met'] else 'missed'}), worst on {worst} "
            f"({ratios[worst]:.1f}x), at {speed:.0f}x the GP's speed (median over functions); "
            f"its 95 % intervals cover {cover[label]:.3f} of the smooth functions' targets "
            f"(the GP's: {cover[GP]:.3f})"
        )
    return "; ".join(parts) + "."


def _smooth_coverage(run: dict, label: str) -> float:
    """``label``'s 95 % coverage over the smooth functions' targets (equal counts each)."""
    smooth = [f for f in run["results"] if run["functions"][f]["smooth"]]
    return float(np.mean([run["results"][f]["summary"][label]["coverage95"] for f in smooth]))


def write_report(run: dict, labels: list[str], figure: str, path: Path) -> str:
    """Write the markdown report to ``path`` and return it."""
    functions = "; ".join(
        f"{n}: {d['formula']} on [{d['domain'][0]:.3g}, {d['domain'][1]:.3g}] ({d['source']})"
        for n, d in run["functions"].items()
    )
    models = named_models(run)
    text = f"""# Zoo models on classic 1D test functions, 20 noise-free points, against a fitted GP

**What**: a test of smooth extrapolation and interpolation: each function observed
without noise at {run["n_context"]} points (one uniform draw in each of {run["n_context"]}
equal bins of its domain), predicted at {run["n_targets"]} points evenly across the whole
domain. Relative RMSE: the RMSE of the predictive mean over the function's std on that grid
(lower is better); NLL per target point (Gaussian, lower is better); mean ± s.e. over
{run["n_draws"]} draws per function. Models: {models}, through `tnpx.predict` in the
function's units. The fitted GP: scaled RBF + scaled Matérn-1/2 or -3/2 with Gaussian noise,
L-BFGS on the exact marginal likelihood from four starts, per draw.

**Command**: `{run["command"]}`, commit `{run["commit"]}`.

**Protocol or budget**: not a paper experiment, and no GP oracle exists (the functions are not
GP draws): the fitted GP is the reference. Goal: on the smooth functions
(analytic, at most about two periods across the domain; marked before scoring), relative RMSE
within 3x of the fitted GP's. Functions: {functions}.

**Hardware**: {run["hardware"]}; one torch thread; {run["wall_s"] / 60:.1f} min in all.

Relative RMSE (the last columns: a model's over the GP's):

{chr(10).join(_scores(run, labels, "rel_rmse"))}

NLL per target point:

{chr(10).join(_scores(run, labels, "nll"))}

95 % coverage, share of targets beyond 5 predicted standard deviations, milliseconds per
prediction (a model's median over repeated calls; the GP's fit and prediction):

{chr(10).join(_calibration_and_speed(run, labels))}

![one draw per function]({figure})

**Reading**: {reading(run, labels)}
"""
    path.write_text(text)
    return text


def plot_functions(examples: dict, models: list, path: Path) -> Path:
    """One panel per function: the function, the context of its first draw, and every model's
    and the GP's mean ± 2 std on a dense grid. ``examples``: name -> (the function, the draw,
    the fitted GP)."""
    from tnpx.extras import pyplot

    plt = pyplot("the test-functions figure")
    n = len(examples)
    cols = min(n, 5)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False)
    for ax, (name, (fn, draw, fitted)) in zip(axes.flat, examples.items()):
        grid = np.linspace(*fn.domain, 300)
        xc, yc = np.asarray(draw["xc"]), np.asarray(draw["yc"])
        ax.plot(grid, fn.f(grid), "-", color="0.6", lw=1.0, label="function")
        bands = {m.label: m.predict(xc, yc, grid) for m in models}
        bands[GP] = fitted.predict(grid)
        for (label, (mu, sd)), colour in zip(bands.items(), COLOURS):
            colour = "black" if label == GP else colour
            ax.plot(grid, mu, "--" if label == GP else "-", color=colour, lw=1.0, label=label)
            ax.fill_between(grid, mu - 2 * sd, mu + 2 * sd, color=colour, alpha=0.12)
        ax.plot(xc, yc, ".", color="black", ms=5, label="context")
        span = fn.f(grid).max() - fn.f(grid).min()
        ax.set_ylim(fn.f(grid).min() - 0.5 * span, fn.f(grid).max() + 0.5 * span)
        ax.set_title(name + ("" if fn.smooth else " (not smooth)"), fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
