"""Ten classic 1D test functions, on which the zoo's goals measure a zoo model against a fitted
GP: each function observed noise-free at 20 points, predicted on a grid across its domain.

The zoo's goal: "on smooth noise-free functions with 20 points, relative RMSE within
3x of a fitted GP". The functions are public benchmark formulas (the Virtual Library of
Simulation Experiments' 1D functions and Gavana's global-optimisation problems), written here
from their definitions in :data:`FUNCTIONS`. A function counts as *smooth* if it is analytic
on its closed domain and varies over at most about two periods of oscillation across it, so
that 20 points resolve it; the rule is applied by hand once, in the table, before any model
is scored (``smooth`` column).

Per function and draw: 20 context inputs, one uniform draw in each of 20 equal bins of the
domain (a Latin-hypercube design: spread, but not a grid), their noise-free values, and 200
targets on an even grid over the whole domain (so the edges, beyond the outermost points, are
scored too). Each model predicts through :func:`tnpx.predict` (raw units in and out); the GP is
``experiments/zero_shot/fields.py``'s field GP on one input (scaled RBF + scaled Matérn-1/2
or -3/2, noise >= 1e-6 in standardised units, L-BFGS on the exact marginal likelihood from four
starts). Scores: relative RMSE (the RMSE of the mean over the function's std on the grid),
NLL per target point, 95 % coverage, seconds per prediction (a model: the median of repeated
``tnpx.predict`` calls; the GP: its fit and prediction).

    python -m experiments.zero_shot.functions                  # the composite-prior models
    python -m experiments.zero_shot.functions --models gp1d-v2-tnp long-runs/gp1d-v3-tnp/model.pt

Writes ``results/pretrained/test-functions.md`` (+ ``.json``, ``.png``) unless ``--out`` says
otherwise.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from experiments.kit import mean_se
from experiments.zero_shot.fitted_gp import fit_field_gp
from experiments.zero_shot.functions_report import plot_functions, write_report
from experiments.zero_shot.scoring import load_models, save_run, score_context, summarise
from tnpx.provenance import command_line, git_commit, hardware


@dataclass(frozen=True)
class BenchmarkFunction:
    """A 1D test function ``f`` on ``domain``, and whether the goal's 'smooth' covers it."""

    name: str
    f: Callable[[np.ndarray], np.ndarray]
    domain: tuple[float, float]
    smooth: bool
    formula: str  # as the report prints it
    source: str


FUNCTIONS = {
    t.name: t
    for t in (
        BenchmarkFunction(
            "forrester",
            lambda x: (6 * x - 2) ** 2 * np.sin(12 * x - 4),
            (0.0, 1.0),
            True,
            "(6x - 2)² sin(12x - 4)",
            "Forrester et al. (2008)",
        ),
        BenchmarkFunction(
            "damped-cosine",
            lambda x: np.exp(-1.4 * x) * np.cos(3.5 * np.pi * x),
            (0.0, 1.0),
            True,
            "exp(-1.4x) cos(3.5πx)",
            "Santner et al. (2003)",
        ),
        BenchmarkFunction(
            "x-sin-x",
            lambda x: x * np.sin(x),
            (0.0, 10.0),
            True,
            "x sin(x)",
            "a common GP tutorial function",
        ),
        BenchmarkFunction(
            "gavana-04",
            lambda x: -(16 * x**2 - 24 * x + 5) * np.exp(-x),
            (1.9, 3.9),
            True,
            "-(16x² - 24x + 5) exp(-x)",
            "Gavana, problem 04",
        ),
        BenchmarkFunction(
            "gavana-11",
            lambda x: 2 * np.cos(x) + np.cos(2 * x),
            (-math.pi / 2, 2 * math.pi),
            True,
            "2 cos(x) + cos(2x)",
            "Gavana, problem 11",
        ),
        BenchmarkFunction(
            "gavana-02",
            lambda x: np.sin(x) + np.sin(10 * x / 3),
            (2.7, 7.5),
            False,  # sin(10x/3) runs 2.5 periods across the domain
            "sin(x) + sin(10x/3)",
            "Gavana, problem 02",
        ),
        BenchmarkFunction(
            "gavana-07",
            lambda x: np.sin(x) + np.sin(10 * x / 3) + np.log(x) - 0.84 * x + 3,
            (2.7, 7.5),
            False,  # as gavana-02, plus a trend
            "sin(x) + sin(10x/3) + ln(x) - 0.84x + 3",
            "Gavana, problem 07",
        ),
        BenchmarkFunction(
            "gavana-05",
            lambda x: -(1.4 - 3 * x) * np.sin(18 * x),
            (0.0, 1.2),
            False,  # sin(18x): 3.4 periods
            "-(1.4 - 3x) sin(18x)",
            "Gavana, problem 05",
        ),
        BenchmarkFunction(
            "gramacy-lee",
            lambda x: np.sin(10 * np.pi * x) / (2 * x) + (x - 1) ** 4,
            (0.5, 2.5),
            False,  # sin(10πx): 10 periods
            "sin(10πx) / (2x) + (x - 1)⁴",
            "Gramacy & Lee (2012)",
        ),
        BenchmarkFunction(
            "gavana-13",
            lambda x: -(x ** (2 / 3)) - np.cbrt(1 - x**2),
            (0.001, 0.99),
            False,  # its derivative grows without bound towards x = 1
            "-x^(2/3) - (1 - x²)^(1/3)",
            "Gavana, problem 13",
        ),
    )
}
N_CONTEXT = 20
N_TARGETS = 200


def design(fn: BenchmarkFunction, rng: np.random.Generator, n_ctx: int = N_CONTEXT):
    """One draw: context inputs ``[n_ctx]`` (one uniform point in each of ``n_ctx`` equal
    bins, in order), their values, and the target grid ``[N_TARGETS]`` with its values."""
    low, high = fn.domain
    xc = low + (high - low) * (np.arange(n_ctx) + rng.uniform(size=n_ctx)) / n_ctx
    xt = np.linspace(low, high, N_TARGETS)
    return xc, fn.f(xc), xt, fn.f(xt)


def fit_gp_1d(xc: np.ndarray, yc: np.ndarray):
    """The fitted GP of the benchmark: the field GP (RBF + Matérn) on one input column."""
    return fit_field_gp(xc[:, None], yc)


def score_draw(fn: BenchmarkFunction, models: list, rng: np.random.Generator, repeats: int) -> dict:
    """Every model and the fitted GP on one draw of ``fn``: :func:`score_context`'s row, each
    label's scores gaining ``rel_rmse`` (RMSE over the function's std on the grid)."""
    xc, yc, xt, yt = design(fn, rng)
    row = score_context(models, xc, yc, xt, yt, fit_gp_1d, repeats)
    scale = float(np.std(yt))
    for cell in row["scores"].values():
        cell["rel_rmse"] = cell["rmse"] / scale
    row["draw"] = {"xc": xc.tolist(), "yc": yc.tolist()}
    return row


def summarise_function(rows: list[dict], labels: list[str]) -> dict:
    """Per label, over the draws: :func:`summarise`'s RMSE, NLL, seconds and pooled coverage,
    and the relative RMSE (mean ± s.e.)."""
    out = summarise(rows, labels)
    for label in labels:
        out[label]["rel_rmse"] = mean_se([r["scores"][label]["rel_rmse"] for r in rows])
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gp1d-v2-tnp", "gp1d-v2-te-tnp-rope"])
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=FUNCTIONS)
    parser.add_argument("--draws", type=int, default=10, help="context designs per function")
    parser.add_argument("--repeats", type=int, default=5, help="timed predictions (median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/pretrained")
    parser.add_argument("--name", default="test-functions", help="file name stem under --out")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    models, labels = load_models(args.models)
    started = time.perf_counter()
    results, examples = {}, {}
    for f_index, name in enumerate(args.functions):
        fn, rows = FUNCTIONS[name], []
        for draw in tqdm(range(args.draws), desc=name, leave=False):
            rng = np.random.default_rng([args.seed, f_index, draw])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # GPyTorch's numerical notes, per start
                rows.append(score_draw(fn, models, rng, args.repeats))
            fitted = rows[-1].pop("gp")
            if draw == 0:
                examples[name] = (fn, rows[-1]["draw"], fitted)
        summary = summarise_function(rows, labels)
        results[name] = {"draws": rows, "summary": summary}
        print(f"{name}: " + ", ".join(
            f"{lab} rel. RMSE {summary[lab]['rel_rmse'][0]:.3f}" for lab in labels
        ), flush=True)  # fmt: skip
    run = {
        "command": command_line(),
        "commit": git_commit(),
        "hardware": hardware(),
        "wall_s": time.perf_counter() - started,
        "models": {m.label: m.spec for m in models},
        "n_draws": args.draws,
        "n_context": N_CONTEXT,
        "n_targets": N_TARGETS,
        "functions": {n: _describe(FUNCTIONS[n]) for n in args.functions},
        "results": results,
    }
    figure = lambda path: plot_functions(examples, models, path)  # noqa: E731
    save_run(run, labels, Path(args.out) / args.name, figure, write_report)
    return run


def _describe(fn: BenchmarkFunction) -> dict:
    return {
        "formula": fn.formula,
        "domain": list(fn.domain),
        "smooth": fn.smooth,
        "source": fn.source,
    }


if __name__ == "__main__":
    main()
