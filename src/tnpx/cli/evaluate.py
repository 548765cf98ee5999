"""``tnpx eval`` and ``tnpx plot``: a checkpoint's model on the test tasks of its experiment
(the one it records, or ``--config``), scored into a table and JSON or drawn into a PNG."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from omegaconf import OmegaConf

from ..extras import require
from .arguments import add_model_argument


def _resolve_checkpoint(args) -> Path:
    """Turn a pretrained model's name in ``args.checkpoint`` into its file; returns the stem
    for default output files (beside the checkpoint, or in the working folder for a name)."""
    from ..zoo import checkpoint_file

    given = args.checkpoint
    args.checkpoint = str(checkpoint_file(given))
    return Path(given) if Path(given).is_file() else Path(f"{given}.pt")


def _model_and_experiment(checkpoint: str, config: str | None):
    """The model in ``checkpoint`` and the experiment whose data it is evaluated on: the
    ``config`` file if given, else the one the checkpoint records (the file is read once)."""
    from ..checkpoint import experiment_from_record, model_from_record, read_checkpoint
    from ..config import load_config

    record = read_checkpoint(checkpoint)
    model = model_from_record(record, checkpoint).eval()
    cfg = load_config(config) if config else experiment_from_record(record)
    if cfg is None:
        raise ValueError(
            f"{checkpoint} records no experiment; pass --config to say which data to use"
        )
    return model, cfg


def _data_overrides(items: list[str]) -> dict:
    for item in items:
        if "=" not in item:
            raise ValueError(f"--data {item!r} is not of the form key=value")
    return OmegaConf.to_container(OmegaConf.from_dotlist(items)) if items else {}


def _print_flags(flags: list[str]) -> list[str]:
    """Each coverage flag as a warning line under the table (stdout), the first also on
    stderr; returns them."""
    if flags:
        print("\n" + "\n".join(f"warning: {line}" for line in flags))
        for line in flags[:1]:  # the headline also where only stderr is read
            print(f"tnpx eval: warning: {line}", file=sys.stderr)
    return flags


def _eval(args) -> int:
    from ..evaluation.coverage_flags import coverage_flags
    from ..evaluation.protocol import build_test_sampler, evaluate, format_table

    stem = _resolve_checkpoint(args)
    model, cfg = _model_and_experiment(args.checkpoint, args.config)
    if args.n_batches:
        cfg.eval.n_batches = args.n_batches
    sampler = build_test_sampler(cfg, **_data_overrides(args.data))
    if getattr(sampler, "splits_tasks", False):  # a user's tasks: their units, two baselines
        return _eval_user_tasks(args, model, sampler, cfg, stem)
    metrics = evaluate(model, sampler, cfg.eval.n_batches, oracle=not args.no_oracle, progress=True)
    print(format_table([metrics]))
    flags = _print_flags(coverage_flags(metrics.coverage95, [], sampler))
    out = Path(args.out) if args.out else stem.with_suffix(".eval.json")
    out.write_text(
        json.dumps(
            {
                "checkpoint": str(args.checkpoint),
                "data": args.data,
                "n_batches": cfg.eval.n_batches,
                **metrics.as_dict(),
                "coverage_flags": flags,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")
    return 0


def _eval_user_tasks(args, model, sampler, cfg, stem: Path) -> int:
    """``tnpx eval`` of a model trained on a user's data: its held-out test tasks in the data's
    units beside a GP fitted per task and the context's moments (``--no-baselines``: alone)."""
    from ..evaluation.coverage_flags import CoverageBin, coverage_flags, format_coverage_bins
    from ..evaluation.user_tasks import BASELINES, evaluate_tasks, format_task_table, se_assumptions

    baselines = () if args.no_baselines else BASELINES
    if "gp" in baselines and importlib.util.find_spec("gpytorch") is None:
        print("tnpx eval: note: no 'gp' baseline without gpytorch: pip install 'tnpx[gp]'",
              file=sys.stderr)  # fmt: skip
        baselines = tuple(b for b in baselines if b != "gp")
    rows = evaluate_tasks(model, sampler, cfg.eval.n_batches, baselines)
    print(format_task_table(rows))
    bins = [CoverageBin(**b) for b in rows[0].coverage_by_ctx]
    print(f"\n{rows[0].model}'s 95% coverage by context size:\n{format_coverage_bins(bins)}")
    flags = _print_flags(coverage_flags(rows[0].coverage95, bins, sampler))
    out = Path(args.out) if args.out else stem.with_suffix(".eval.json")
    report = {
        "checkpoint": str(args.checkpoint),
        "data": args.data,
        "n_batches": cfg.eval.n_batches,
        "units": "the data's (LL per target point; RMSE per output column)",
        "standard_errors": se_assumptions(rows[0]),
        "coverage_flags": flags,
        "rows": [r.as_dict() for r in rows],
    }
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


def _plot(args) -> int:
    from ..evaluation.protocol import build_test_sampler
    from ..plot import plot_1d_tasks, plot_image_tasks

    require("matplotlib", "plot", "plotting")  # before loading the model and its data
    stem = _resolve_checkpoint(args)
    model, cfg = _model_and_experiment(args.checkpoint, args.config)
    sampler = build_test_sampler(cfg, **_data_overrides(args.data))
    out = Path(args.out) if args.out else stem.with_suffix(".png")
    source = cfg.data["name"]
    chosen = [o for o in ("time", "period", "region", "select") if getattr(args, o)]
    if source != "grid" and (chosen or args.split != "test"):
        given = " ".join(f"--{o}" for o in chosen or ["split"])
        raise ValueError(f"{given}: chooses the windows of a grid; the {source!r} source's "
                         "plot draws its test tasks")  # fmt: skip
    if source in ("image", "grid", "stations") and args.samples:
        drawn = {"image": "images", "grid": "grid maps", "stations": "station maps"}[source]
        raise SystemExit(f"tnpx plot: --samples draws 1D function samples, not {drawn}")
    if source == "image":  # context, mean, std and the image, side by side
        plot_image_tasks(model, sampler, out, n_tasks=args.n_tasks)
    elif source == "grid":  # the same four panels as maps of a window, in the data's units
        from ..plot.grid import plot_grid_tasks

        sampler, n_tasks = _chosen_windows(args, sampler)
        plot_grid_tasks(model, sampler, out, n_tasks=n_tasks, split=args.split)
    elif source == "stations":  # context stations, then targets by mean, std and truth
        from ..plot.stations import plot_stations_tasks

        plot_stations_tasks(model, sampler, out, n_tasks=args.n_tasks)
    elif sampler.dim_x != 1 or sampler.dim_y != 1:
        raise ValueError(
            f"no plot for the {source!r} source with dim_x={sampler.dim_x}, "
            f"dim_y={sampler.dim_y}; tnpx plot draws 1D sources (dim_x = dim_y = 1), "
            "stations, image and grid"
        )
    else:
        plot_1d_tasks(
            {model.name: model}, sampler, out, n_tasks=args.n_tasks, n_samples=args.samples
        )
    print(f"wrote {out}")
    return 0


def _chosen_windows(args, sampler):
    """The grid sampler restricted to the period and region asked for (all of ``--split``'s
    windows without), and how many tasks to draw: ``--n-tasks``, or fewer where fewer lie
    there."""
    from ..plot.grid_select import restricted, selection_box

    box = selection_box(sampler, args.time, args.period, args.region, args.select)
    if not box and args.split == "test":
        return sampler, args.n_tasks
    view = restricted(sampler, box, args.split)
    return view, min(args.n_tasks, len(view.windows(args.split)))


def _add_checkpoint_and_data(p) -> None:
    """What eval and plot both read: the checkpoint, the experiment and its test-data
    overrides (:func:`_model_and_experiment`, :func:`_data_overrides`)."""
    add_model_argument(p, "checkpoint")
    p.add_argument("--config", help="experiment config (default: the one in the checkpoint)")
    p.add_argument("--data", nargs="*", default=[], help="test-data overrides, e.g. shift=0.4")


def add_eval(sub) -> None:
    p = sub.add_parser(
        "eval",
        help="score a checkpoint on its experiment's test set",
        description="LL per target ± s.e. over test tasks, the GP oracle on the "
        "same tasks, the gap, and 95% coverage; prints a table and writes JSON. On a user's "
        "data: in the data's units beside a per-task GP, with a second s.e. over the split's "
        "clusters (test months, regions or tasks; the output names them), and coverage by "
        "context size; coverage below 0.85 or above 0.99 is flagged with its likely causes.",
    )
    _add_checkpoint_and_data(p)
    p.add_argument("--n-batches", type=int, help="number of test batches")
    p.add_argument("--no-oracle", action="store_true", help="skip the GP oracle")
    p.add_argument(
        "--no-baselines",
        action="store_true",
        help="user data: skip the per-task GP and context-moments rows",
    )
    p.add_argument("--out", help="JSON output (default: CHECKPOINT.eval.json)")
    p.set_defaults(func=_eval)


def add_plot(sub) -> None:
    p = sub.add_parser(
        "plot", help="plot a model's predictions on test tasks (1D, image, grid, stations)"
    )
    _add_checkpoint_and_data(p)
    p.add_argument("--n-tasks", type=int, default=4)
    p.add_argument(
        "--samples",
        type=int,
        default=0,
        metavar="N",
        help="also draw N joint function samples per task (autoregressive rollout)",
    )
    where = p.add_argument_group(
        "grid: which windows",
        "Draw the windows lying wholly inside a period and region (the grid config's select "
        "box), spread evenly over them; dates as dates. Time axes are labelled with dates.",
    )
    where.add_argument("--time", metavar="DATE", help="one date or period: 2010, 2010-05")
    where.add_argument("--period", nargs=2, metavar=("START", "END"),
                       help="from START to END, both included: 2010-01 2010-06")  # fmt: skip
    where.add_argument("--region", nargs=4, type=float, metavar=("LAT0", "LAT1", "LON0", "LON1"),
                       help="a latitude and longitude box (dims named lat..., lon...)")  # fmt: skip
    where.add_argument("--select", nargs="*", default=[], metavar="DIM=LO:HI",
                       help="dims' ranges as in select (LO,HI: dates with ':')")  # fmt: skip
    where.add_argument("--split", choices=("test", "val", "train"), default="test",
                       help="the split whose windows are drawn (default test)")  # fmt: skip
    p.add_argument("--out", help="PNG output (default: CHECKPOINT.png)")
    p.set_defaults(func=_plot)
