"""Pretrained 2D models zero-shot on measured fields, against a GP fitted per window.

For each field of :mod:`experiments.zero_shot.field_data` (elevation grids that ship inside
matplotlib) and several random square windows (a side of a third of the field's shorter side, at a
seeded random place), the window's grid points are subsampled: a random ``--targets`` of them are
the targets, and the next ``N`` of the same random order the context, for each ``N`` of
``--context-sizes`` (the contexts are nested and the targets the same for every ``N``, so the sizes
compare on the same points). Then:

- each model predicts through :func:`tnpx.predict` with two input columns (km east and north)
  and the output in metres: raw units in and out, each input column's context range mapped onto
  the model's training domain (read from its checkpoint) and the outputs standardised by the
  context, as for any user's table;
- a GPyTorch exact GP is fitted to the same context
  (:func:`experiments.zero_shot.fitted_gp.fit_field_gp`): a scaled ARD RBF plus a scaled ARD
  Matérn-nu (nu in {1/2, 3/2}) with Gaussian noise, zero mean, inputs mapped per column onto
  [0, 1] and outputs standardised; L-BFGS from four starts (each nu, with a short and a longer
  rough lengthscale), the highest marginal likelihood kept
  (:func:`experiments.zero_shot.fitted_gp.best_of_starts`, shared with the per-series GP).

Scores per window, in the field's units: RMSE of the predictive mean (m), Gaussian NLL of the
observations per target point (lower is better), the shares of targets inside the central 95 %
interval and beyond 5 predicted standard deviations; wall time per prediction (a model: the
median of repeated ``tnpx.predict`` calls; the GP: its fit plus prediction, once), one torch
thread. Mean ± standard error over the windows.

    python -m experiments.zero_shot.fields --models gp2d-te-tnp-rope
    python -m experiments.zero_shot.fields --models long-runs/gp2d-te-tnp-rope/model.pt

Writes ``results/pretrained/real-fields-2d.md`` (+ ``.json``, + ``.png``: one window's context,
truth, each model's mean and the GP's) unless ``--out`` / ``--name`` say otherwise.
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import tnpx
from experiments.zero_shot.field_data import FIELDS, RealField, load_field
from experiments.zero_shot.fields_report import plot_window, run_header, write_report
from experiments.zero_shot.fitted_gp import fit_field_gp
from experiments.zero_shot.scoring import ZeroShot, load_models, save_run, score_context, summarise

WINDOW_FRACTION = 1 / 3  # a window's side, of the field's shorter side
CONTEXT_SIZES = (30, 100, 300)
N_TARGETS = 256
NP_REPEATS = 5  # timed tnpx.predict calls per window and context size (median)
X_COLS = ["east_km", "north_km"]


@dataclass
class Window:
    """A square window of a field's grid: its rows and columns (indices into the grid) and a
    random order of its points (indices into ``field.x``): targets first, then contexts."""

    rows: np.ndarray
    cols: np.ndarray
    order: np.ndarray

    def targets(self, n_targets: int) -> np.ndarray:
        return self.order[:n_targets]

    def context(self, n_targets: int, n_ctx: int) -> np.ndarray:
        return self.order[n_targets : n_targets + n_ctx]

    def grid(self, n_cols: int, max_side: int = 80) -> tuple[np.ndarray, tuple[int, int]]:
        """Indices of the window's points thinned to at most ``max_side`` per side, in grid
        order (for a map), and the thinned grid's shape."""
        step = max(1, -(-max(len(self.rows), len(self.cols)) // max_side))
        rows, cols = self.rows[::step], self.cols[::step]
        return (rows[:, None] * n_cols + cols[None, :]).ravel(), (len(rows), len(cols))


def make_window(field: RealField, rng: np.random.Generator, n_points: int) -> Window:
    """A random square window of ``field`` (side: :data:`WINDOW_FRACTION` of the field's
    shorter side) holding at least ``n_points`` grid points."""
    rows, cols = field.grid_shape
    grid = field.x.reshape(rows, cols, 2)
    east, north = grid[0, :, 0], grid[:, 0, 1]
    side = WINDOW_FRACTION * min(east[-1], north[-1])
    e0, n0 = rng.uniform(0, east[-1] - side), rng.uniform(0, north[-1] - side)
    in_cols = np.flatnonzero((east >= e0) & (east <= e0 + side))
    in_rows = np.flatnonzero((north >= n0) & (north <= n0 + side))
    inside = (in_rows[:, None] * cols + in_cols[None, :]).ravel()
    if len(inside) < n_points:
        raise ValueError(
            f"{field.name}: a window holds {len(inside)} grid points, fewer than the "
            f"{n_points} asked for (targets + largest context); ask for fewer"
        )
    return Window(in_rows, in_cols, rng.permutation(inside))


class FieldModel(ZeroShot):
    """A pretrained 2D model (zoo name or checkpoint path) predicting through ``tnpx.predict``."""

    def __init__(self, spec: str):
        super().__init__(spec)
        if self.net.dim_x != 2:
            raise SystemExit(f"{spec} takes {self.net.dim_x} input(s); fields need a 2D model")

    def predict(self, xc, yc, xt) -> tuple[np.ndarray, np.ndarray]:
        """Mean and std ``[n_tgt]`` in the field's units; ``xc [n, 2]``, ``xt [n_tgt, 2]``."""
        context = pd.DataFrame(xc, columns=X_COLS).assign(y=yc)
        out = tnpx.predict(self.net, context, pd.DataFrame(xt, columns=X_COLS), domain=self.domain)
        return out["y_mean"].to_numpy(), out["y_std"].to_numpy()


def run_window(field: RealField, ctx: np.ndarray, tgt: np.ndarray, models: list) -> dict:
    """Every model and the fitted GP on one context and its targets (indices into the field):
    scores and seconds per prediction."""
    xc, yc, xt, yt = field.x[ctx], field.y[ctx], field.x[tgt], field.y[tgt]
    return score_context(models, xc, yc, xt, yt, fit_field_gp, NP_REPEATS)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gp2d-te-tnp-rope"])
    parser.add_argument("--fields", nargs="+", default=list(FIELDS), choices=FIELDS)
    parser.add_argument("--windows", type=int, default=16, help="random windows per field")
    parser.add_argument("--context-sizes", nargs="+", type=int, default=list(CONTEXT_SIZES))
    parser.add_argument("--targets", type=int, default=N_TARGETS, help="targets per window")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/pretrained")
    parser.add_argument("--name", default="real-fields-2d", help="file name stem under --out")
    args = parser.parse_args(argv)
    if args.windows < 1 or args.targets < 1 or min(args.context_sizes) < 1:
        parser.error("--windows, --targets and every --context-sizes must be at least 1")
    torch.set_num_threads(1)
    models, labels = load_models(args.models, FieldModel)
    sizes = sorted(set(args.context_sizes))
    header, started = run_header(), time.perf_counter()
    results, example = {}, None
    for f_index, name in enumerate(args.fields):
        field = load_field(name)
        rows = {n: [] for n in sizes}
        for i in range(args.windows):
            window = make_window(
                field, np.random.default_rng([args.seed, f_index, i]), args.targets + sizes[-1]
            )
            tgt = window.targets(args.targets)
            for n in sizes:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # GPyTorch's numerical notes, per start
                    ctx = window.context(args.targets, n)
                    row = run_window(field, ctx, tgt, models)
                if example is None and n == sizes[len(sizes) // 2]:
                    example = (field, window, ctx, row["gp"])
                row.pop("gp")
                rows[n].append(row)
                print(f"{name} window {i} N={n}: " + ", ".join(
                    f"{lab} NLL {row['scores'][lab]['nll']:.3f}" for lab in labels
                ), flush=True)  # fmt: skip
        for n in sizes:
            results[f"{name}/{n}"] = {"windows": rows[n], "summary": summarise(rows[n], labels)}
    run = {
        **header,
        "wall_s": time.perf_counter() - started,
        "models": {m.label: m.spec for m in models},
        "n_windows": args.windows,
        "n_targets": args.targets,
        "context_sizes": sizes,
        "fields": {n: _describe(load_field(n)) for n in args.fields},
        "results": results,
    }
    figure = lambda path: plot_window(example, models, path)  # noqa: E731
    save_run(run, labels, Path(args.out) / args.name, figure, write_report)
    return run


def _describe(field: RealField) -> dict:
    rows, cols = field.grid_shape
    extent = field.x.max(0)
    return {
        "grid": f"{rows} x {cols}",
        "extent_km": [round(float(e), 2) for e in extent],
        "window_km": round(float(WINDOW_FRACTION * extent.min()), 2),
        "y_units": field.y_units,
        "y_range": [float(field.y.min()), float(field.y.max())],
        "description": field.description,
        "source": field.source,
    }


if __name__ == "__main__":
    main()
