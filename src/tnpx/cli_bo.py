"""``tnpx bo run CONFIG`` (a BO benchmark table) and ``tnpx bo suggest MODEL`` (the next point
to evaluate given your observations)."""

from __future__ import annotations

import sys

from .extras import require


def add_bo_parser(sub) -> None:
    p = sub.add_parser("bo", help="Bayesian optimisation: benchmarks and suggestions")
    bo = p.add_subparsers(dest="bo_command", required=True)

    r = bo.add_parser(
        "run",
        help="run a BO benchmark config (e.g. configs/kr2-budget.yaml), resumable by cell",
        description="Runs every (kernel, surrogate) cell of the config that is not yet saved "
        "and writes OUT/README.md (final regret table, paper numbers beside), results.json and "
        "regret.png. Cells whose model checkpoint is missing are skipped.",
    )
    r.add_argument("config")
    r.add_argument("--models", nargs="+", metavar="LABEL", help="only these surrogates")
    r.add_argument("--kernels", nargs="+", metavar="KERNEL", help="only these kernels")
    r.add_argument("--out", help="output folder (default: the config's out_dir)")
    r.add_argument("--no-progress", action="store_true")
    r.set_defaults(func=_run)

    s = bo.add_parser(
        "suggest",
        help="the next point(s) to evaluate, to minimise a column of your observations",
        description="Reads OBSERVATIONS (CSV with a header row: input columns and one output "
        "column, by default the last), conditions MODEL on them and maximises a BoTorch "
        "acquisition over the box given by --bounds. Prints the suggested inputs as CSV.",
    )
    s.add_argument("model", metavar="MODEL", help="checkpoint path or pretrained model name")
    s.add_argument("--observations", required=True, metavar="FILE")
    s.add_argument(
        "--bounds",
        nargs="+",
        type=float,
        required=True,
        metavar="V",
        help="LOW HIGH per input column, in order (e.g. --bounds 0 10 for one column)",
    )
    s.add_argument("--x-cols", nargs="+", metavar="COL", help="input columns")
    s.add_argument("--y-col", metavar="COL", help="the output to minimise (default: last column)")
    s.add_argument("--acquisition", default="logei", help="BoTorch acquisition (logei)")
    s.add_argument("--q", type=int, default=1, help="points to suggest (q > 1: use qlogei)")
    s.add_argument("--maximise", action="store_true", help="maximise the output instead")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=_suggest)


def _run(args) -> int:
    from .experiments.bo_benchmark import load_benchmark
    from .experiments.bo_benchmark_run import run_benchmark

    require("matplotlib", "plot", "plotting")  # the regret plot: say so before running

    bench = load_benchmark(args.config, args.out)
    run_benchmark(bench, args.models, args.kernels, progress=not args.no_progress)
    print(f"wrote {bench.out_dir / 'README.md'}")
    return 0


def _suggest(args) -> int:
    import torch

    from .bo.suggestion import suggest
    from .tables import numeric_rows, read_table

    table = read_table(args.observations, "observations")
    columns = list(table.frame.columns)
    y_col = args.y_col or columns[-1]
    x_cols = args.x_cols or [c for c in columns if c != y_col]
    values = numeric_rows(table, [*x_cols, y_col])
    if len(args.bounds) != 2 * len(x_cols):
        raise ValueError(
            f"--bounds: expected LOW HIGH for each of the {len(x_cols)} input column(s) "
            f"{x_cols}, got {len(args.bounds)} number(s)"
        )
    bounds = torch.tensor(args.bounds, dtype=torch.float64).reshape(-1, 2).T
    X = torch.tensor(values[x_cols].to_numpy())
    Y = torch.tensor(values[[y_col]].to_numpy())
    points = suggest(
        args.model,
        X,
        -Y if args.maximise else Y,
        bounds,
        args.acquisition,
        args.q,
        seed=args.seed,
    )
    print(",".join(str(c) for c in x_cols))
    for row in points.tolist():
        print(",".join(f"{v:.6g}" for v in row))
    print(f"tnpx bo suggest: {len(points)} point(s) from {len(X)} observations", file=sys.stderr)
    return 0
