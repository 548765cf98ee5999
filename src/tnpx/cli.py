"""The ``tnpx`` command line: ``tnpx {train,eval,plot,predict,models,demo,bench} --help``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from omegaconf import OmegaConf


def _train(args) -> int:
    from .config import load_config
    from .train import fit

    cfg = load_config(args.config, args.overrides)
    result = fit(cfg, resume=args.resume)
    if result.stopped_early:
        print(f"checkpoint: {result.out_dir / 'checkpoints' / 'last.pt'}")
    else:
        print(f"trained {result.steps_done} steps; model: {result.out_dir / 'model.pt'}")
    return 0


def _resolve_checkpoint(args) -> Path:
    """Turn a pretrained model's name in ``args.checkpoint`` into its file; returns the stem
    for default output files (beside the checkpoint, or in the working folder for a name)."""
    from .predict import pretrained_or_path

    given = args.checkpoint
    args.checkpoint = str(pretrained_or_path(given))
    return Path(given) if args.checkpoint == given else Path(f"{given}.pt")


def _experiment_for(checkpoint: str, config: str | None):
    from .config import load_config
    from .train import experiment_of

    cfg = load_config(config) if config else experiment_of(checkpoint)
    if cfg is None:
        raise ValueError(
            f"{checkpoint} records no experiment; pass --config to say which data to use"
        )
    return cfg


def _data_overrides(items: list[str]) -> dict:
    for item in items:
        if "=" not in item:
            raise ValueError(f"--data {item!r} is not of the form key=value")
    return OmegaConf.to_container(OmegaConf.from_dotlist(items)) if items else {}


def _eval(args) -> int:
    from . import load
    from .evaluate import build_test_sampler, evaluate, format_table

    stem = _resolve_checkpoint(args)
    model = load(args.checkpoint)
    cfg = _experiment_for(args.checkpoint, args.config)
    if args.n_batches:
        cfg.eval.n_batches = args.n_batches
    sampler = build_test_sampler(cfg, **_data_overrides(args.data))
    metrics = evaluate(model, sampler, cfg.eval.n_batches, oracle=not args.no_oracle, progress=True)
    print(format_table([metrics]))
    out = Path(args.out) if args.out else stem.with_suffix(".eval.json")
    out.write_text(
        json.dumps(
            {
                "checkpoint": str(args.checkpoint),
                "data": args.data,
                "n_batches": cfg.eval.n_batches,
                **metrics.as_dict(),
            },
            indent=2,
        )
    )
    print(f"wrote {out}")
    return 0


def _plot(args) -> int:
    from . import load
    from .evaluate import build_test_sampler
    from .plot import plot_1d_tasks, plot_image_tasks

    stem = _resolve_checkpoint(args)
    model = load(args.checkpoint)
    cfg = _experiment_for(args.checkpoint, args.config)
    sampler = build_test_sampler(cfg, **_data_overrides(args.data))
    out = Path(args.out) if args.out else stem.with_suffix(".png")
    if cfg.data["name"] == "image":  # context, mean, std and the image, side by side
        if args.samples:
            raise SystemExit("tnpx plot: --samples draws 1D function samples, not images")
        plot_image_tasks(model, sampler, out, n_tasks=args.n_tasks)
    else:
        plot_1d_tasks(
            {model.name: model}, sampler, out, n_tasks=args.n_tasks, n_samples=args.samples
        )
    print(f"wrote {out}")
    return 0


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
    from .checkpoint import CheckpointError, read_checkpoint
    from .predict import predict, pretrained_or_path
    from .zoo import list_pretrained

    args.model = str(pretrained_or_path(args.model))
    if not Path(args.model).is_file():
        raise CheckpointError(
            f"{args.model}: no such checkpoint (give the path of a model written by "
            "`tnpx train` or tnpx.save, or a pretrained model's name: "
            f"{', '.join(list_pretrained()) or 'none shipped'})"
        )
    if args.plot:
        dim_x = read_checkpoint(args.model)["model"]["dim_x"]
        if dim_x != 1:
            raise ValueError(
                f"--plot needs one input column (dim_x = 1); {args.model} takes {dim_x}. "
                "Leave out --plot"
            )
    result = predict(
        args.model,
        args.context,
        args.targets,
        x_cols=args.x_cols,
        y_cols=args.y_cols,
        scale_inputs=not args.no_scale_inputs,
        standardise_outputs=not args.no_standardise,
        input_scale=args.input_range,
        output_scale=args.output_scale,
        domain=args.domain,
        level=args.level,
        chunk_size=args.chunk_size,
        drop_missing=args.drop_missing,
    )
    _print_scaling(result.attrs["tnpx"])
    if args.out:
        try:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            result.to_csv(args.out, index=False)
        except OSError as err:
            raise ValueError(f"{args.out}: cannot write the predictions ({err})") from None
        print(f"wrote {args.out} ({len(result)} rows)", file=sys.stderr)
    else:
        try:
            result.to_csv(sys.stdout, index=False)
        except BrokenPipeError:  # e.g. `| head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # quiet exit
    if args.plot:
        _plot_prediction(args, result)
    return 0


def _print_scaling(record: dict) -> None:
    """One line on stderr saying how the data were rescaled (stdout may carry the CSV)."""
    parts = []
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
        parts.append(f"outputs standardised by {stats}")
    print(f"tnpx predict: {'; '.join(parts) or 'no rescaling'}", file=sys.stderr)


def _plot_prediction(args, result) -> None:
    from .plot import plot_prediction
    from .tables import read_table

    x_col = result.columns[0]
    y_cols = [c.removesuffix("_mean") for c in result.columns[1::4]]  # x, then 4 per output
    context = read_table(args.context, "context").frame
    plot_prediction(result, args.plot, x_col, y_cols, context=context, level=args.level)
    print(f"wrote {args.plot}", file=sys.stderr)


def _add_predict(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="predict at your own target inputs given your own context data",
        description="Predict the outputs at TARGETS given CONTEXT (CSV files with a header row) "
        "with the model in checkpoint MODEL. By default every column of TARGETS is an input and "
        "every other column of CONTEXT an output. Inputs are mapped per column from the "
        "context's range onto the model's training domain and outputs standardised by the "
        "context's mean and std; predictions are mapped back to your units. Writes the target "
        "inputs and, per output Y, Y_mean, Y_std, Y_lower, Y_upper (CSV, to stdout without "
        "--out).",
    )
    p.add_argument(
        "model",
        metavar="MODEL",
        help="checkpoint path (e.g. runs/NAME/model.pt) or a pretrained model's name "
        "(`tnpx models --pretrained`)",
    )
    p.add_argument("--context", required=True, metavar="FILE", help="observed points (CSV)")
    p.add_argument("--targets", required=True, metavar="FILE", help="inputs to predict at (CSV)")
    p.add_argument("--out", metavar="FILE", help="CSV output (default: stdout)")
    p.add_argument("--plot", metavar="FILE", help="PNG of the predictions (one input column)")
    p.add_argument("--x-cols", nargs="+", metavar="COL", help="input columns")
    p.add_argument("--y-cols", nargs="+", metavar="COL", help="output columns")
    p.add_argument("--level", type=float, default=0.95, help="interval probability (0.95)")
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
    p.add_argument("--chunk-size", type=int, default=16384, help="targets decoded per chunk")
    p.set_defaults(func=_predict)


def models_table(markdown: bool = True) -> str:
    """The registered models with their equivariances (the README's model list)."""
    from .models import REGISTRY

    rows = [
        "| model | what it is | translation equivariant | rotation equivariant |",
        "| --- | --- | --- | --- |",
    ]
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        doc = cls.summary
        yes = lambda b: "yes" if b else "no"  # noqa: E731
        rows.append(
            f"| `{name}` | {doc} | {yes(cls.translation_equivariant)} | "
            f"{yes(cls.rotation_equivariant)} |"
        )
    if markdown:
        return "\n".join(rows)
    return "\n".join(f"{n:12s} {REGISTRY[n].summary}" for n in sorted(REGISTRY))


def _models(args) -> int:
    if args.pretrained:
        from .zoo import describe

        print(describe())
        print("\nLoad one with tnpx.pretrained(NAME); predict with `tnpx predict NAME ...`.")
        return 0
    print(models_table(markdown=args.markdown))
    return 0


def _demo(args) -> int:
    from .demo import run_demo

    run_demo(args.config, args.out, args.runs, args.overrides)
    return 0


# TE-3 cache sizes: the paper's (solve at 256², pool to 64², 819 / 102 trajectories) and a
# CPU budget (solve at 64² directly, 64 / 16 trajectories; minutes on one core).
KOLMOGOROV_PRESETS = {
    "exact": {"solver_n": 256, "out_n": 64, "n_train": 819, "n_test": 102},
    "budget": {"solver_n": 64, "out_n": 64, "n_train": 64, "n_test": 16},
}


def _data_kolmogorov(args) -> int:
    from .data.kolmogorov import write_cache

    preset = KOLMOGOROV_PRESETS[args.preset]
    sizes = {k: getattr(args, k) if getattr(args, k) is not None else v for k, v in preset.items()}
    write_cache(
        args.out,
        sizes.pop("n_train"),
        sizes.pop("n_test"),
        seed=args.seed,
        device=args.device,
        overwrite=args.overwrite,
        **sizes,
    )
    print(f"wrote {args.out}")
    return 0


def _add_data(sub) -> None:
    p = sub.add_parser("data", help="generate data sets that are simulated, not downloaded")
    data = p.add_subparsers(dest="data_command", required=True)
    k = data.add_parser(
        "kolmogorov",
        help="simulate Kolmogorov-flow trajectories (TE-3) into a cache file (resumable)",
        description="Solves 2-D Kolmogorov flow (pseudo-spectral, Re 1000, sin(4y) forcing, "
        "drag 0.1), discards the spin-up, keeps 64 snapshots 0.2 apart, pools the velocity "
        "to the output grid and writes train / test trajectories to OUT. Progress is saved "
        "after every chunk: run the same command again to continue.",
    )
    k.add_argument("--out", default="data/kolmogorov.pt")
    k.add_argument("--preset", choices=sorted(KOLMOGOROV_PRESETS), default="budget")
    k.add_argument("--n-train", type=int, dest="n_train")
    k.add_argument("--n-test", type=int, dest="n_test")
    k.add_argument("--solver-n", type=int, dest="solver_n", help="solver grid (256 exact)")
    k.add_argument("--out-n", type=int, dest="out_n", help="stored grid (64)")
    k.add_argument("--seed", type=int, default=0)
    k.add_argument("--device", default="cpu")
    k.add_argument("--overwrite", action="store_true", help="replace a cache of other settings")
    k.set_defaults(func=_data_kolmogorov)


def _bench_scaling(args) -> int:
    from .scaling import Settings, run_scaling

    settings = Settings(
        models=args.models,
        sizes=args.sizes,
        sweeps=args.sweeps,
        device=args.device,
        dtypes=args.dtype,
        stream=args.stream,
        timeout_s=args.timeout,
        memory_gb=args.memory_gb,
        repeats=args.repeats,
        threads=args.threads,
        out=Path(args.out),
    )
    report = run_scaling(settings)
    print(f"wrote {report}" if report else "no points were measured")
    return 0


def _add_bench(sub) -> None:
    """``tnpx bench scaling``: the KR-5 scaling sweep (see :mod:`tnpx.scaling`)."""
    from .bench import DTYPES
    from .scaling import DEFAULT_CHUNK, MODELS, SIZES, SLOW_CALL_S, SWEEPS

    bench = sub.add_parser("bench", help="benchmarks (scaling)")
    kinds = bench.add_subparsers(dest="bench_command", required=True)
    p = kinds.add_parser(
        "scaling",
        help="KR-5: µs per sample and peak memory against the number of targets / context",
        description="TNP-KR Tables 1-2 on this machine: one forward (batch 1) per point, in "
        "its own process with a time limit and memory cap, (a) 100 context points and N "
        "targets, (b) 100 targets and N context points. Resumes from OUT/points.json; writes "
        "OUT/<device>.md, OUT/<device>.png and OUT/README.md. A point is timed REPEATS times "
        f"after a warm-up, or once if its first call takes over {SLOW_CALL_S:.0f} s.",
    )
    p.add_argument(
        "--models", nargs="+", default=list(MODELS), metavar="MODEL", help=" ".join(MODELS)
    )
    p.add_argument("--sizes", nargs="+", type=int, default=list(SIZES), metavar="N")
    p.add_argument(
        "--sweeps",
        nargs="+",
        choices=list(SWEEPS),
        default=list(SWEEPS),
        help="targets: 100 context, N targets; context: 100 targets, N context (default both)",
    )
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--dtype", nargs="+", choices=list(DTYPES), default=["float32"])
    stream = p.add_mutually_exclusive_group()
    stream.add_argument(
        "--stream",
        type=int,
        default=DEFAULT_CHUNK,
        metavar="CHUNK",
        help=f"decode targets CHUNK at a time with predict_streamed (default {DEFAULT_CHUNK})",
    )
    stream.add_argument(
        "--no-stream", dest="stream", action="store_const", const=None, help="plain forward"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per point")
    p.add_argument("--memory-gb", type=float, default=20.0, help="memory cap per point")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per point")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    p.add_argument("--out", default="results/scaling", help="results folder")
    p.set_defaults(func=_bench_scaling)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tnpx", description="Transformer neural processes.")
    parser.add_argument("--version", action="version", version=f"tnpx {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "train",
        help="train a model from a YAML config",
        description="Train from CONFIG with section.key=value overrides, e.g. "
        "`tnpx train configs/kr1-rbf-budget.yaml model.dim_model=64 train.steps=2000`.",
    )
    p.add_argument("config", help="YAML experiment config (configs/*.yaml)")
    p.add_argument("overrides", nargs="*", help="section.key=value overrides")
    p.add_argument("--resume", action="store_true", help="continue from the run's last checkpoint")
    p.set_defaults(func=_train)

    p = sub.add_parser(
        "eval",
        help="score a checkpoint on its experiment's test set",
        description="LL per target ± s.e. over test tasks, the GP oracle on the "
        "same tasks, the gap, and 95%% coverage; prints a table and writes JSON.",
    )
    p.add_argument("checkpoint", help="checkpoint path or a pretrained model's name")
    p.add_argument("--config", help="experiment config (default: the one in the checkpoint)")
    p.add_argument("--data", nargs="*", default=[], help="test-data overrides, e.g. shift=0.4")
    p.add_argument("--n-batches", type=int, help="number of test batches")
    p.add_argument("--no-oracle", action="store_true", help="skip the GP oracle")
    p.add_argument("--out", help="JSON output (default: CHECKPOINT.eval.json)")
    p.set_defaults(func=_eval)

    p = sub.add_parser("plot", help="plot a checkpoint's predictions on test tasks (1D or images)")
    p.add_argument("checkpoint", help="checkpoint path or a pretrained model's name")
    p.add_argument("--config", help="experiment config (default: the one in the checkpoint)")
    p.add_argument("--data", nargs="*", default=[], help="test-data overrides, e.g. shift=0.4")
    p.add_argument("--n-tasks", type=int, default=4)
    p.add_argument(
        "--samples",
        type=int,
        default=0,
        metavar="N",
        help="also draw N joint function samples per task (autoregressive rollout)",
    )
    p.add_argument("--out", help="PNG output (default: CHECKPOINT.png)")
    p.set_defaults(func=_plot)

    p = sub.add_parser("models", help="list the registered models (or the pretrained ones)")
    p.add_argument("--markdown", action="store_true", help="as a markdown table")
    p.add_argument(
        "--pretrained",
        action="store_true",
        help="list the models shipped with tnpx: data, held-out LL, gap to the GP oracle",
    )
    p.set_defaults(func=_models)

    p = sub.add_parser(
        "demo",
        help="train tnp and cnp, evaluate against the GP oracle, plot",
        description="What `make demo` runs; writes results/demo/.",
    )
    p.add_argument("--config", default="configs/kr1-rbf-budget.yaml")
    p.add_argument("--out", default="results/demo")
    p.add_argument("--runs", default="runs/demo", help="where the training runs go")
    p.add_argument("overrides", nargs="*", help="section.key=value overrides for both models")
    p.set_defaults(func=_demo)

    _add_predict(sub)
    _add_bench(sub)
    _add_data(sub)
    from .bo.cli import add_bo_parser

    add_bo_parser(sub)
    return parser


def _version() -> str:
    from . import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        # Expected failures (bad config, bad checkpoint, diverged run) get one clear line.
        print(f"tnpx {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
