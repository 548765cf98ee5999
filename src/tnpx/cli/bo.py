"""``tnpx bo suggest MODEL``: the next point to evaluate given your observations. (The KR-2
benchmark table is the lab's: ``python -m experiments.bo.benchmark CONFIG`` from a clone.)"""

from __future__ import annotations

import sys

from .arguments import add_model_argument, add_x_cols


def add_bo_parser(sub) -> None:
    p = sub.add_parser("bo", help="Bayesian optimisation: suggest the next points to evaluate")
    bo = p.add_subparsers(dest="bo_command", required=True)

    s = bo.add_parser(
        "suggest",
        help="the next point(s) to evaluate, to minimise a column of your observations",
        description="Reads OBSERVATIONS (CSV with a header row: input columns and one output "
        "column, by default the last), conditions MODEL on them and maximises a BoTorch "
        "acquisition over the box given by --bounds. Prints the suggested inputs as CSV.",
    )
    add_model_argument(s)
    s.add_argument("--observations", required=True, metavar="FILE")
    s.add_argument(
        "--bounds",
        nargs="+",
        type=float,
        required=True,
        metavar="V",
        help="LOW HIGH per input column, in order (e.g. --bounds 0 10 for one column)",
    )
    add_x_cols(s)
    s.add_argument("--y-col", metavar="COL", help="the output to minimise (default: last column)")
    s.add_argument("--acquisition", default="logei", help="BoTorch acquisition (logei)")
    s.add_argument("--q", type=int, default=1, help="points to suggest (q > 1: use qlogei)")
    s.add_argument("--maximise", action="store_true", help="maximise the output instead")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=_suggest)


def _suggest(args) -> int:
    import torch

    from ..bo.suggestion import suggest
    from ..user_files import read_table
    from ..user_table import numeric_rows

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
        Y,
        bounds,
        args.acquisition,
        args.q,
        seed=args.seed,
        maximise=args.maximise,
    )
    print(",".join(str(c) for c in x_cols))
    for row in points.tolist():
        print(",".join(f"{v:.6g}" for v in row))
    print(f"tnpx bo suggest: {len(points)} point(s) from {len(X)} observations", file=sys.stderr)
    return 0
