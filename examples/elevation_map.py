"""Worked example 4: a shipped 2D model maps a measured field from scattered points, zero-shot.

The field is the elevation and sea depth of Vancouver Island and the Strait of Georgia that
matplotlib ships (``topobathy.npz``, 91 x 120 cells of 2 arc-minutes, metres; read through
:func:`experiments.zero_shot.field_data.load_field`, in km east and north). A random
``--context`` of its cells are the "observations"; the model predicts every cell of the grid through
:func:`tnpx.predict` with two input columns, in the field's own units (no training, no
fitting), and ``tnpx.plot.map`` draws the field beside the predictive mean and std. The cells
not in the context are scored: RMSE (m), Gaussian NLL per point, and the share inside the
central 95 % interval.

    python examples/elevation_map.py                      # gp2d-te-tnp-rope, 300 points
    python examples/elevation_map.py --context 1000 --model long-runs/.../model.pt

The same from the command line, on CSV files (``--plot`` draws the map of two input columns):

    tnpx predict gp2d-te-tnp-rope --context ctx.csv --targets grid.csv --plot map.png

Writes ``results/examples/elevation-map/`` (``README.md``, ``map.png``, ``metrics.json``) unless
``--out`` says otherwise. ``experiments.zero_shot.fields`` scores the same models on many
windows of this field and another beside a GP fitted per window.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if not __package__:  # run as a file: the repository root, for `experiments.*`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pandas as pd
import torch

import tnpx
from experiments.zero_shot.field_data import load_field
from experiments.zero_shot.fitted_gp import fit_field_gp
from experiments.zero_shot.scoring import score
from tnpx.plot import plot_prediction_map
from tnpx.provenance import command_line, git_commit, hardware

ROOT = Path(__file__).resolve().parents[1]
X_COLS, Y_COL = ["east_km", "north_km"], "elevation_m"


def field_tables(context_size: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The field as a table of every cell (``east_km, north_km, elevation_m``), and a random
    ``context_size`` of its rows (seeded) as the context."""
    field = load_field("topobathy")
    table = pd.DataFrame({X_COLS[0]: field.x[:, 0], X_COLS[1]: field.x[:, 1], Y_COL: field.y})
    if not 3 <= context_size < len(table):
        raise ValueError(f"--context must be in [3, {len(table) - 1}], got {context_size}")
    rows = np.random.default_rng(seed).permutation(len(table))[:context_size]
    return table, table.iloc[np.sort(rows)].reset_index(drop=True)


def scores(y: np.ndarray, mean: np.ndarray, std: np.ndarray) -> dict:
    """RMSE (m), Gaussian NLL per point (nats, in metres), 95 % coverage and the share beyond
    5σ of observations ``y [n]`` under predictions ``mean``, ``std [n]``
    (:func:`experiments.zero_shot.scoring.score`, the real-data harnesses' scores)."""
    scored = score(y, mean, std)
    return {"n_points": len(y), "rmse_m": scored.pop("rmse"), **scored}


def run(model: str, context_size: int, seed: int, out: Path, domain: tuple | None = None) -> dict:
    """Predict the grid from the context, score, draw and write ``out``; the record written.
    ``domain``: the model's training input box when its checkpoint records none."""
    torch.set_num_threads(1)
    table, context = field_tables(context_size, seed)
    targets = table[X_COLS]
    start = time.perf_counter()
    pred = tnpx.predict(model, context, targets, domain=domain)
    seconds = time.perf_counter() - start
    held_out = ~pd.MultiIndex.from_frame(table[X_COLS]).isin(
        pd.MultiIndex.from_frame(context[X_COLS])
    )
    y = table[Y_COL].to_numpy()[held_out]
    means = (pred[f"{Y_COL}_{k}"].to_numpy()[held_out] for k in ("mean", "std"))
    # the baseline: a GP fitted to this context alone (experiments.zero_shot.fields's)
    start = time.perf_counter()
    gp = fit_field_gp(context[X_COLS].to_numpy(), context[Y_COL].to_numpy())
    gp_mean, gp_std = gp.predict(table[X_COLS].to_numpy()[held_out])
    gp_seconds = time.perf_counter() - start
    record = {
        "command": command_line(),
        "commit": git_commit(),
        "hardware": hardware(),
        "model": model,
        "context_size": context_size,
        "seed": seed,
        "grid_cells": len(table),
        "predict_seconds": seconds,
        "held_out": scores(y, *means),
        "fitted_gp": {**scores(y, gp_mean, gp_std), "seconds": gp_seconds, "nu": gp.nu},
    }
    out.mkdir(parents=True, exist_ok=True)
    plot_prediction_map(pred, out / "map.png", X_COLS, [Y_COL], context=context, truth=table)
    (out / "metrics.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "README.md").write_text(readme(record))
    return record


def readme(record: dict) -> str:
    s, gp = record["held_out"], record["fitted_gp"]
    row = "| {} | {rmse_m:.1f} | {nll:.3f} | {coverage95:.3f} | {beyond_5sd:.4f} | {:.2f} |"
    better = "lower" if s["nll"] < gp["nll"] else "higher"
    return "\n".join(
        [
            "# Worked example: a 2D map of a measured field from scattered points, zero-shot",
            "",
            "**What**: elevation and sea depth of Vancouver Island and the Strait of Georgia "
            "(matplotlib's `topobathy.npz`, metres, km east and north). "
            f"{record['context_size']} random cells (seed {record['seed']}) are the context; "
            f'`tnpx.predict("{record["model"]}", context, grid)` predicts all '
            f"{record['grid_cells']:,} cells in the field's units, without training or fitting. "
            "The cells outside the context are scored.",
            "",
            f"**Command**: `{record['command']}` at commit `{record['commit']}`.",
            "",
            f"**Hardware and time**: {record['hardware']}; one torch thread; the prediction of "
            f"the whole grid took {record['predict_seconds']:.2f} s (one call, so it includes "
            "loading the model); the GP's time is its fit (L-BFGS from four starts) and its "
            "prediction of the held-out cells.",
            "",
            f"The {s['n_points']:,} cells outside the context, in metres (no oracle exists for a "
            "measured field; the baseline is a GP fitted to the same context: a scaled ARD RBF "
            "plus a scaled ARD Matérn with Gaussian noise, "
            "`experiments.zero_shot.fitted_gp.fit_field_gp`):",
            "",
            "| predictor | RMSE (m) | NLL per point | 95 % coverage | beyond 5σ | seconds |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
            row.format(f"`{record['model']}`", record["predict_seconds"], **s),
            row.format(f"fitted GP (Matérn-{gp['nu']:g})", gp["seconds"], **gp),
            "",
            f"**Reading**: zero-shot, the model's NLL per point is {abs(s['nll'] - gp['nll']):.3f} "
            f"nats {better} than the fitted GP's, its RMSE {s['rmse_m']:.1f} m against "
            f"{gp['rmse_m']:.1f} m, and its 95 % interval covers {s['coverage95']:.1%} of the "
            f"cells (the GP's: {gp['coverage95']:.1%}), in "
            f"{gp['seconds'] / record['predict_seconds']:.0f}x less time.",
            "",
            "![the field, the predictive mean and std over the grid, the context marked](map.png)",
            "",
            "`map.png`: the field itself, then the predictive mean (on the field's colour scale) "
            "and standard deviation over the grid, the context points marked (drawn by "
            "`tnpx.plot.map`, as `tnpx predict --plot` draws them, with `truth=`). "
            "One context draw, so the scores carry no standard error; "
            "`results/pretrained/real-fields-2d.md` scores the shipped 2D models on many windows "
            "beside a GP fitted per window.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="gp2d-te-tnp-rope", help="a shipped name or a model.pt")
    p.add_argument("--context", type=int, default=300, help="random cells observed (300)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=ROOT / "results/examples/elevation-map")
    p.add_argument(
        "--domain",
        type=float,
        nargs=2,
        metavar=("LOW", "HIGH"),
        help="the model's training input box, for a checkpoint that records none",
    )
    args = p.parse_args(argv)
    domain = tuple(args.domain) if args.domain else None
    record = run(args.model, args.context, args.seed, args.out, domain)
    s = record["held_out"]
    print(
        f"{record['model']}: {s['n_points']:,} held-out cells, RMSE {s['rmse_m']:.1f} m, "
        f"NLL {s['nll']:.3f}, 95 % coverage {s['coverage95']:.3f} (fitted GP: RMSE "
        f"{record['fitted_gp']['rmse_m']:.1f} m, NLL {record['fitted_gp']['nll']:.3f}); wrote "
        f"{args.out}"
    )
    return record


if __name__ == "__main__":
    main()
