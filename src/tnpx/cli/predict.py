"""``tnpx predict``: predictions at your own targets given your own context (CSV in, CSV out)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .arguments import add_model_argument, add_x_cols


def _predict(args) -> int:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return _predict_and_write(args)
        finally:  # warnings as one line each, on stderr, also when the command fails
            for w in caught:
                print(f"tnpx predict: warning: {w.message}", file=sys.stderr)


def _predict_and_write(args) -> int:
    """Predict and write, the targets a chunk of ``--chunk-size`` rows at a time (read,
    predicted and written before the next is read), so memory does not grow with the number
    of targets; a model that cannot stream takes them all at once."""
    from ..apply.predict import Options, extrapolation_limits, resolve, stream_prediction
    from ..output_files import refuse_overwriting
    from ..zoo import checkpoint_file

    args.model = str(checkpoint_file(args.model))
    inputs = {"MODEL": args.model, "--context": args.context, "--targets": args.targets}
    refuse_overwriting({"--out": args.out, "--plot": args.plot}, inputs)
    if args.plot:  # before anything is predicted or written
        from ..extras import require

        require("matplotlib", "plot", "plotting")
    resolved = resolve(args.model)
    net, recorded, why = resolved[:3]
    if args.plot and net.dim_x not in (1, 2):
        raise ValueError(
            f"--plot needs one or two input columns (dim_x = 1 or 2); {args.model} takes "
            f"{net.dim_x}. Leave out --plot"
        )
    if args.plot_axes and (not args.plot or net.dim_x != 2):
        raise ValueError(
            "--plot-axes chooses the axes of --plot's map: it needs --plot and a model with "
            f"two input columns ({args.model} takes {net.dim_x})"
        )
    options = Options(
        args.x_cols, args.y_cols, not args.no_scale_inputs, not args.no_standardise,
        args.input_range, args.output_scale, args.domain, args.level, args.chunk_size,
        args.drop_missing, args.allow_extrapolation, extrapolation_limits(args.model),
        args.scaling, resolved.stored, resolved.units, resolved.trained, args.quantiles,
        resolved.exposure,
    )  # fmt: skip
    plan, blocks = stream_prediction(
        net, recorded, why, args.context, args.targets, options, rows=args.chunk_size
    )
    _print_scaling(plan.record)
    sample = PlotSample() if args.plot else None
    if args.out:
        n = _write_file(args.out, blocks, sample)
        print(f"wrote {args.out} ({n} rows)", file=sys.stderr)
    else:
        try:
            _write_blocks(blocks, sys.stdout, sample)
        except BrokenPipeError:  # e.g. `| head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # quiet exit
            return 0
    if sample is not None:
        x_shown = plan.shown[: len(plan.x_cols)]
        _plot_prediction(args, sample.frame(), x_shown, plan.y_cols, plan.options.units)
    return 0


def _write_file(path: str, blocks, sample: PlotSample | None) -> int:
    """Write the result blocks as one CSV file, complete or not at all; returns the rows."""
    from ..output_files import atomic_write

    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as tmp, open(tmp, "w", newline="") as stream:
            return _write_blocks(blocks, stream, sample)
    except OSError as err:
        raise ValueError(f"{path}: cannot write the predictions ({err})") from None


def _write_blocks(blocks, stream, sample: PlotSample | None) -> int:
    """CSV rows of each result block to ``stream`` (the header once); returns the rows."""
    n = 0
    for i, frame in enumerate(blocks):
        frame.to_csv(stream, header=i == 0, index=False)
        n += len(frame)
        if sample is not None:
            sample.add(frame)
    return n


class PlotSample:
    """Every ``step``-th row of a result that arrives in blocks, ``step`` doubling so that at
    most ``2 * limit`` rows are kept: what ``--plot`` draws (it thins to ``limit`` anyway)."""

    def __init__(self, limit: int = 20000):
        self.limit, self.step, self.n = limit, 1, 0
        self.parts: list = []  # (rows kept, their positions in the whole result)

    def add(self, frame) -> None:
        import numpy as np

        positions = np.arange(self.n, self.n + len(frame))
        self.n += len(frame)
        self.parts.append(self._every_step(frame, positions))
        while sum(len(p) for _, p in self.parts) > 2 * self.limit:
            self.step *= 2
            self.parts = [self._every_step(f, p) for f, p in self.parts]

    def _every_step(self, frame, positions) -> tuple:
        keep = positions % self.step == 0
        return frame[keep], positions[keep]

    def frame(self):
        import pandas as pd

        return pd.concat([f for f, _ in self.parts])


def _print_scaling(record: dict) -> None:
    """One line on stderr saying how the data were rescaled (stdout may carry the CSV)."""
    parts = []
    if record.get("scaling") == "stored":
        parts.append("the model's stored normalisation (fitted on its training tasks)")
    if record["input_ranges"]:
        lo, hi = record["domain"][0]
        ranges = ", ".join(
            f"{c} [{a:.4g}, {b:.4g}]" for c, (a, b) in record["input_ranges"].items()
        )
        parts.append(f"inputs {ranges} -> [{lo:.4g}, {hi:.4g}]")
    if record["output_mean_std"]:
        stats = ", ".join(
            f"{c} (mean {m:.4g}, std {s:.4g})" for c, (m, s) in record["output_mean_std"].items()
        )
        if record.get("output_family"):  # counts, 0/1, rain: (value - loc) / scale by its rule
            maps = record["output_mean_std"].items()
            stats = ", ".join(f"{c} (loc {m:.4g}, scale {s:.4g})" for c, (m, s) in maps)
            parts.append(f"outputs mapped by the {record['output_family']} family's rule: {stats}")
        elif record.get("scaling") != "stored":
            parts.append(f"outputs standardised by {stats}")
    print(f"tnpx predict: {'; '.join(parts) or 'no rescaling'}", file=sys.stderr)


def _plot_prediction(args, result, x_cols: list, y_cols: list, units: dict | None) -> None:
    """The PNG of ``--plot``, written whole or not at all: curves against one input column, a
    map of the mean and std over two (:mod:`tnpx.plot.map`), its axes ``--plot-axes`` or by
    :func:`~tnpx.plot.map.map_axes`'s convention; the context's dates in the model's unit
    (``units``), as the result has them."""
    from ..apply.coordinate_units import in_model_units
    from ..output_files import atomic_write
    from ..plot import plot_prediction
    from ..plot.map import map_axes, plot_prediction_map
    from ..user_files import read_table

    context = in_model_units(read_table(args.context, "context"), units, x_cols).frame
    if len(x_cols) == 2:
        x_cols = _plot_axes(args.plot_axes, x_cols) if args.plot_axes else list(map_axes(x_cols))
    try:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(args.plot) as tmp:
            if len(x_cols) == 2:
                plot_prediction_map(result, tmp, x_cols, y_cols, context=context)
            else:
                plot_prediction(result, tmp, x_cols[0], y_cols, context=context, level=args.level)
    except OSError as err:
        raise ValueError(f"{args.plot}: cannot write the plot ({err})") from None
    print(f"wrote {args.plot}", file=sys.stderr)


def _plot_axes(chosen: list, x_cols: list) -> list:
    """``--plot-axes ACROSS UP``, checked to be the two input columns."""
    for col in chosen:
        if col not in x_cols:
            raise ValueError(f"--plot-axes: {col!r} is not an input column; they are {x_cols}")
    if chosen[0] == chosen[1]:
        raise ValueError(f"--plot-axes names {chosen[0]!r} twice; name both input columns")
    return list(chosen)


def add_predict(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="predict at your own target inputs given your own context data",
        description="Predict the outputs at TARGETS given CONTEXT (CSV files with a header row) "
        "with the model in checkpoint MODEL. A model trained on your data (tnpx train) knows "
        "its columns: yours are matched to them by name, in any order (a column it does not "
        "know is refused), and mapped with the normalisation it stores (fitted on its training "
        "tasks); a time input it stores in hours since 1970-01-01 also takes dates "
        "(2010-05-01 12:00). Any other model (a pretrained one) takes every column of TARGETS "
        "as an input and every other column of CONTEXT as an output, in the order given; its "
        "inputs are mapped per column from the context's range onto the model's training "
        "domain and its outputs standardised by the context's mean and std. Predictions are "
        "mapped back to your units. Writes the target inputs and, per output Y, Y_mean, Y_std, "
        "Y_lower, Y_upper (CSV, to stdout without --out), in your columns' order; with "
        "--quantiles, Y_q0.1 ... too, and for a model of a family with a point mass at zero "
        "Y_p_dry (bernoulli-gamma) or Y_p_zero (counts). The interval of a non-Gaussian model "
        "lies between its family's quantiles (no negative rain).",
    )
    add_model_argument(p)
    p.add_argument("--context", required=True, metavar="FILE", help="observed points (CSV)")
    p.add_argument("--targets", required=True, metavar="FILE", help="inputs to predict at (CSV)")
    p.add_argument("--out", metavar="FILE", help="CSV output (default: stdout)")
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="PNG of the predictions: curves (one input column) or a map (two: a "
        "longitude-like column across and a latitude-like one up, else the first across)",
    )
    p.add_argument(
        "--plot-axes",
        nargs=2,
        metavar=("ACROSS", "UP"),
        help="the input columns across and up in --plot's map (default: as --plot says)",
    )
    add_x_cols(p)
    p.add_argument("--y-cols", nargs="+", metavar="COL", help="output columns")
    p.add_argument("--level", type=float, default=0.95, help="interval probability (0.95)")
    p.add_argument(
        "--quantiles",
        nargs="+",
        type=float,
        metavar="P",
        help="add a column Y_qP per output for each probability P in (0, 1) "
        "(e.g. --quantiles 0.1 0.5 0.9)",
    )
    p.add_argument(
        "--no-scale-inputs", action="store_true", help="give the model the inputs unchanged"
    )
    p.add_argument(
        "--no-standardise", action="store_true", help="give the model the outputs unchanged"
    )
    p.add_argument(
        "--domain",
        nargs=2,
        type=float,
        metavar=("LOW", "HIGH"),
        help="the model's training input domain (default: from the checkpoint, else -2 2)",
    )
    p.add_argument(
        "--input-range",
        nargs=2,
        type=float,
        metavar=("LOW", "HIGH"),
        help="input range (your units) to map onto the domain (default: the context's)",
    )
    p.add_argument(
        "--output-scale",
        nargs=2,
        type=float,
        metavar=("MEAN", "STD"),
        help="standardise outputs by these (default: the context's mean and std)",
    )
    p.add_argument(
        "--drop-missing", action="store_true", help="drop rows with missing values (warns)"
    )
    p.add_argument(
        "--scaling",
        choices=["auto", "stored", "context"],
        default="auto",
        help="auto: a model trained on your data maps with its stored normalisation, others "
        "with maps fitted to the context; context / stored: that one always",
    )
    p.add_argument(
        "--allow-extrapolation",
        action="store_true",
        help="predict beyond the model's hard limit too (a zoo model's card; for a model "
        "trained on your data, context or targets far outside its training range); they warn",
    )
    p.add_argument(
        "--chunk-size",
        type=int,
        default=16384,
        help="target rows read, predicted and written per chunk (memory is bounded by it)",
    )
    p.set_defaults(func=_predict)
