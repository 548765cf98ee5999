"""Training-step time of rotary TE attention against plain attention (issue 21's goal: within
1.2x of ``tnp`` at the same size): ``tnp``, ``te-tnp-rope`` with TE-TNP's structure (one block
per stream, targets read the updated context: twice the blocks), ``te-tnp-rope`` with ``tnp``'s
structure (shared weights, targets read the layer input: the same parameter count), and
``te-tnp``, at the TE-1 budget size and the library default size. Interleaved: each round
times every model for ``--steps`` steps, ``--rounds`` rounds, median per model.

    python -m benchmarks.rope_step     # writes results/perf/rope_step.md and .json
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

import tnpx
from benchmarks.harness import train_step_ms, write_results
from benchmarks.train_step import make_batch
from tnpx.provenance import command_line, git_commit, hardware

SIZES = {
    "TE-1 budget": {"dim_model": 64, "n_layers": 3, "n_heads": 4, "dim_head": 16, "dim_ff": 128},
    "default": {},
}
VARIANTS = {
    "tnp": ("tnp", {}),
    "te-tnp-rope (TE structure)": ("te-tnp-rope", {}),
    "te-tnp-rope (tnp structure)": (
        "te-tnp-rope",
        {"share_weights": True, "targets_read": "input"},
    ),
    "te-tnp": ("te-tnp", {}),
    # The pseudo-token pair: TE-PT-TNP's structure with rotary attention against the same
    # structure with plain attention (IST-style pseudo-tokens; its tokens carry x, not rotations).
    "pt-tnp-ist": ("pt-tnp-ist", {}),
    "te-pt-tnp-rope": ("te-pt-tnp-rope", {}),
}
# Each rotary variant against the plain-attention model of the same structure.
TWINS = {
    "te-tnp-rope (TE structure)": "tnp",
    "te-tnp-rope (tnp structure)": "tnp",
    "te-pt-tnp-rope": "pt-tnp-ist",
}


def step_times(model, opt, batch, n: int) -> list[float]:
    return [train_step_ms(model, opt, batch) for _ in range(n)]


def ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="results/perf")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    commit, rows = git_commit(), []
    batch = make_batch(torch.Generator().manual_seed(0))
    for size, options in SIZES.items():
        built = {}
        for label, (name, extra) in VARIANTS.items():
            torch.manual_seed(0)
            model = tnpx.build_model(name, 1, 1, **{**options, **extra})
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
            step_times(model, opt, batch, 2)  # warm-up
            built[label] = (model, opt, [])
        for _ in range(args.rounds):
            for model, opt, times in built.values():
                times += step_times(model, opt, batch, args.steps)
        medians = {label: statistics.median(times) for label, (_, _, times) in built.items()}
        for label, (model, _, _) in built.items():
            ms = medians[label]
            params = sum(p.numel() for p in model.parameters())
            twin = TWINS.get(label)
            rows.append({"size": size, "model": label, "params": params, "ms": ms,
                         "vs_tnp": ms / medians["tnp"],
                         "vs_twin": ms / medians[twin] if twin else None})  # fmt: skip
            print(f"{size:12s} {label:30s} {params:>10,d} {ms:8.1f} ms "
                  f"{ms / medians['tnp']:5.2f}x")  # fmt: skip
    table = ["| size | model | parameters | ms per step (median) | / tnp | / plain twin |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    table += [
        f"| {r['size']} | {r['model']} | {r['params']:,} | {r['ms']:.1f} | {r['vs_tnp']:.2f} "
        f"| {ratio(r['vs_twin'])} |"
        for r in rows
    ]
    same = [r["vs_tnp"] for r in rows if r["model"] == "te-tnp-rope (tnp structure)"]
    pseudo = [r["vs_twin"] for r in rows if r["model"] == "te-pt-tnp-rope"]
    text = f"""# Rotary TE attention: training-step time against `tnp`

**What**: median wall time of a training step (forward, loss, backward, AdamW), batch 16,
32 context + 128 target points, 1D; {args.rounds} interleaved rounds of {args.steps} steps per
model. `te-tnp-rope (tnp structure)` has `tnp`'s block layout and parameter count; the TE
structure has one block per stream (twice the blocks of the context stream).

**Command**: `{command_line()}`, commit `{commit}`.

**Protocol or budget**: a micro-benchmark (issue 21 goal: within 1.2x of `tnp` at the same size).

**Hardware**: {hardware()}; torch threads {args.threads}; the long training runs paused.

{chr(10).join(table)}

**Reading**: at the same structure and size, rotary attention costs
{", ".join(f"{x:.2f}x" for x in same)} of `tnp`'s step (budget, default): the rotation of
queries and keys and their float64 angles. `te-pt-tnp-rope` costs
{", ".join(f"{x:.2f}x" for x in pseudo)} of the same pseudo-token structure with plain attention
(`pt-tnp-ist`, whose tokens carry x). `te-tnp`'s pairwise MLP costs far more. The "/ plain twin"
column is the comparison at equal structure; "/ tnp" mixes in the structure's own cost.
"""
    report = write_results(Path(args.out) / "rope_step", rows, text)
    print(f"wrote {report}")


if __name__ == "__main__":
    main()
