"""Scoring zoo models zero-shot beside a fitted GP, for every zero-shot study (measured series,
test functions, measured 2D fields): a model behind ``tnpx.predict`` (:class:`ZeroShot`), its
scores on one context and its targets (:func:`score_context`: RMSE, Gaussian NLL, coverage,
seconds) beside a GP fitted to the same context, their summary over many contexts
(:func:`summarise`) and a run's files (:func:`save_run`). The studies differ only in their
data and their reports."""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

import tnpx
from experiments.kit import mean_se
from experiments.zero_shot.series_report import GP
from tnpx.apply import resolve_model

NP_REPEATS = 5  # timed tnpx.predict calls per context (median)


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


def save_run(run: dict, labels: list[str], stem: Path, figure, report) -> None:
    """Write a scored run as ``<stem>.png`` (``figure(path)`` draws it and returns its path),
    ``<stem>.json`` and ``<stem>.md`` (``report(run, labels, figure_name, path)`` writes and
    returns the markdown, which is printed)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    drawn = figure(stem.with_suffix(".png"))
    stem.with_suffix(".json").write_text(json.dumps(run, indent=1) + "\n")
    print(report(run, labels, drawn.name, stem.with_suffix(".md")))
