"""Model × column tables of the papers: one training run per cell, scored on a fixed test set.

KR-1 and KR-3 (TNP-KR Tables 3 and 5): NLL per target point on 1D GP tasks (RBF, periodic,
Matérn-3/2) and 2D RBF GP tasks, with the GP oracle. KR-4 (TNP-KR Tables 6–8): NLL of image
completion on MNIST, CelebA and CIFAR-10. TE-2 (TE Table 1): LL of translated image
completion (T-MNIST, T-CIFAR-10). TE-3 (TE Table 2): LL on Kolmogorov flow. TE-4 (TE Table 3):
LL of surface temperature, each model trained once and tested on its training region and two
held-out ones (columns that share one training run, with a table of the change per region).

A table (:class:`TableSpec`, in ``paper_tables/table_spec.py``) has columns (a kernel or a data set,
each with its own config file) and rows (a label such as ``pt-tnp-m64`` naming a registered
model and the options that make it that row, plus its sizes at the CPU budget). Each cell
(table, column, row) trains the row's model from the column's config (resuming an interrupted
run, reusing a finished one; fitted-per-task GPs and the GP oracle are evaluated, never
trained), scores it on the config's fixed test set, and is cached as JSON under
``<out>/<table>/cells/``: a stopped table keeps its finished cells and a re-run skips them. A
cell whose data files are missing is skipped with the command or the files that would provide
them. After every cell the table's ``README.md``, ``results.json`` and ``<metric>_vs_paper.png``
are rewritten; cells not run yet show as "—". ``--figures`` also draws, for each image column
(KR-4, TE-2), every row's predictive mean on the same test tasks (``completions-<column>.png``,
linked from the README), from the runs behind the cells.

    python -m experiments.paper_tables.build                     # KR-1 and KR-3, budget configs
    python -m experiments.paper_tables.build --tables kr1 --models cnp tnp-d --kernels rbf
    python -m experiments.paper_tables.build --tables kr4 te2 te3 te4    # the real-data tables
    python -m experiments.paper_tables.build --tables kr4 te2 --figures  # and their figures
    python -m experiments.paper_tables.build --tables kr1 --restore-runs # retrain runs/ behind

The tables live in ``paper_tables/``: ``table_spec`` (what a table is), ``kr_specs`` and
``te_specs`` (each paper's tables), ``specs`` (the registry), ``cells`` (running and caching
one cell), ``staleness`` (refusing cells and runs of other settings), ``ordering`` (our
ordering against the paper's), ``report`` and ``markdown`` (the results files and their
tables) and ``figures`` (the completion figures); this file is the command line.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from experiments.paper_tables.cells import (  # noqa: F401 (re-exported for tests and notebooks)
    Cell,
    cell_config,
    cell_line,
    cell_path,
    load_cells,
    missing_data,
    restore_run,
    run_cell,
)
from experiments.paper_tables.figures import draw_completions
from experiments.paper_tables.markdown import model_label  # noqa: F401
from experiments.paper_tables.ordering import ordering, ranks, spearman  # noqa: F401
from experiments.paper_tables.report import report, write_outputs  # noqa: F401
from experiments.paper_tables.specs import (  # noqa: F401
    DEFAULT_TABLES,
    FROM_CONFIG,
    KERNEL_LABELS,
    ORACLE,
    REFERENCE,
    TABLES,
    Row,
    TableSpec,
)
from experiments.paper_tables.staleness import (  # noqa: F401 (re-exported for tests)
    model_stale_reason,
    preset_options,
    run_stale_reason,
    settings,
    stale_reason,
)
from tnpx.provenance import command_line, git_commit, hardware


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=list(TABLES),
        default=list(DEFAULT_TABLES),
        help=f"default: {' '.join(DEFAULT_TABLES)}",
    )
    parser.add_argument("--models", nargs="+", help="a subset of the tables' rows (labels)")
    parser.add_argument(
        "--columns",
        "--kernels",
        nargs="+",
        dest="kernels",
        metavar="COLUMN",
        help="a subset of the tables' columns (kernels or data sets)",
    )
    parser.add_argument("--exact", action="store_true", help="exact-protocol configs")
    parser.add_argument("--steps", type=int, help="override train.steps (smoke tests)")
    parser.add_argument("--eval-batches", type=int, help="override eval.n_batches (smoke tests)")
    parser.add_argument(
        "--out", help="tables go to OUT/<table>/ (default results, or results/exact)"
    )
    parser.add_argument(
        "--runs", help="runs go to RUNS/<table>-<column>/<model> (default runs/kr-<protocol>)"
    )
    parser.add_argument(
        "--figures",
        action="store_true",
        help="also draw each image column's completions by every row whose cell and run exist",
    )
    parser.add_argument(
        "--restore-runs",
        action="store_true",
        help="retrain the missing runs (model.pt) behind cached cells and compare their scores "
        "with the cells, which are left as they are (e.g. KR-2's surrogates on a fresh machine)",
    )
    parser.add_argument("overrides", nargs="*", help="config overrides for every cell")
    args = parser.parse_args(argv)
    known = {m for t in args.tables for m in TABLES[t].models}
    unknown = sorted(set(args.models or []) - known)
    if unknown:
        parser.error(f"--models {unknown} are in none of the tables {args.tables}: {sorted(known)}")
    columns = {k for t in args.tables for k in TABLES[t].kernels}
    unknown = sorted(set(args.kernels or []) - columns)
    if unknown:
        parser.error(
            f"--columns {unknown} are in none of the tables {args.tables}: {sorted(columns)}"
        )
    return args


def extra_overrides(args: argparse.Namespace) -> list[str]:
    steps = [f"train.steps={args.steps}"] if args.steps is not None else []
    batches = [f"eval.n_batches={args.eval_batches}"] if args.eval_batches is not None else []
    return [*steps, *batches, *args.overrides]


def planned_cells(spec: TableSpec, args: argparse.Namespace, runs: Path):
    """(column, row label, config) of every cell this command asks for, in table order."""
    kernels = [k for k in spec.kernels if args.kernels is None or k in args.kernels]
    models = [m for m in spec.models if args.models is None or m in args.models]
    extra = extra_overrides(args)
    return [
        (kernel, model, cell_config(spec, kernel, model, args.exact, runs, extra))
        for kernel, model in itertools.product(kernels, models)
    ]


def stale_cells(plans: dict, args: argparse.Namespace, out: Path, runs: Path) -> list[str]:
    """Why cached cells or runs would mix other settings into the tables: a planned cell or
    its run made with other settings, or any other cached cell of a requested table (its
    README shows them all) whose model is not its row's (e.g. trained before the presets)."""
    reasons = []
    for name, plan in plans.items():
        planned = {(kernel, label) for kernel, label, _ in plan}
        for kernel, label, cfg in plan:
            if reason := stale_reason(cfg, cell_path(out, name, kernel, label)):
                reasons.append(reason)
        spec = TABLES[name]
        for kernel, label in itertools.product(spec.kernels, spec.models):
            path = cell_path(out, name, kernel, label)
            if (kernel, label) in planned or not path.exists():
                continue
            cfg = cell_config(spec, kernel, label, args.exact, runs, extra_overrides(args))
            if reason := model_stale_reason(cfg, path):
                reasons.append(reason)
    return reasons


def restore_runs(plans: dict, out: Path) -> None:
    """Retrain every planned cell's missing run; say how each compares with its cached cell."""
    lines = [
        line
        for name, plan in plans.items()
        for kernel, label, cfg in plan
        if (line := restore_run(TABLES[name], kernel, cfg, out, label))
    ]
    print(f"restored {len(lines)} runs" if lines else "no run behind a cached cell is missing")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run = {
        "command": command_line(),
        "commit": git_commit(),  # the code that trains and scores, recorded before any work
        "hardware": hardware(),
        "exact": args.exact,
        "protocol": "exact" if args.exact else "budget",
    }
    # Budget and exact cells never share a folder, so a table is one protocol.
    out = Path(args.out or ("results/exact" if args.exact else "results"))
    runs = Path(args.runs or f"runs/kr-{run['protocol']}")
    plans = {name: planned_cells(TABLES[name], args, runs) for name in args.tables}
    # Refuse before any work, rather than mix cells or runs made with other settings.
    stale = stale_cells(plans, args, out, runs)
    if stale:
        raise SystemExit(
            f"{len(stale)} cached cells or runs do not belong to the current tables (each "
            "line names one); delete them or pass another --out / --runs:\n" + "\n".join(stale)
        )
    if args.restore_runs:
        restore_runs(plans, out)
        return
    for name, plan in plans.items():
        spec = TABLES[name]
        skipped = []
        for kernel, label, cfg in plan:
            path = cell_path(out, name, kernel, label)
            why = None if path.exists() else missing_data(cfg, args.exact)
            if why:
                print(cell_line(spec, kernel, label, f"skipped: {why}"), flush=True)
                skipped.append({"cell": [kernel, label], "why": why})
                continue
            if run_cell(spec, kernel, cfg, out, run["commit"], args.exact, label):
                write_outputs(spec, out, {**run, "skipped": skipped})  # a stopped table is valid
        if args.figures:
            cells = load_cells(out, spec)
            for kernel in dict.fromkeys(kernel for kernel, _, _ in plan):
                drawn = draw_completions(
                    spec, kernel, cells, out, runs, args.exact, extra_overrides(args)
                )
                print(f"wrote {drawn}" if drawn else f"no completion figure for {kernel}")
        write_outputs(spec, out, {**run, "skipped": skipped})
        print(f"wrote {out / name / 'README.md'}", flush=True)


if __name__ == "__main__":
    main()
