"""Pretrained models zero-shot on measured series, against a GP fitted per series.

For each series of :mod:`tnpx.data.real_series` (shipped inside statsmodels) and several
random splits of two kinds:

- ``interpolation``: a window of consecutive points; a random subset is the context, the
  window's other points strictly inside the context's range are the targets;
- ``extrapolation``: a window of consecutive points is the context, the next stretch (a quarter
  of the window's length, so targets stay within the models' training target range) the
  targets;
- ``forecast``: a window of consecutive points is the context, the next stretch of the same
  length the targets: up to one context width beyond it, where issue 33 found the zoo
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
import json
import math
import os
import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import tnpx
from experiments.zero_shot.fitted_gp import fit_series_gp
from experiments.zero_shot.series_report import GP, KINDS, plot_splits, write_report
from tnpx.apply.predict import resolve_model
from tnpx.data.real_series import SERIES, RealSeries, load_series
from tnpx.provenance import command_line, git_commit, hardware

WINDOW = 100  # points in a split's window (at most): the zoo saw 1-100 context points
INTERP_FRACTION = 0.7  # of the window's points that form an interpolation context
NP_REPEATS = 5  # timed tnpx.predict calls per split (median)
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


def score(y: np.ndarray, mean: np.ndarray, std: np.ndarray) -> dict[str, float]:
    """RMSE of the mean and Gaussian NLL per point, in ``y``'s units; the shares of points
    inside the central 95 % interval and beyond 5 predicted standard deviations."""
    z = np.abs(y - mean) / std
    nll = 0.5 * np.log(2 * math.pi * std**2) + 0.5 * z**2
    return {
        "rmse": float(np.sqrt(np.mean((y - mean) ** 2))),
        "nll": float(np.mean(nll)),
        "coverage95": float(np.mean(z <= 1.959963984540054)),
        "beyond_5sd": float(np.mean(z > 5)),
    }


def model_label(spec: str) -> str:
    """A table label for a zoo name or a checkpoint path: the run's folder for a run's
    checkpoint (``long-runs/gp1d-v2-tnp/checkpoints/last.pt`` -> ``gp1d-v2-tnp``, since every
    run's checkpoint is ``last.pt``) or final model (``long-runs/gp1d-v2-tnp/model.pt``), the
    file's stem for any other ``.pt``."""
    if not spec.endswith(".pt"):
        return spec
    path = Path(spec)
    if path.name == "model.pt":
        return path.parent.name
    return path.parent.parent.name if path.parent.name == "checkpoints" else path.stem


class ZeroShot:
    """A pretrained model (zoo name or checkpoint path) predicting through ``tnpx.predict``."""

    def __init__(self, spec: str):
        self.spec = spec
        self.net, self.domain, _ = resolve_model(spec)
        self.label = model_label(spec)
        if self.domain is None:  # a checkpoint without its experiment: the zoo's domain
            self.domain = (-2.0, 2.0)

    def predict(self, xc, yc, xt) -> tuple[np.ndarray, np.ndarray]:
        out = tnpx.predict(
            self.net,
            pd.DataFrame({"t": xc, "y": yc}),
            pd.DataFrame({"t": xt}),
            domain=self.domain,
        )
        return out["y_mean"].to_numpy(), out["y_std"].to_numpy()


def distinct_labels(labels: list[str]) -> list[str]:
    """``labels``, or exit saying two specs share one (their rows would merge in a table)."""
    if len(set(labels)) < len(labels):
        raise SystemExit(f"two models share a label ({labels}): give checkpoints distinct names")
    return labels


def load_models(specs: list[str], kind: type = ZeroShot) -> tuple[list, list[str]]:
    """Each spec (zoo name or checkpoint) as ``kind``, and the table's labels: the models'
    then the fitted GP's."""
    models = [kind(spec) for spec in specs]
    return models, distinct_labels([m.label for m in models] + [GP])


def timed(fn, repeats: int):
    """``fn()``'s last result and the median wall time of ``repeats`` calls."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def run_split(series: RealSeries, split: Split, models: list[ZeroShot]) -> dict:
    """Every model and the fitted GP on one split: scores and seconds per prediction."""
    xc, yc = series.x[split.context], series.y[split.context]
    xt, yt = series.x[split.targets], series.y[split.targets]
    return score_context(models, xc, yc, xt, yt, fit_series_gp)


def score_context(models: list, xc, yc, xt, yt, fit_gp, repeats: int = NP_REPEATS) -> dict:
    """Every model (median seconds over ``repeats`` calls) and the GP ``fit_gp(xc, yc)`` (its
    fit and prediction, once) on one context and its targets: scores and seconds each."""
    row = {"n_ctx": len(xc), "n_tgt": len(xt), "scores": {}}
    for model in models:
        (mean, std), seconds = timed(lambda m=model: m.predict(xc, yc, xt), repeats)
        row["scores"][model.label] = {**score(yt, mean, std), "seconds": seconds}
    start = time.perf_counter()
    gp = fit_gp(xc, yc)
    mean, std = gp.predict(xt)
    seconds = time.perf_counter() - start
    row["scores"][GP] = {**score(yt, mean, std), "seconds": seconds, "nu": gp.nu}
    row["gp"] = gp  # kept for the figure, dropped before writing JSON
    return row


def mean_se(values: list[float]) -> tuple[float, float]:
    n = len(values)
    se = statistics.stdev(values) / math.sqrt(n) if n > 1 else float("nan")
    return statistics.fmean(values), se


def summarise(rows: list[dict], labels: list[str]) -> dict:
    """Per label: RMSE and NLL mean ± s.e. over splits, median seconds per prediction, and
    the shares of targets inside the 95 % interval and beyond 5σ, pooled over the splits."""
    out = {}
    for label in labels:
        cells = [r["scores"][label] for r in rows]
        rmse, nll = mean_se([c["rmse"] for c in cells]), mean_se([c["nll"] for c in cells])
        seconds = statistics.median(c["seconds"] for c in cells)
        n = sum(r["n_tgt"] for r in rows)
        pooled = {
            k: sum(c[k] * r["n_tgt"] for c, r in zip(cells, rows)) / n
            for k in ("coverage95", "beyond_5sd")
        }
        out[label] = {"rmse": rmse, "nll": nll, "seconds": seconds, **pooled}
    return out


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
    commit, command = git_commit(), command_line()
    models, labels = load_models(args.models)
    started, load_at_start = time.perf_counter(), os.getloadavg()[0]
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
        "command": command,
        "commit": commit,
        "hardware": hardware(),
        "wall_s": time.perf_counter() - started,
        "load_average": load_at_start,
        "models": {m.label: m.spec for m in models},
        "n_splits": args.splits,
        "series": {n: _describe(load_series(n)) for n in args.series},
        "results": results,
    }
    figure = lambda path: plot_splits(examples, models, path)  # noqa: E731
    save_run(run, labels, Path(args.out) / args.name, figure, write_report)
    return run


def save_run(run: dict, labels: list[str], stem: Path, figure, report) -> None:
    """Write a scored run as ``<stem>.png`` (``figure(path)`` draws it and returns its path),
    ``<stem>.json`` and ``<stem>.md`` (``report(run, labels, figure_name, path)`` writes and
    returns the markdown, which is printed)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    drawn = figure(stem.with_suffix(".png"))
    stem.with_suffix(".json").write_text(json.dumps(run, indent=1) + "\n")
    print(report(run, labels, drawn.name, stem.with_suffix(".md")))


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
