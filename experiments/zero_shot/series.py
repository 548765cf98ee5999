"""Pretrained models zero-shot on measured series, against a GP fitted per series.

For each series of :mod:`tnpx.data.synthetic.real_series` (shipped inside statsmodels) and several
random splits of two kinds:

- ``interpolation``: a window of consecutive points; a random subset is the context, the
  window's other points strictly inside the context's range are the targets;
- ``extrapolation``: a window of consecutive points is the context, the next stretch (a quarter
  of the window's length, so targets stay within the models' training target range) the
  targets;
- ``forecast``: a window of consecutive points is the context, the next stretch of the same
  length the targets: up to one context width beyond it, where the zoo was found
  confidently wrong (the share of targets beyond 5 predicted standard deviations is the
  measure);

each model predicts through :func:`tnpx.predict` (raw units in, raw units out, its training
domain read from its checkpoint), and a GPyTorch GP is fitted to the same context
(``experiments/zero_shot/fitted_gp.py``). Scores per split, in the series' units: RMSE of the
predictive mean and NLL per target point (Gaussian, lower is better); wall time per prediction
(the model: median of repeats of one ``tnpx.predict`` call; the GP: its fit plus prediction,
once per split), one torch thread. Mean ± standard error over the splits.

    python -m experiments.zero_shot.series                       # today's zoo
    python -m experiments.zero_shot.series --models gp1d-tnp long-runs/gp1d-v2-tnp/model.pt

Writes ``results/pretrained/real-series.md`` (+ ``.json``, ``.png``) unless ``--out`` says
otherwise.
"""

from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from experiments.kit import Provenance
from experiments.zero_shot.fitted_gp import fit_series_gp
from experiments.zero_shot.scoring import ZeroShot, load_models, save_run, score_context, summarise
from experiments.zero_shot.series_report import KINDS, plot_splits, write_report
from tnpx.data.synthetic import SERIES, RealSeries, load_series

WINDOW = 100  # points in a split's window (at most): the zoo saw 1-100 context points
INTERP_FRACTION = 0.7  # of the window's points that form an interpolation context
FORECAST_WINDOW = 50  # context points of a forecast (at most); as many targets after them


@dataclass
class Split:
    """Indices into a series: context and targets."""

    kind: str
    context: np.ndarray
    targets: np.ndarray


def make_split(n_points: int, kind: str, rng: np.random.Generator) -> Split:
    """A random split of a series of ``n_points`` points (see the module docstring)."""
    if kind == "interpolation":
        window = min(WINDOW, n_points)
        start = int(rng.integers(0, n_points - window + 1))
        chosen = np.sort(rng.choice(window, int(INTERP_FRACTION * window), replace=False))
        ctx = start + chosen
        inside = np.arange(ctx[0] + 1, ctx[-1])
        return Split(kind, ctx, np.setdiff1d(inside, ctx))
    if kind == "extrapolation":
        # Leave room for several different starts in a short series (the Nile's 100 years).
        window = min(int(0.8 * WINDOW), int(0.6 * n_points))
        horizon = window // 4
        start = int(rng.integers(0, n_points - window - horizon + 1))
        ctx = np.arange(start, start + window)
        return Split(kind, ctx, np.arange(start + window, start + window + horizon))
    if kind == "forecast":
        window = min(FORECAST_WINDOW, n_points // 3)
        start = int(rng.integers(0, n_points - 2 * window + 1))
        return Split(
            kind, np.arange(start, start + window), np.arange(start + window, start + 2 * window)
        )
    raise ValueError(f"unknown split kind {kind!r}; choose from {', '.join(KINDS)}")


def run_split(series: RealSeries, split: Split, models: list[ZeroShot]) -> dict:
    """Every model and the fitted GP on one split: scores and seconds per prediction."""
    xc, yc = series.x[split.context], series.y[split.context]
    xt, yt = series.x[split.targets], series.y[split.targets]
    return score_context(models, xc, yc, xt, yt, fit_series_gp)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gp1d-tnp", "gp1d-te-tnp"])
    parser.add_argument("--series", nargs="+", default=list(SERIES), choices=SERIES)
    parser.add_argument("--splits", type=int, default=5, help="random splits per series and kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/pretrained")
    parser.add_argument("--name", default="real-series", help="file name stem under --out")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    provenance = Provenance()
    models, labels = load_models(args.models)
    results, examples = {}, {}
    for s_index, name in enumerate(args.series):
        series = load_series(name)
        for k_index, kind in enumerate(KINDS):
            rows = []
            for i in range(args.splits):
                rng = np.random.default_rng([args.seed, s_index, k_index, i])
                split = make_split(len(series.x), kind, rng)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # GPyTorch's numerical notes, per start
                    rows.append(run_split(series, split, models))
                if i == 0:
                    examples[(name, kind)] = (series, split, rows[-1].pop("gp"))
                rows[-1].pop("gp", None)
                print(f"{name} {kind} split {i}: " + ", ".join(
                    f"{lab} NLL {rows[-1]['scores'][lab]['nll']:.3f}" for lab in labels
                ), flush=True)  # fmt: skip
            results[f"{name}/{kind}"] = {"splits": rows, "summary": summarise(rows, labels)}
    run = {
        **provenance.record(),
        "models": {m.label: m.spec for m in models},
        "n_splits": args.splits,
        "series": {n: _describe(load_series(n)) for n in args.series},
        "results": results,
    }
    figure = lambda path: plot_splits(examples, models, path)  # noqa: E731
    save_run(run, labels, Path(args.out) / args.name, figure, write_report)
    return run


def _describe(series: RealSeries) -> dict:
    return {
        "points": len(series.x),
        "x_units": series.x_units,
        "y_units": series.y_units,
        "description": series.description,
        "source": series.source,
    }


if __name__ == "__main__":
    main()
