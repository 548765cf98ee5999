"""Is a compiled training step (``train.compile: true``) faster than the eager one, and does it
compute the same loss? (issue 53, item 4)

For each case (a model on a paper config, at the model's default size and at the config's
paper size), two runs are set up exactly as ``tnpx train`` sets them up (``open_session``:
the same seed, so the same initial weights), one eager and one with the objective compiled
(:class:`tnpx.training.compiled.CompiledObjective`: ``torch.compile(dynamic=True)``). Each
timed step is the whole of ``train_step`` (forward and loss, backward, clipping, AdamW,
schedule, non-finite guard) on the protocol's batches, whose context sizes vary as in
training. The compiled run first takes ``--warmup`` untimed steps (the compile: its time is
reported); then the two are timed A, B, A, B ... over ``--rounds`` rounds of ``--steps``
steps each, on the same batches in the same order; medians per mode and their ratio. The
loss column is the largest gap between the two runs' losses over the timed steps.

    python -m benchmarks.compile_step [--rounds 6] [--steps 5] [--threads 1]
    python -m benchmarks.compile_step --quick --out /tmp/x    # tiny sizes: the script runs

Run it on quiet cores (no training run or test suite beside it). Writes
``results/perf/compile-step.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.harness import write_results
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.models import options_taken
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import CompiledObjective, open_session, train_step

# (model, config): TE-1's tnp and KR-1's tnp-kr-full, the two
CASES = (("tnp", "configs/te1.yaml"), ("tnp-kr-full", "configs/kr1-rbf.yaml"))
SIZES = ("default", "paper")
QUICK_MODEL = {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16}
HEADER = (
    "| model | config | size | eager ms/step | compiled ms/step | compiled / eager "
    "| compile s | max loss gap |"
)


def overrides(name: str, size: str, quick: bool, out_dir: str) -> list[str]:
    """Config overrides for ``name`` at ``size`` (``default``: the model's own defaults, no
    preset; ``paper``: the config's); ``quick``: tiny sizes and batches."""
    items = [f"model.name={name}", f"train.out_dir={out_dir}", "train.progress=false"]
    if size == "default":
        items.append("model.preset=null")
    if quick:
        items += [f"model.{k}={v}" for k, v in options_taken(name, QUICK_MODEL).items()]
        items.append("data.batch_size=4")
    return items


def measure(name: str, config: str, size: str, args: argparse.Namespace) -> dict:
    """One case: median step times (ms) of the eager and compiled runs, interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for mode in ("eager", "compiled"):
            cfg = load_config(config, overrides(name, size, args.quick, f"{tmp}/{mode}"))
            run = open_session(cfg, False, None)
            if mode == "compiled":
                run.objective = CompiledObjective(run.objective, backend=args.backend)
            run.model.train()
            runs[mode] = run
        batches = [batch_at(runs["eager"].sampler, s, 0) for s in range(args.steps)]
        step = 0
        start = time.perf_counter()
        for _ in range(args.warmup):  # both runs take the same steps: the same weights
            for run in runs.values():
                train_step(run, batches[step % len(batches)], step)
            step += 1
        compile_s = time.perf_counter() - start
        times = {mode: [] for mode in runs}
        gap = 0.0
        for _ in range(args.rounds):
            losses = {}
            for mode, run in runs.items():  # A then B on the same batches
                losses[mode] = []
                for s in range(args.steps):
                    t = time.perf_counter()
                    losses[mode].append(train_step(run, batches[s], step + s).item())
                    times[mode].append(1e3 * (time.perf_counter() - t))
            gap = max([gap] + [abs(a - b) for a, b in zip(losses["eager"], losses["compiled"])])
            step += args.steps
    median = {mode: statistics.median(t) for mode, t in times.items()}
    return {
        "model": name,
        "config": config,
        "size": size,
        "median_ms": median,
        "ratio": median["compiled"] / median["eager"],
        "compile_s": compile_s,
        "max_loss_gap": gap,
        "steps_timed": args.rounds * args.steps,
        "fell_back": runs["compiled"].objective.fallback_reason,
    }


def table(rows: list[dict]) -> list[str]:
    lines = [HEADER, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        m = r["median_ms"]
        lines.append(
            f"| {r['model']} | `{r['config']}` | {r['size']} | {m['eager']:.1f} | "
            f"{m['compiled']:.1f} | {r['ratio']:.2f} | {r['compile_s']:.0f} | "
            f"{r['max_loss_gap']:.1e} |"
        )
    return lines


def reading(rows: list[dict]) -> str:
    fell_back = [r["model"] for r in rows if r["fell_back"]]
    if fell_back:
        return f"torch.compile failed for {', '.join(fell_back)} (ran eagerly): no verdict."
    faster = [f"{r['model']} ({r['size']})" for r in rows if r["ratio"] < 0.95]
    slower = [f"{r['model']} ({r['size']})" for r in rows if r["ratio"] > 1.05]
    gap = max(r["max_loss_gap"] for r in rows)
    return (
        f"Compiled faster (ratio < 0.95) for: {', '.join(faster) or 'none'}; slower (> 1.05) "
        f"for: {', '.join(slower) or 'none'}. The losses of the two runs differ by at most "
        f"{gap:.1e} over the timed steps. `train.compile` stays off by default unless every "
        "case is faster here and the losses agree (the lead's decision)."
    )


def report(rows: list[dict], args: argparse.Namespace) -> str:
    quick = " **Quick mode: tiny sizes, no measurement.**" if args.quick else ""
    return f"""# A compiled training step against the eager one{quick}

**What**: wall time of one training step (`train_step`: forward and loss, backward,
clipping, AdamW, schedule, non-finite guard) eager against `train.compile: true`
(`torch.compile(dynamic=True)`, backend `{args.backend}`), interleaved A/B over
{args.rounds} rounds of {args.steps} steps on the configs' own batches (varying context
sizes), after {args.warmup} untimed steps (the compile, column "compile s"); medians. Sizes:
"default" is the model's defaults (`build_model(name)`), "paper" the config's preset. Lower
ms is better; "max loss gap" is the largest |compiled − eager| loss over the timed steps.

**Command**: `{command_line()}`, commit `{git_commit()}`.

**Hardware**: {hardware()}; {args.threads} torch thread(s).

{chr(10).join(table(rows))}

**Reading**: {reading(rows)}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps: the compile")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backend", default="inductor", help="eager/aot_eager to debug")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1 round of 2 steps")
    parser.add_argument("--out", default="results/perf")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.steps, args.warmup = 1, 2, 1
    torch.set_num_threads(args.threads)
    rows = [measure(name, cfg, size, args) for name, cfg in CASES for size in SIZES]
    text = report(rows, args)
    write_results(Path(args.out) / "compile-step", {"args": vars(args), "rows": rows}, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
