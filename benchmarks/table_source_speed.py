"""How fast the ``table`` task source loads a large table and samples a batch (issue 35,
item 7), against a training step of the default model.

Writes a long CSV of ``--rows`` rows in ``--tasks`` tasks (random task sizes around the mean,
rows shuffled, string task keys, one input and one output), then times, in one process:
building the sampler from the file (read, check, sort by task, split, normalise), sampling a
batch of 16 tasks of each split, and one training step (forward, backward, AdamW) of the
default ``tnp`` on such a batch. Medians over ``--repeats``; one torch thread.

    python -m benchmarks.table_source_speed          # results/perf/table_source.{md,json}
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import tnpx
from benchmarks.harness import median_seconds, train_step_ms
from tnpx.data import batch_at, build_sampler
from tnpx.provenance import command_line, git_commit, hardware


def write_table(path: Path, rows: int, tasks: int, seed: int = 0) -> None:
    """A long table: task sizes ~ 2 * U(0, mean), shuffled rows, string keys."""
    rng = np.random.default_rng(seed)
    sizes = rng.multinomial(rows - 2 * tasks, np.full(tasks, 1 / tasks)) + 2
    keys = np.repeat(np.array([f"task{i:05d}" for i in range(tasks)]), sizes)
    x = rng.uniform(0, 10, rows)
    y = np.sin(x + rng.uniform(0, 6, tasks).repeat(sizes)) + 0.1 * rng.normal(size=rows)
    order = rng.permutation(rows)
    pd.DataFrame({"task": keys[order], "x": x[order], "y": y[order]}).to_csv(path, index=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="results/perf")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    load_average = os.getloadavg()[0]  # other processes slow every row alike
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "table.csv"
        write_table(path, args.rows, args.tasks)
        options = dict(path=str(path), task="task", x=["x"], y=["y"])
        load_s, sampler = median_seconds(
            lambda: build_sampler("table", 16, 0, **options), args.repeats
        )
    sample_s = {
        split: median_seconds(lambda s=split: batch_at(sampler, 0, split=s), 20)[0]
        for split in ("train", "val", "test")
    }
    batch = batch_at(sampler, 0)
    model = tnpx.build_model("tnp", 1, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    train_step_ms(model, optimizer, batch)  # warm-up
    step_s = statistics.median(train_step_ms(model, optimizer, batch) for _ in range(10)) / 1e3
    result = {
        "rows": args.rows,
        "tasks": args.tasks,
        "points_per_task": args.rows / args.tasks,
        "load_s": load_s,
        "sample_s": sample_s,
        "train_step_s": step_s,
        "sample_share_of_step": sample_s["train"] / step_s,
        "load_average": load_average,
        "batch_shape": list(batch.xc.shape) + list(batch.xt.shape[1:2]),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table_source.json").write_text(json.dumps(result, indent=1) + "\n")
    text = f"""# The table task source: load and sample time against a training step

**What**: wall time to build the `table` source from a CSV of {args.rows:,} rows in
{args.tasks:,} tasks (read, check, sort by task, split by task, normalise on the training
tasks), to sample a batch of 16 tasks, and one training step of the default `tnp` (forward,
backward, AdamW) on such a batch. Issue 35's goals: a 10⁶-row table of 10⁴ tasks loads in
seconds; sampling costs under 10 % of a training step.

**Command**: `{command_line()}`, commit `{git_commit()}`.

**Protocol**: not a paper experiment. Medians: {args.repeats} loads, 20 samples per split,
10 steps (after one warm-up); one torch thread; the table is written to a temporary folder
first (not timed). The batch: context {batch.xc.shape[1]} and targets {batch.xt.shape[1]}
points at most (padded, masks).

**Hardware**: {hardware()}; load average {load_average:.1f} at the start (other processes on
the 2 cores slow every row alike: the shares are the reading).

| what | seconds | share of a training step |
| --- | ---: | ---: |
| load {args.rows:,} rows, {args.tasks:,} tasks | {load_s:.2f} | — |
| sample a training batch | {sample_s["train"]:.5f} | {100 * sample_s["train"] / step_s:.1f} % |
| sample a validation batch | {sample_s["val"]:.5f} | {100 * sample_s["val"] / step_s:.1f} % |
| sample a test batch | {sample_s["test"]:.5f} | {100 * sample_s["test"] / step_s:.1f} % |
| one training step of the default `tnp` | {step_s:.4f} | 100 % |

**Reading**: loading takes {load_s:.1f} s ({"met" if load_s < 10 else "missed"}: "seconds");
a batch costs {100 * sample_s["train"] / step_s:.1f} % of a step
({"met" if sample_s["train"] / step_s < 0.1 else "missed"}: < 10 %).
"""
    (out / "table_source.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
