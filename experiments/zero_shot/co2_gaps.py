"""Filling gaps in the weekly Mauna Loa CO₂ record: the zoo's 1D models zero-shot against a GP
fitted per window, and why a model is over- or under-confident there.

Data: the weekly flask record that ships as ``statsmodels.datasets.co2`` (1958-2001, its
missing weeks dropped; time in decimal years, CO₂ in ppmv), not the monthly means that
``experiments/zero_shot/series.py`` scores. Splits, each in a window of :data:`WINDOW`
consecutive weeks (about two years: two annual cycles on a rising trend):

- ``scattered``: a random :data:`HIDDEN` of the window's weeks hidden; the targets are the
  hidden weeks inside the context's range (most have a context week beside them, so a
  calibrated predictive std there is mostly observation noise);
- ``runs``: :data:`N_RUNS` runs of :data:`RUN_WEEKS` consecutive weeks hidden (a month-long
  gap each), the targets.

Each model predicts through :func:`tnpx.predict` (:class:`~experiments.zero_shot.scoring.ZeroShot`:
units mapped from the context); the GP is ``fitted_gp.fit_series_gp`` (RBF + periodic + Matérn
+ Gaussian noise, by the marginal likelihood). Per target, in ppm: RMSE, Gaussian NLL, 95 %
coverage, share beyond 5σ (``scoring.score``). The diagnosis, per window:

- ``std_gap``: the median predicted std at the targets;
- ``std_ctx``: the median predicted std *at the context's own inputs*: what the model takes
  the observation noise to be (a function pinned by a datum is uncertain by about the noise
  there), beside the fitted GP's noise std ``gp_noise`` and the context's std ``ctx_std``;
- ``floored``: the model's coverage and NLL with its std floored at the fitted GP's noise std
  (a what-if that needs a GP fit, not a fix): if it restores coverage, the model's
  overconfidence is an underestimated noise level.

    python -m experiments.zero_shot.co2_gaps          # results/pretrained/co2-gaps.md (+ .json)
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import torch

import tnpx
from experiments.kit import Provenance
from experiments.zero_shot.fitted_gp import fit_series_gp
from experiments.zero_shot.scoring import ZeroShot, score, summarise
from experiments.zero_shot.series_report import GP
from tnpx.extras import require
from tnpx.zoo import model_card

WINDOW = 100  # consecutive weeks per split: the v2 models saw 1-100 context points
HIDDEN = 0.3  # of a scattered window's weeks
N_RUNS, RUN_WEEKS = 3, 4  # month-long gaps per runs window
KINDS = ("scattered", "runs")
SOURCE = (
    "Atmospheric CO2 at Mauna Loa, weekly flask samples 1958-2001 (missing weeks dropped); "
    "Keeling and Whorf (2004), Scripps Institution of Oceanography, via CDIAC; shipped as "
    "statsmodels.datasets.co2"
)


def load_weekly() -> tuple[np.ndarray, np.ndarray]:
    """The weekly record: time ``[n]`` in decimal years (a week at its date's day of the year)
    and CO₂ ``[n]`` in ppmv, missing weeks dropped, sorted by time."""
    datasets = require("statsmodels.datasets", "real-data", "experiments.zero_shot.co2_gaps")
    weekly = datasets.co2.load_pandas().data["co2"].dropna().sort_index()
    days = np.where(weekly.index.is_leap_year, 366.0, 365.0)
    x = weekly.index.year.to_numpy(float) + (weekly.index.day_of_year.to_numpy(float) - 0.5) / days
    return x, weekly.to_numpy(float)


def make_gaps(n_points: int, kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Context and target indices ``[n_ctx]``, ``[n_tgt]`` into a series of ``n_points``: one
    window of :data:`WINDOW` weeks with its gaps of ``kind`` (module docstring)."""
    start = int(rng.integers(0, n_points - WINDOW + 1))
    hidden = np.zeros(WINDOW, bool)
    if kind == "scattered":
        hidden[rng.choice(WINDOW, int(HIDDEN * WINDOW), replace=False)] = True
        hidden[0] = hidden[-1] = False  # targets stay inside the context's range
    elif kind == "runs":
        # Run starts on a grid of non-overlapping slots, so the runs never touch.
        slots = np.arange(1, WINDOW - RUN_WEEKS, RUN_WEEKS + 1)
        for s in rng.choice(slots, N_RUNS, replace=False):
            hidden[s : s + RUN_WEEKS] = True
    else:
        raise ValueError(f"unknown gap kind {kind!r}; choose from {', '.join(KINDS)}")
    window = start + np.arange(WINDOW)
    return window[~hidden], window[hidden]


def score_window(models: list[ZeroShot], x, y, ctx, tgt) -> dict:
    """Every model and the fitted GP on one window: scores, the diagnosis (module docstring)
    and the what-if of a noise floor at the GP's noise std."""
    xc, yc, xt, yt = x[ctx], y[ctx], x[tgt], y[tgt]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GPyTorch's numerical notes, per start
        gp = fit_series_gp(xc, yc)
    noise = float(
        gp.units.std_to_user(gp.gp.likelihood.noise.detach().sqrt().numpy()[:, None])[0, 0]
    )
    row = {"n_ctx": len(ctx), "n_tgt": len(tgt), "gp_noise": noise, "ctx_std": float(yc.std())}
    row["scores"] = {}
    for model in models:
        start = time.perf_counter()
        mean, std = model.predict(xc, yc, xt)
        seconds = time.perf_counter() - start
        floored = score(yt, mean, np.maximum(std, noise))
        row["scores"][model.label] = {
            **score(yt, mean, std),
            "seconds": seconds,
            "std_gap": float(np.median(std)),
            "std_ctx": float(np.median(model.predict(xc, yc, xc)[1])),
            "floored_coverage95": floored["coverage95"],
            "floored_nll": floored["nll"],
        }
    start = time.perf_counter()
    mean, std = gp.predict(xt)
    seconds = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GPyTorch's note that these are its training inputs
        std_ctx = float(np.median(gp.predict(xc)[1]))
    row["scores"][GP] = {
        **score(yt, mean, std),
        "seconds": seconds,
        "std_gap": float(np.median(std)),
        "std_ctx": std_ctx,
        "nu": gp.nu,
    }
    return row


DIAGNOSIS = ("std_gap", "std_ctx", "floored_coverage95", "floored_nll")


def summarise_kind(rows: list[dict], labels: list[str]) -> dict:
    """``scoring.summarise`` of the windows, plus per label the medians over windows of the
    diagnosis, and the windows' median GP noise std and context std."""
    out = summarise(rows, labels)
    for label in labels:
        for key in DIAGNOSIS:
            values = [r["scores"][label][key] for r in rows if key in r["scores"][label]]
            if values:
                out[label][key] = float(np.median(values))
    out["gp_noise"] = float(np.median([r["gp_noise"] for r in rows]))
    out["ctx_std"] = float(np.median([r["ctx_std"] for r in rows]))
    return out


def zoo_1d() -> list[str]:
    """The zoo's current (not retired) 1D models."""
    return [n for n in tnpx.list_pretrained() if model_card(n).get("dim_x", 1) == 1]


def run_study(specs: list[str], windows: int, seed: int = 0) -> dict:
    """Score ``specs`` (zoo names or checkpoints) and the fitted GP on ``windows`` windows of
    each kind; the run as written to the JSON (without command, commit and hardware)."""
    x, y = load_weekly()
    models = [ZeroShot(spec) for spec in specs]
    labels = [m.label for m in models] + [GP]
    results = {}
    for k_index, kind in enumerate(KINDS):
        rows = []
        for i in range(windows):
            ctx, tgt = make_gaps(len(x), kind, np.random.default_rng([seed, k_index, i]))
            rows.append(score_window(models, x, y, ctx, tgt))
            print(f"{kind} window {i}: " + ", ".join(
                f"{lab} NLL {rows[-1]['scores'][lab]['nll']:.2f}" for lab in labels
            ), flush=True)  # fmt: skip
        results[kind] = {"windows": rows, "summary": summarise_kind(rows, labels)}
    return {"models": {m.label: m.spec for m in models}, "labels": labels, "results": results}


def main(argv: list[str] | None = None) -> dict:
    from experiments.zero_shot.co2_gaps_report import write_report

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=None, help="default: the zoo's 1D models")
    parser.add_argument("--windows", type=int, default=10, help="windows per kind of gap")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/pretrained/co2-gaps")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    provenance = Provenance()
    run = run_study(args.models or zoo_1d(), args.windows, args.seed)
    run = {
        **provenance.record(),
        "n_windows": args.windows,
        "source": SOURCE,
        **run,
    }
    print(write_report(run, Path(args.out)))
    return run


if __name__ == "__main__":
    main()
