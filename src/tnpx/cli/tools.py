"""``tnpx data kolmogorov`` and ``tnpx demo``: simulate a data set, run the README's demo."""

from __future__ import annotations

from pathlib import Path

from ..extras import require

# TE-3 cache sizes: the paper's (solve at 256², pool to 64², 819 / 102 trajectories) and a
# CPU budget (solve at 64² directly, 64 / 16 trajectories; minutes on one core).
KOLMOGOROV_PRESETS = {
    "exact": {"solver_n": 256, "out_n": 64, "n_train": 819, "n_test": 102},
    "budget": {"solver_n": 64, "out_n": 64, "n_train": 64, "n_test": 16},
}


def _data_kolmogorov(args) -> int:
    from ..data.kolmogorov import write_cache

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


def add_data(sub) -> None:
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


def _demo(args) -> int:
    from ..demo.run import run_demo
    from ..demo.settings import DemoSettings

    require("matplotlib", "plot", "plotting")  # its figures: say so before training

    settings = DemoSettings(
        config=args.config,
        out=Path(args.out),
        runs=Path(args.runs) if args.runs else None,
        overrides=args.overrides,
        quick=args.quick,
        **({"pretrained": args.pretrained} if args.pretrained else {}),
    )
    run_demo(settings)
    return 0


def add_demo(sub) -> None:
    """``tnpx demo``: what ``make demo`` runs (see :mod:`tnpx.demo.run`)."""
    p = sub.add_parser(
        "demo",
        help="a shipped model zero-shot beside the exact GP, then train tnp and cnp and plot",
        description="What `make demo` runs, in three parts: (1) a shipped model's zero-shot "
        "predictions on new 1D GP tasks beside the exact GP posterior (seconds); (2) train "
        "tnp and (3) cnp on KR-1 RBF data (budget), score both against the exact GP, plot. "
        "Writes figures, metrics.json and README.md under --out (default runs/demo, ignored "
        "by git) and nothing else; `make demo-results` rebuilds results/demo/.",
    )
    p.add_argument("--config", default="configs/kr1-rbf-tnpx-budget.yaml", help="data and TNP")
    p.add_argument("--out", default="runs/demo", help="output folder (default runs/demo)")
    p.add_argument("--runs", help="where the training runs go (default OUT/train)")
    p.add_argument(
        "--pretrained",
        help="the shipped 1D model shown zero-shot (default: the zoo's best, gp1d-v2-te-tnp-rope)",
    )
    p.add_argument(
        "--quick", action="store_true", help="a smoke run of every part in seconds (20 steps)"
    )
    p.add_argument("overrides", nargs="*", help="section.key=value overrides for both models")
    p.set_defaults(func=_demo)
