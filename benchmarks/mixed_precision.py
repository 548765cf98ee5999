"""Does bfloat16 autocast make a training step faster on this CPU? (issue 34: "mixed precision
only where this CPU gains from it (measure it; no AVX-512 here)").

For each model at its KR-1 exact-protocol size (``configs/kr1-rbf.yaml``: ``kr-code`` presets,
batch 32 of the protocol's tasks), the wall time of a full training step (forward, loss,
backward, AdamW update) in float32 and under ``torch.autocast("cpu", dtype=torch.bfloat16)``,
interleaved A, B, A, B ... over ``--rounds`` rounds of ``--steps`` steps on the same batch, one
torch thread; the median per mode and their ratio. Also the loss of the first step in each
mode, so a speed-up that changes the arithmetic too much shows. The CPU's flags that decide it
(``avx512_bf16``, ``amx_bf16``: bfloat16 in hardware) are printed beside the table.

    python -m benchmarks.mixed_precision [--models tnp-kr-full tnp-d] [--rounds 6] [--steps 5]

Run it on quiet cores (no training run or test suite beside it). Writes
``results/perf/mixed_precision.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import statistics
from contextlib import nullcontext
from pathlib import Path

import torch

from benchmarks.harness import train_step_ms, write_results
from tnpx.config import load_config
from tnpx.data import batch_at, build_sampler
from tnpx.models import build_model
from tnpx.provenance import command_line, git_commit, hardware

CONFIG = "configs/kr1-rbf.yaml"
MODES = ("float32", "bfloat16 autocast")
HARDWARE_FLAGS = ("avx512f", "avx512_bf16", "amx_bf16", "avx2", "fma")


def cpu_flags() -> list[str]:
    """Which of :data:`HARDWARE_FLAGS` this CPU reports (``/proc/cpuinfo``; [] elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    present = set(line.split(":", 1)[-1].split())
    return [f for f in HARDWARE_FLAGS if f in present]


def context(mode: str):
    """The autocast context of ``mode`` (float32: none)."""
    if mode == "float32":
        return nullcontext()
    return torch.autocast("cpu", dtype=torch.bfloat16)


def step_ms(model, optimizer, batch, mode: str) -> float:
    with context(mode):
        return train_step_ms(model, optimizer, batch)


def measure(model_name: str, rounds: int, steps: int) -> dict:
    """Median step time per mode over interleaved rounds, one model and optimiser per mode
    (the same initial weights), on one KR-1 protocol batch."""
    cfg = load_config(CONFIG, [f"model.name={model_name}"])
    sampler = build_sampler(cfg.data["name"], batch_size=cfg.data["batch_size"], seed=0,
                            **cfg.data_options())  # fmt: skip
    batch = batch_at(sampler, 0)
    runs = {}
    for mode in MODES:
        torch.manual_seed(0)
        model = build_model(model_name, 1, 1, **cfg.model_options())
        runs[mode] = (model, torch.optim.AdamW(model.parameters(), lr=1e-4))
    first_loss = {}
    for mode, (model, _) in runs.items():
        with torch.no_grad(), context(mode):
            first_loss[mode] = model.training_loss(batch).item()
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for mode, (model, opt) in runs.items():  # warm-up, untimed
        step_ms(model, opt, batch, mode)
    for _ in range(rounds):
        for mode, (model, opt) in runs.items():
            times[mode] += [step_ms(model, opt, batch, mode) for _ in range(steps)]
    median = {mode: statistics.median(t) for mode, t in times.items()}
    return {
        "model": model_name,
        "median_ms": median,
        "ratio": median[MODES[1]] / median[MODES[0]],
        "first_loss": first_loss,
        "steps_timed": rounds * steps,
    }


def report(rows: list[dict], flags: list[str], args: argparse.Namespace) -> str:
    lines = [
        "| model | float32 ms/step | bf16 autocast ms/step | bf16 / fp32 | loss fp32 | loss bf16 |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        m, loss = r["median_ms"], r["first_loss"]
        lines.append(
            f"| {r['model']} | {m[MODES[0]]:.1f} | {m[MODES[1]]:.1f} | {r['ratio']:.2f} | "
            f"{loss[MODES[0]]:.4f} | {loss[MODES[1]]:.4f} |"
        )
    faster = [r["model"] for r in rows if r["ratio"] < 0.95]
    ratios = [r["ratio"] for r in rows]
    loss_gap = max(abs(r["first_loss"][MODES[1]] - r["first_loss"][MODES[0]]) for r in rows)
    # Without bfloat16 in hardware, autocast converts to and from bfloat16 around every GEMM
    # and the GEMMs themselves run emulated, so the step is expected to be slower, not faster.
    reading = (
        f"bfloat16 autocast is faster for {', '.join(faster)}."
        if faster
        else f"bfloat16 autocast makes every step {min(ratios):.1f}–{max(ratios):.1f}× slower "
        "on this CPU, which has no bfloat16 arithmetic in hardware, so training stays in "
        f"float32. The first-step losses differ by at most {loss_gap:.1e}, so the lower "
        "precision would be usable where hardware supports it; here it only costs time."
    )
    return f"""# Mixed precision on this CPU: a training step in float32 and under bfloat16 autocast

**What**: wall time of one training step (forward, loss, backward, AdamW update) per model at
its KR-1 exact-protocol size (`{CONFIG}`, `kr-code` presets, batch 32), float32 against
`torch.autocast("cpu", dtype=torch.bfloat16)`, interleaved over {args.rounds} rounds of
{args.steps} steps; medians. The loss columns are the first step's, to show what the lower
precision does to the arithmetic.

**Command**: `{command_line()}`, commit `{git_commit()}`.

**Hardware**: {hardware()}; one torch thread. CPU flags that matter: {", ".join(flags) or "none"}
(bfloat16 in hardware needs `avx512_bf16` or `amx_bf16`).

{chr(10).join(lines)}

**Reading**: {reading}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["tnp-kr-full", "tnp-d", "cnp"])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--out", default="results/perf")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    flags = cpu_flags()
    rows = [measure(m, args.rounds, args.steps) for m in args.models]
    text = report(rows, flags, args)
    write_results(Path(args.out) / "mixed_precision", {"cpu_flags": flags, "rows": rows}, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
