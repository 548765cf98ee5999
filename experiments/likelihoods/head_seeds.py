"""A family's head against the Gaussian head on its own tasks, over training seeds and budgets:
whether a CRPS gap (or a tie) in the likelihood study is the head's or one seed's.

The likelihood study (``family_scores``) trains each head once, at the config's
seed, and its s.e. is over test tasks: it leaves out how much a second training of the same
config would move the gap. Here each (seed, steps) pair trains the family's head and its
Gaussian-head control from ``configs/likelihoods/<task>.yaml`` (``train.seed``,
``train.steps``; the cosine schedule stretches with the steps) and scores both on the same
test tasks, whatever the seed (the test set is fixed by ``eval.seed``). The table gives each
pair's paired CRPS difference (s.e. over tasks) and, per budget, the mean over seeds (s.e. over
seeds: the training's randomness).

    python -m experiments.likelihoods.head_seeds     # beta: results/likelihoods/head-seeds/beta/
    python -m experiments.likelihoods.head_seeds --task student-t --steps 4000
    python -m experiments.likelihoods.head_seeds --seeds 1 --steps 4000 --out /tmp/x  # a part

Runs are trained once into ``runs/likelihoods/seeds/`` (a finished run is loaded), so parts
can be trained side by side (one process per core) and the whole table written after.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from experiments.kit import Provenance, mean_se, paired_mean_se, pm_small, rounded
from experiments.likelihoods.beta_headroom import TASKS as HEADROOM_TASKS
from experiments.likelihoods.family_scores import QUICK, ROOT, TASKS, run_family

SEEDS = (0, 1, 2, 3, 4)
STEPS = (4000, 16000)


def pair_scores(task: str, seed: int, steps: int, runs: Path, quick: bool = False) -> dict:
    """The task's head and its Gaussian-head control trained at ``seed`` for ``steps`` (into
    ``runs/seed<seed>-steps<steps>/``), scored (per-task CRPS and coverage); no per-task GP (it
    does not depend on the seed). ``quick``: a smoke run's steps and test batches."""
    extra = [*(QUICK if quick else []), f"train.seed={seed}", f"train.steps={steps}"]
    entry = run_family(task, runs / f"seed{seed}-steps{steps}", extra, gp=False)
    return {"seed": seed, "steps": steps, **entry}


def gap(entry: dict) -> tuple[float, float]:
    """The family head's CRPS less the Gaussian head's, paired over tasks (mean, s.e.)."""
    heads = entry["heads"]
    return paired_mean_se(heads[entry["family"]]["crps"], heads["gaussian"]["crps"])


def rows(entries: list[dict]) -> list[str]:
    lines = []
    for e in entries:
        own, control = e["heads"][e["family"]], e["heads"]["gaussian"]
        lines.append(
            f"| {e['steps']} | {e['seed']} | {np.mean(own['crps']):.5f} "
            f"| {np.mean(control['crps']):.5f} | {pm_small(gap(e))} "
            f"| {own['coverage']['0.9']:.3f} | {control['coverage']['0.9']:.3f} "
            f"| {own['train_s']:.0f} + {control['train_s']:.0f} |"
        )
    for steps, (m, s, n) in over_seeds(entries).items():
        lines.append(f"| {steps} | mean of {n} | | | {pm_small((m, s))} | | | |")
    return lines


def over_seeds(entries: list[dict]) -> dict[int, tuple[float, float, int]]:
    """Per budget: the mean over seeds of the paired gap, its s.e. over seeds, the seeds."""
    out = {}
    for steps in sorted({e["steps"] for e in entries}):
        gaps = [gap(e)[0] for e in entries if e["steps"] == steps]
        out[steps] = (*mean_se(gaps), len(gaps))
    return out


def reading(entries: list[dict]) -> str:
    family = entries[0]["family"]
    parts = []
    for steps, (m, s, n) in over_seeds(entries).items():
        per_seed = [gap(e) for e in entries if e["steps"] == steps]
        wins = sum(g < -2 * se for g, se in per_seed)
        losses = sum(g > 2 * se for g, se in per_seed)
        side = "below" if m < 0 else "above"
        beyond = "more" if abs(m) > 2 * s else "not more"
        parts.append(
            f"at {steps} steps the {family} head's CRPS is {side} the Gaussian head's by "
            f"{abs(m):.5f} ± {s:.5f} over {n} seeds ({beyond} than 2 s.e.); by more than 2 s.e. "
            f"over tasks it is below at {wins} seed(s) and above at {losses}"
        )
    return "; ".join(parts) + "."


def write(entries: list[dict], out: Path, task: str, provenance: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    family, first = entries[0]["family"], entries[0]
    text = "\n".join([
        f"# The {family} head against a Gaussian head on `{task}` tasks, over seeds and budgets",
        "",
        "**What**: " + __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"**Command**: `{provenance['command']}`, commit `{provenance['commit']}`.",
        "",
        f"**Protocol or budget**: `{first['config']}` (a budget: `tnp`, 64 wide, 3 layers) at "
        "each seed and step count below, both heads the same but for the head; test: "
        f"{first['n_batches']} batches of {first['batch_size']} tasks of the `test` split, the "
        "same for every run. CRPS per target point, as in `results/likelihoods/`. No paper "
        "reports this; the reference is the Gaussian head"
        + (" (the generating law's CRPS and the oracle headroom are in "
           "`results/likelihoods/beta-headroom/`)." if task in HEADROOM_TASKS else "."),
        "",
        f"**Hardware**: {provenance['hardware']}; wall {provenance['wall_s']:.0f} s (runs "
        "trained before are loaded; their training seconds are in the table).",
        "",
        f"| steps | seed | {family} head CRPS | Gaussian head CRPS | {family} − Gaussian "
        f"(paired over tasks) | {family} 90 % cov. | Gaussian 90 % cov. | train s |",
        "|" + " --- |" * 8,
        *rows(entries),
        "",
        "**Reading**: " + reading(entries),
        "",
    ])  # fmt: skip
    (out / "README.md").write_text(text)
    (out / "results.json").write_text(json.dumps(rounded(entries)) + "\n")
    print(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="beta", choices=TASKS)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--steps", type=int, nargs="+", default=list(STEPS))
    where = "the results folder (default results/likelihoods/head-seeds/<task>/)"
    parser.add_argument("--out", type=Path, help=where)
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "likelihoods" / "seeds")
    parser.add_argument("--quick", action="store_true", help="a smoke run (tests); needs --out")
    args = parser.parse_args(argv)
    if args.task == "gaussian":
        parser.error("--task gaussian: its head is the Gaussian control; name another task")
    if args.quick and args.out is None:
        parser.error("--quick writes nothing to be read as a result: give --out (a tmp folder)")
    out = args.out or ROOT / "results" / "likelihoods" / "head-seeds" / args.task
    torch.set_num_threads(1)
    provenance = Provenance()
    runs = out / "runs" if args.quick else args.runs
    entries = []
    for steps in args.steps:
        for seed in args.seeds:
            entries.append(pair_scores(args.task, seed, steps, runs, quick=args.quick))
    write(entries, out, args.task, provenance.record())
    return 0


if __name__ == "__main__":
    sys.exit(main())
