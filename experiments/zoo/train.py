"""Train, evaluate and package the pretrained models shipped in ``tnpx.zoo``.

For each model: train from its config (``configs/pretrained-*.yaml``; resumes an interrupted
run, reuses a finished one), score it on 1,024 held-out tasks of its training prior against
the GP oracle (and per kernel), copy the checkpoint into ``src/tnpx/zoo/NAME.pt`` with a card
``NAME.json`` (data, config, command, commit, hardware, times, evaluation, and a small check
evaluation that the test suite repeats), and write ``results/pretrained/README.md`` with a
plot of predictions and joint samples.

The later zoo models are trained as long runs (``experiments/long_runs/driver.py``) and shipped from
them (:mod:`experiments.zoo.ship`; scores: :mod:`experiments.zoo.score`):

    python -m experiments.zoo.train                     # today's zoo: train, score, package
    python -m experiments.zoo.train --interim           # the long runs so far (a quick check)
    python -m experiments.zoo.train --ship              # ship the finished long runs
    python -m experiments.zoo.train --ship gp1d-v2-tnp --force   # an unfinished run's weights
    python -m experiments.zoo.train --ship gp2d-te-tnp-rope      # the 2D model (its own card:
                                                         # experiments.zoo.ship_2d)
    python -m experiments.zoo.train --report            # the whole zoo: .../zoo.md
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import torch

from experiments.kit import pm_key
from experiments.zoo import interim, ship, ship_2d
from experiments.zoo.card_file import DirtyTree, check_clean, write_card
from experiments.zoo.score import KERNELS, score
from tnpx.config import load_config
from tnpx.evaluation import build_test_sampler, evaluate, likelihood_of
from tnpx.plot import plot_1d_tasks
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import train_or_load

MODELS = {
    "gp1d-tnp": "configs/pretrained-gp1d-tnp.yaml",
    "gp1d-te-tnp": "configs/pretrained-gp1d-te-tnp.yaml",
}
ZOO = Path("src/tnpx/zoo")
README = Path("README.md")
CHECK_BATCHES = ship.CHECK_BATCHES  # the check evaluation tests/zoo/test_zoo.py repeats


def package(name: str, config: str, commit: str, command: str, allow_dirty: bool = False) -> dict:
    cfg = load_config(config)
    model, train_s = train_or_load(cfg)
    model.eval()
    start = time.perf_counter()
    sampler = build_test_sampler(cfg)
    scores = score(model, cfg.eval.n_batches, progress=True)  # the zoo's priors (a), (b), (c)
    check = evaluate(model, sampler, CHECK_BATCHES, oracle=False)
    eval_s = time.perf_counter() - start
    card = {
        "name": name,
        "model": model.name,
        "params": sum(p.numel() for p in model.parameters()),
        "trained_on": ship.trained_on(cfg),
        "config": config,
        "steps": cfg.train.steps,
        "batch_size": cfg.data["batch_size"],
        "command": command,
        "commit": commit,
        "hardware": hardware(),
        "train_s": train_s,
        "eval_s": eval_s,
        "translation_equivariant": model.translation_equivariant,
        "likelihood": likelihood_of(model),  # the card page names it
        **scores,
        "check": {"batches": CHECK_BATCHES, "n_tasks": check.n_tasks, "ll": check.ll},
    }
    ZOO.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(cfg.train.out_dir) / "model.pt", ZOO / f"{name}.pt")
    return write_card(ZOO / f"{name}.json", card, allow_dirty)


def reading(cards: dict) -> str:
    """Which model is closer to the oracle, and on which kernel each is furthest from it."""
    ranked = sorted(cards, key=lambda n: cards[n]["eval"]["gap"])
    parts = []
    if len(ranked) > 1:
        best, rest = ranked[0], ranked[1:]
        parts.append(
            f"`{best}` is closest to the GP oracle (gap {cards[best]['eval']['gap']:.3f} against "
            + ", ".join(f"`{n}` {cards[n]['eval']['gap']:.3f}" for n in rest)
            + ")."
        )
    for name, c in cards.items():
        worst = max(KERNELS, key=lambda k: c["per_kernel"][k]["gap"])
        easiest = min(KERNELS, key=lambda k: c["per_kernel"][k]["gap"])
        parts.append(
            f"`{name}` is furthest from the oracle on {worst} data (gap "
            f"{c['per_kernel'][worst]['gap']:.3f}) and closest on {easiest} "
            f"({c['per_kernel'][easiest]['gap']:.3f})."
        )
    return " ".join(parts)


def report(cards: dict, command: str, commit: str, plot: str) -> str:
    rows = [
        "| name | model | params | steps (batch) | train time | held-out LL | GP oracle LL | "
        "gap | 95% coverage |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, c in cards.items():
        e = c["eval"]
        train = f"{c['train_s'] / 60:.0f} min" if c["train_s"] else "—"
        rows.append(
            f"| `{name}` | {c['model']} | {c['params']:,} | {c['steps']:,} ({c['batch_size']}) | "
            f"{train} | {pm_key(e, 'll')} | {e['oracle_ll']:.3f} | "
            f"{pm_key(e)} | {e['coverage95']:.3f} |"
        )
    kernel_rows = [
        "| name | " + " | ".join(KERNELS) + " |",
        "|" + " --- |" * (len(KERNELS) + 1),
    ]
    for name, c in cards.items():
        cells = [pm_key(c["per_kernel"][k]) for k in KERNELS]
        kernel_rows.append(f"| `{name}` | " + " | ".join(cells) + " |")
    first = next(iter(cards.values()))
    n = first["eval"]["n_tasks"]
    return f"""# Pretrained models (`tnpx.pretrained`, `tnpx models --pretrained`)

**What**: the small models shipped in `src/tnpx/zoo/`, scored on {n:,} held-out tasks of their
own training prior ({first["trained_on"]}). Metric: LL per target point (higher is better),
mean ± s.e. over tasks; the GP oracle (exact GP with each task's true kernel, hyper-parameters
and noise) on the same tasks, and each model's gap to it (oracle − model, paired; lower is
better). Targets are noisy observations (the task's noise), as in training.

**Command**: `{command}`, commit `{commit}` (recorded at start).

**Protocol or budget**: not a paper experiment: these are the library's zero-shot GP
stand-ins, trained on a CPU budget (configs `configs/pretrained-gp1d-*.yaml`; steps below).
No paper number applies.

**Hardware and time**: {first["hardware"]}; training and evaluation times below.

{chr(10).join(rows)}

Gap to the GP oracle per kernel (256 tasks each, same prior otherwise):

{chr(10).join(kernel_rows)}

`{plot}`: four held-out tasks, each model's mean ± 2σ, three joint samples per model
(autoregressive rollout, `tnpx.sample`), and the oracle.

**Reading**: {reading(cards)}

See also `real-series.md` (these models zero-shot on measured series, against a GP fitted per
series: the baseline for the v2 zoo). The v2 zoo trains as long runs on the broader
`gp-composite` prior; `python -m experiments.zoo.train --interim` scores their latest
checkpoints on this prior's test tasks and the composite one, and `--ship` packages the
finished runs (cards `src/tnpx/zoo/gp1d-v2-*.json`).
"""


def ship_runs(names: list[str], args: argparse.Namespace) -> int:
    """``--ship``: each finished long run into ``--zoo`` (a 2D prior's run with the 2D card,
    :mod:`experiments.zoo.ship_2d`); 1 if any was refused (the reason on stderr), else
    0."""
    provenance = (git_commit(), command_line())
    check_clean(provenance[0], "--ship", args.allow_dirty)  # before any evaluation
    refused = 0
    for name in names:
        run = ship.shipped_run(name)
        folder = Path(args.runs) / run
        config = ship.run_config(run) if run in ship.RUNS else None
        dim = 2 if ship_2d.is_2d(folder, config) else 1
        try:
            card = ship.ship(
                name, folder, Path(args.zoo), config, args.force, args.batches, provenance,
                Path(args.out), dim, allow_dirty=args.allow_dirty,
            )  # fmt: skip
        except (ship.UnfinishedRun, ValueError) as err:
            print(f"not shipped: {err}", file=sys.stderr)
            refused = 1
            continue
        print(
            f"shipped {name} ({card['steps']:,} steps{'' if card['finished'] else ', UNFINISHED'})"
            f" into {args.zoo}: {headline(card)}"
        )
    return refused


def headline(card: dict) -> str:
    """One line of a shipped card's scores: a 1D card's gaps on both priors, a 2D card's
    :func:`experiments.zoo.ship_2d.headline`."""
    if card.get("dim_x") == 2:
        return ship_2d.headline(card)
    e, c, wide = card["eval"], card["eval_composite"], card["eval_v3"]
    return f"single-kernel gap {pm_key(e)}, composite gap {pm_key(c)}, v3 prior gap {pm_key(wide)}"


def zoo_report(args: argparse.Namespace) -> int:
    """``--report``: :func:`experiments.zoo.report.write_report` into ``--out``."""
    from experiments.zoo.report import write_report

    zoo = Path(args.zoo)
    # the README's table shows the package's zoo: written when that is the zoo reported
    readme = README if zoo.resolve() == ZOO.resolve() else None
    path, _ = write_report(
        zoo, Path(args.out), Path(args.runs), command_line(), git_commit(), readme
    )
    print(path.read_text())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    parser.add_argument("--out", default="results/pretrained")
    parser.add_argument(
        "--interim", action="store_true", help="score the long runs' latest checkpoints"
    )
    shipped = ship.COMPOSITE_MODELS
    parser.add_argument(
        "--ship", nargs="*", metavar="NAME", help=f"ship finished long runs (default {shipped})"
    )
    parser.add_argument("--force", action="store_true", help="--ship an unfinished run")
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="write cards from a working tree with uncommitted code (each marked dirty)",
    )
    parser.add_argument("--zoo", default=str(ZOO), help="the zoo folder --ship writes into")
    parser.add_argument("--runs", default=str(interim.LONG_RUNS), help="the long runs' folder")
    parser.add_argument(
        "--batches", type=int, help="test batches per prior (default: the config's; --interim 8)"
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="write --out/zoo.md: every card in --zoo, 1D and 2D tables (--ship writes it too)",
    )
    args = parser.parse_args(argv)
    if args.report:
        return zoo_report(args)
    if args.interim:
        from tnpx.zoo import pretrained_path

        references = {name: pretrained_path(name) for name in MODELS}
        batches = args.batches or interim.INTERIM_BATCHES
        print(interim.interim(interim.composite_runs(Path(args.runs)), references, batches))
        return 0
    if args.ship is not None:
        try:
            refused = ship_runs(args.ship or ship.COMPOSITE_MODELS, args)
        except DirtyTree as err:
            print(f"not shipped: {err}", file=sys.stderr)
            return 2
        from experiments.zoo.report import zoo_cards

        if zoo_cards(Path(args.zoo)):  # (a zoo folder of other models has no 1D report)
            zoo_report(args)
        return refused
    commit, command = git_commit(), command_line()
    try:
        check_clean(commit, "packaging the zoo", args.allow_dirty)
    except DirtyTree as err:
        print(f"not packaged: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cards = {
        name: package(name, MODELS[name], commit, command, args.allow_dirty) for name in args.models
    }
    torch.manual_seed(0)
    from tnpx.zoo import pretrained

    models = {name: pretrained(name) for name in cards}
    sampler = build_test_sampler(load_config(MODELS[args.models[0]]))
    plot = plot_1d_tasks(models, sampler, out / "predictions.png", n_samples=3)
    (out / "README.md").write_text(report(cards, command, commit, plot.name))
    (out / "results.json").write_text(json.dumps(cards, indent=1))
    print((out / "README.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
