"""The report of ``experiments/zero_shot/series.py``: the markdown file (RESULTS.md's order) and
the figure of one split per series and kind with every model's and the fitted GP's bands."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments.kit import paired_mean_se, pm_units

KINDS = ("interpolation", "extrapolation", "forecast")
GP = "fitted GP"


def named_models(run: dict) -> str:
    """A scored run's models for a report's text: each label, and in brackets the zoo name or
    checkpoint it was loaded from where that differs."""
    return ", ".join(
        f"`{lab}`" + (f" (`{spec}`)" if spec != lab else "") for lab, spec in run["models"].items()
    )


def _table(run: dict, labels: list[str], kind: str) -> list[str]:
    """One row per series: each label's RMSE and NLL (series units), GP's chosen nu."""
    head = ["series (units)"] + [f"{lab} RMSE" for lab in labels] + [f"{lab} NLL" for lab in labels]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, info in run["series"].items():
        summary = run["results"][f"{name}/{kind}"]["summary"]
        cells = [pm_units(summary[lab]["rmse"]) for lab in labels]
        cells += [pm_units(summary[lab]["nll"]) for lab in labels]
        rows.append(f"| {name} ({info['y_units']}) | " + " | ".join(cells) + " |")
    return rows


def _calibration(run: dict, labels: list[str]) -> list[str]:
    """Per series and kind: each label's share of targets beyond 5σ (%, pooled over the
    splits) and its 95 % coverage; runs recorded before these were measured have no table."""
    head = (
        ["series, split"] + [f"{lab} >5σ %" for lab in labels] + [f"{lab} cov." for lab in labels]
    )
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for key, result in run["results"].items():
        s = result["summary"]
        if "beyond_5sd" not in s[GP]:
            return []
        cells = [f"{100 * s[lab]['beyond_5sd']:.1f}" for lab in labels]
        cells += [f"{s[lab]['coverage95']:.2f}" for lab in labels]
        rows.append(f"| {key.replace('/', ', ')} | " + " | ".join(cells) + " |")
    return rows


def forecast_share(run: dict, label: str) -> float | None:
    """``label``'s share of forecast targets beyond 5 predicted standard deviations, pooled
    over every series' forecasts; None if the run has no forecasts or predates the measure."""
    keys = [k for k in run["results"] if k.endswith("/forecast")]
    if not keys or "beyond_5sd" not in run["results"][keys[0]]["summary"][GP]:
        return None
    n = [sum(r["n_tgt"] for r in run["results"][k]["splits"]) for k in keys]
    got = [run["results"][k]["summary"][label]["beyond_5sd"] for k in keys]
    return sum(a * b for a, b in zip(n, got)) / sum(n)


def forecast_verdict(run: dict, labels: list[str]) -> str:
    """The zoo's goal: in forecasts, no model beyond 5σ more often than the fitted GP (the
    shares pooled over every series' forecast targets)."""
    gp = forecast_share(run, GP)
    if gp is None:
        return ""
    shares = {lab: forecast_share(run, lab) for lab in labels if lab != GP}
    parts = [
        f"`{lab}` {100 * share:.1f} % ({'met' if share <= gp else 'missed'})"
        for lab, share in shares.items()
    ]
    return (
        f"Forecasts, targets beyond 5 predicted standard deviations over all series (goal: no "
        f"more often than the fitted GP's {100 * gp:.1f} %): " + "; ".join(parts) + "."
    )


def _latency(run: dict, labels: list[str]) -> list[str]:
    """Median milliseconds per prediction, and the GP's time over each model's."""
    models = [lab for lab in labels if lab != GP]
    head = ["series, split"] + [f"{lab} ms" for lab in labels] + [f"GP / {m}" for m in models]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for key, result in run["results"].items():
        s = result["summary"]
        cells = [f"{1000 * s[lab]['seconds']:.1f}" for lab in labels]
        cells += [f"{s[GP]['seconds'] / s[m]['seconds']:.0f}x" for m in models]
        rows.append(f"| {key.replace('/', ', ')} | " + " | ".join(cells) + " |")
    return rows


def paired(run: dict, key: str, model: str, metric: str) -> tuple[float, float]:
    """Mean ± s.e. over the splits of ``model``'s metric less the fitted GP's (same splits)."""
    splits = [s["scores"] for s in run["results"][key]["splits"]]
    return paired_mean_se([s[model][metric] for s in splits], [s[GP][metric] for s in splits])


def _verdicts(run: dict, labels: list[str]) -> list[str]:
    """Per model and kind: the series where its NLL is level with the GP's (paired difference
    over the same splits within two standard errors of 0) or better, where its RMSE is, and
    its median speed-up."""
    parts = []
    for model in (lab for lab in labels if lab != GP):
        for kind in KINDS:
            level = {"nll": [], "rmse": []}
            ratios = []
            for name in run["series"]:
                key = f"{name}/{kind}"
                for metric in level:
                    diff, se = paired(run, key, model, metric)
                    if diff <= 2 * se:
                        level[metric].append(name)
                s = run["results"][key]["summary"]
                ratios.append(s[GP]["seconds"] / s[model]["seconds"])
            nll, rmse = (", ".join(level[m]) or "none" for m in ("nll", "rmse"))
            parts.append(
                f"`{model}`, {kind}: level with the fitted GP or better in NLL on "
                f"{len(level['nll'])}/{len(run['series'])} series ({nll}) and in RMSE on "
                f"{len(level['rmse'])} ({rmse}); {np.median(ratios):.0f}x faster (median)."
            )
    return parts


def write_report(run: dict, labels: list[str], figure: str, path: Path) -> str:
    """Write the markdown report to ``path`` and return it."""
    series = "; ".join(f"{n} ({d['description']}; {d['source']})" for n, d in run["series"].items())
    models = named_models(run)
    n = run["n_splits"]
    has_forecast = any(k.endswith("/forecast") for k in run["results"])
    forecast = "\n".join(_table(run, labels, "forecast")) if has_forecast else "(not run)"
    text = f"""# Pretrained models zero-shot on measured series, against a GP fitted per series

**What**: the pretrained 1D models ({models}) predicting measured series they never saw,
through `tnpx.predict` (raw units in and out; the context's range mapped onto the training
domain, outputs standardised by the context), against a GPyTorch exact GP fitted to the same
context (scaled RBF + periodic + Matérn-ν kernel with Gaussian noise, ν ∈ {{1/2, 3/2}} and the
period's start chosen over 6 L-BFGS starts by the marginal likelihood:
`experiments/zero_shot/fitted_gp.py`). Metrics per target point in the series' units: RMSE of
the predictive mean and Gaussian NLL of the observations (both lower is better), mean ± s.e.
over {n} random splits per series and kind; wall time per prediction (median). Interpolation:
a window of up to 100 consecutive points, a random 70% as context, the window's other points
inside the context's range as targets. Extrapolation: up to 80 consecutive points as context,
the next quarter of that length as targets. Forecast: up to 50 consecutive points as context,
the next as many as targets (up to one context width beyond it). Series: {series}.

**Command**: `{run["command"]}`, commit `{run["commit"]}` (recorded at start).

**Protocol or budget**: not a paper experiment (no paper number applies); zero-shot: the models
are used as shipped, nothing is fitted to these series except the GP baseline.

**Hardware and time**: {run["hardware"]}; {run["wall_s"] / 60:.1f} min for the whole table;
load average {run["load_average"]:.1f} at the start (other processes sharing the 2 cores slow
both columns alike; compare the ratio).
Timings: one torch thread; the model's time is the median of 5 `tnpx.predict` calls per split
(DataFrames in and out, unit maps included; the checkpoint loaded once beforehand), the GP's is
one fit (all starts) plus its prediction per split; both are medians over the splits.

## Interpolation

{chr(10).join(_table(run, labels, "interpolation"))}

## Extrapolation

{chr(10).join(_table(run, labels, "extrapolation"))}

## Forecast

{forecast}

## Calibration: targets beyond 5σ and 95 % coverage

{chr(10).join(_calibration(run, labels)) or "(not measured in this run)"}

{forecast_verdict(run, labels)}

## Wall time per prediction

{chr(10).join(_latency(run, labels))}

`{figure}`: the first split of each series and kind: context (black), targets (red), each
model's and the fitted GP's mean ± 2σ.

**Reading** ("level": the paired difference over the same splits, model − GP, is at most two
standard errors above 0): {" ".join(_verdicts(run, labels))}
"""
    path.write_text(text)
    return text


def plot_splits(examples: dict, models: list, path: Path) -> Path:
    """One panel per (series, kind): the window, context, targets, every model's band on a
    dense grid and the fitted GP's. ``examples``: (name, kind) -> (series, split, fitted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({name for name, _ in examples}, key=[n for n, _ in examples].index)
    fig, axes = plt.subplots(
        len(names), len(KINDS), figsize=(5.5 * len(KINDS), 2.8 * len(names)), squeeze=False
    )
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:purple"]
    for row, name in enumerate(names):
        for col, kind in enumerate(KINDS):
            ax = axes[row, col]
            series, split, fitted = examples[(name, kind)]
            shown = np.concatenate([split.context, split.targets])
            lo, hi = shown.min(), shown.max()
            x, y = series.x, series.y
            ax.plot(x[lo : hi + 1], y[lo : hi + 1], "-", color="0.8", lw=0.8)
            ax.plot(x[split.context], y[split.context], ".", color="black", ms=4, label="context")
            ax.plot(x[split.targets], y[split.targets], "x", color="tab:red", ms=4, label="targets")
            grid = np.linspace(x[lo], x[hi], 300)
            xc, yc = x[split.context], y[split.context]
            bands = {m.label: m.predict(xc, yc, grid) for m in models}
            bands[GP] = fitted.predict(grid)
            for (label, (mu, sd)), colour in zip(bands.items(), colours):
                colour = "black" if label == GP else colour
                style = "--" if label == GP else "-"
                ax.plot(grid, mu, style, color=colour, lw=1.1, label=label)
                ax.fill_between(grid, mu - 2 * sd, mu + 2 * sd, color=colour, alpha=0.12)
            ax.set_title(f"{name}, {kind}", fontsize=9)
            ax.set_ylabel(series.y_units, fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0, 0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
