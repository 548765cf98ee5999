"""Measure, then plan: the speed of one training step of each planned long run at its full size
on one core, and what the planned steps cost in core-hours.

Each run in ``--runs`` (names in :data:`experiments.long_runs.driver.RUNS`) trains for ``--steps``
steps from its own config and overrides, in a throw-away folder, at one torch thread, one run at
a time; its speed is the median of the logged ``steps_per_s`` after the first log (which holds
the start-up). GFLOPs per step are counted (``torch.utils.flop_counter``), not timed. The table
is printed and written to ``--out`` (markdown) with the command, commit and hardware.

    python -m experiments.long_runs.plan --runs te1-tnp kr3-tnp-d --out plan.md
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from experiments.long_runs.driver import ROOT, RUNS
from experiments.long_runs.time_to_accuracy import step_gflops
from tnpx.config import load_config
from tnpx.provenance import command_line, git_commit, hardware


def measured_speed(name: str, steps: int, log_every: int) -> float:
    """Median steps per second of ``steps`` training steps of run ``name`` at one thread."""
    config, overrides = RUNS[name]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as folder:
        cmd = [
            sys.executable, "-m", "tnpx.cli", "train", config, *overrides,
            f"train.steps={steps}", f"train.log_every={log_every}", f"train.val_every={10 * steps}",
            f"train.checkpoint_every={steps}", f"train.out_dir={folder}", "train.progress=false",
        ]  # fmt: skip
        subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True)
        with open(Path(folder) / "metrics.csv") as f:
            rates = [float(r["steps_per_s"]) for r in csv.DictReader(f) if r["steps_per_s"]]
    return statistics.median(rates[1:] or rates)


def planned_steps(name: str) -> int:
    config, overrides = RUNS[name]
    return int(load_config(ROOT / config, overrides).train.steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", required=True, choices=sorted(RUNS))
    parser.add_argument("--steps", type=int, default=150, help="steps timed per run")
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--out", type=Path, help="markdown file for the table")
    args = parser.parse_args()
    commit = git_commit()
    rows = ["| run | steps/s (1 thread) | GFLOPs/step | planned steps | core-hours |",
            "| --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    total = 0.0
    for name in args.runs:
        speed = measured_speed(name, args.steps, args.log_every)
        config, overrides = RUNS[name]
        gflops = step_gflops(config, overrides)
        steps = planned_steps(name)
        hours = steps / speed / 3600
        total += hours
        rows.append(f"| {name} | {speed:.2f} | {gflops:.2f} | {steps:,} | {hours:.1f} |")
        print(rows[-1], flush=True)
        write(args.out, commit, [*rows, f"| all so far | | | | {total:.1f} |"])
    write(args.out, commit, [*rows, f"| all | | | | {total:.1f} |"])


def write(out: Path | None, commit: str, rows: list[str]) -> None:
    """The table so far, with its command and hardware (rewritten after every run)."""
    if out is None:
        return
    head = [f"Command: `{command_line()}`, commit `{commit}`.", f"Hardware: {hardware()}.", ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join([*head, *rows, ""]))


if __name__ == "__main__":
    main()
