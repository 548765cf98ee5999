"""Milliseconds per training step and parameter count for every registered model.

Two sizes: the budget config's model sizes (``configs/kr1-rbf-tnpx-budget.yaml``; a model takes
the options it has) and the TE F.1 defaults (``build_model(name)`` with no overrides).
Batch 16, 32 context + 128 target points, 1D, AdamW. Writes ``results/perf/train_step.md``
and ``.json``.

    python -m benchmarks.train_step [--steps 20] [--out results/perf]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

import tnpx
from benchmarks.harness import train_step_ms, write_results
from tnpx.config import load_config
from tnpx.models import options_taken
from tnpx.provenance import command_line, git_commit, hardware

BATCH, N_CTX, N_TGT = 16, 32, 128


def make_batch(generator: torch.Generator, dim_y: int = 1) -> tnpx.Batch:
    """Batch of sine-wave tasks: x ``[BATCH, N, 1]``, y ``[BATCH, N, dim_y]``."""
    x = torch.rand(BATCH, N_CTX + N_TGT, 1, generator=generator) * 4 - 2
    phase = torch.arange(dim_y).view(1, 1, -1)
    y = torch.sin(3 * x + phase) + 0.1 * torch.randn(
        BATCH, N_CTX + N_TGT, dim_y, generator=generator
    )
    return tnpx.Batch(x[:, :N_CTX], y[:, :N_CTX], x[:, N_CTX:], y[:, N_CTX:])


def time_steps(model: tnpx.NeuralProcess, steps: int, warmup: int = 3) -> float:
    """Median wall time (ms) of a full step: forward, loss, backward, optimiser update."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = make_batch(torch.Generator().manual_seed(0), model.dim_y)
    times = [train_step_ms(model, opt, batch) for _ in range(warmup + steps)]
    return statistics.median(times[warmup:])


def time_forward(model: tnpx.NeuralProcess, steps: int) -> float:
    batch = make_batch(torch.Generator().manual_seed(0), model.dim_y)
    times = []
    with torch.no_grad():
        for _ in range(steps):
            start = time.perf_counter()
            model.predict_batch(batch)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def build(name: str, options: dict) -> tnpx.NeuralProcess:
    """The model for dim_y = 1, or dim_y = 2 for models that need several outputs (mt-gp)."""
    for dim_y in (1, 2):
        torch.manual_seed(0)
        try:
            return tnpx.build_model(name, 1, dim_y, **options)
        except ValueError:
            if dim_y == 2:
                raise
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--budget-config", default="configs/kr1-rbf-tnpx-budget.yaml")
    parser.add_argument("--out", default="results/perf")
    args = parser.parse_args()

    budget = load_config(args.budget_config).model_options()
    rows = []
    for name in tnpx.list_models():
        for size, options in (("budget", budget), ("default", {})):
            taken = options_taken(name, options)
            model = build(name, taken)
            n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
            if n_params:
                ms, kind = time_steps(model, args.steps), "train step"
            else:  # GP baselines fit per call: a few calls are enough to time them
                ms, kind = (
                    time_forward(model, min(args.steps, 3)),
                    "forward only (nothing to train)",
                )
            if model.dim_y != 1:
                kind += f", dim_y = {model.dim_y}"
            rows.append(
                {
                    "model": name,
                    "size": size,
                    "params": n_params,
                    "ms": round(ms, 2),
                    "kind": kind,
                    "options": taken,
                }
            )
            print(f"{name:12s} {size:15s} {n_params:>9,d} params  {ms:8.2f} ms  {kind}")

    table = [
        "| model | size | parameters | ms per step (median) | what is timed |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    table += [
        f"| {r['model']} | {r['size']} | {r['params']:,} | {r['ms']:.2f} | {r['kind']} |"
        for r in rows
    ]
    text = f"""# Training-step time and size of every model

**What**: wall time of one training step (forward, loss, backward, AdamW update), median of
{args.steps} steps after 3 warm-up steps; batch {BATCH}, {N_CTX} context + {N_TGT} target
points, dim_x = dim_y = 1. Lower is better. Sizes: "budget" = the model options of
`{args.budget_config}` that each model takes ({budget}); "default" = the library
defaults: the TE F.1 sizes (D_z 128, 5 layers, 8 heads of 16) for most models, the TNP-KR
code's sizes for `tnp-kr-*` (D_z 64, 6 blocks of 4 heads).

**Command**: `{command_line()}`, commit `{git_commit()}`.

**Protocol or budget**: a micro-benchmark, not a PROTOCOLS.md experiment.

**Hardware**: {hardware()}. Timings on shared 2-core machines move 10–50 % between
machines; compare rows within one run only.

{chr(10).join(table)}
"""
    report = write_results(Path(args.out) / "train_step", rows, text)
    print(f"wrote {report}")


if __name__ == "__main__":
    main()
