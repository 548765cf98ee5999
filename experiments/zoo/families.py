"""Where on the wide prior (c) a zoo model's gap to the GP oracle lies: its tasks split by family,
single kernel or composite sum, noisy or near noise-free ("quiet"), each cell the paired gap
(oracle − model, nats per target point) mean ± s.e. over its tasks.

    python -m experiments.zoo.families      # results/pretrained/v3-families.{md,json}
    python -m experiments.zoo.families --models gp1d-v2-tnp --batches 8

The tasks are the cards' ``eval_v3`` tasks (:func:`experiments.zoo.score.prior_sampler`),
so the "all" column repeats each card's (c) gap on as many batches.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from experiments.kit import pm
from experiments.zoo.score import prior_sampler
from tnpx.data import batch_at
from tnpx.evaluation import mean_se
from tnpx.models import build_model
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.zoo import list_pretrained, pretrained

# family -> (composite, quiet): the prior's two binary choices per task
FAMILIES = {
    "single, noisy": (False, False),
    "single, quiet": (False, True),
    "composite, noisy": (True, False),
    "composite, quiet": (True, True),
}


def task_gaps(names: list[str], n_batches: int) -> tuple[dict[str, torch.Tensor], dict]:
    """Per task of the first ``n_batches`` (c) test batches: each model's gap to the oracle
    (``[tasks]`` float64 per name) and the tasks' ``composite`` / ``quiet`` flags."""
    sampler = prior_sampler("eval_v3")
    oracle = build_model("gp-oracle", sampler.dim_x, sampler.dim_y)
    models = {name: pretrained(name) for name in names}
    gaps: dict[str, list[torch.Tensor]] = {name: [] for name in names}
    flags: dict[str, list[torch.Tensor]] = {"composite": [], "quiet": []}
    with torch.no_grad():
        for i in range(n_batches):
            batch = batch_at(sampler, i, split="test")
            best = oracle.log_likelihood(batch).double()
            for name, model in models.items():
                ll = model.log_likelihood(batch, model.predict_batch(batch)).double()
                gaps[name].append(best - ll)
            for key in flags:
                flags[key].append(batch.info[key].bool())
    return {n: torch.cat(g) for n, g in gaps.items()}, {k: torch.cat(v) for k, v in flags.items()}


def breakdown(gaps: dict[str, torch.Tensor], flags: dict) -> dict[str, dict]:
    """Each model's gap, mean and s.e., over all tasks and per family (with its task count)."""
    out = {}
    for name, gap in gaps.items():
        cells = {"all": [*mean_se(gap), gap.numel()]}
        for family, (composite, quiet) in FAMILIES.items():
            mask = (flags["composite"] == composite) & (flags["quiet"] == quiet)
            cells[family] = [*mean_se(gap[mask]), int(mask.sum())]
        out[name] = cells
    return out


def report(rows: dict[str, dict], command: str, commit: str, seconds: float) -> str:
    columns = ["all", *FAMILIES]
    first = next(iter(rows.values()))
    header = " | ".join(f"{c} ({first[c][2]})" for c in columns)
    lines = [f"| model | {header} |", "|" + " --- |" * (len(columns) + 1)]
    for name, cells in rows.items():
        lines.append(
            f"| `{name}` | " + " | ".join(pm(cells[c][0], cells[c][1]) for c in columns)
            + " |"
        )  # fmt: skip
    best = {c: min(rows, key=lambda n: rows[n][c][0]) for c in columns}
    reading = "; ".join(f"{c}: `{best[c]}` ({rows[best[c]][c][0]:.3f})" for c in columns)
    return "\n".join(
        [
            "# The zoo on the v3 prior, by task family",
            "",
            "**What**: each model's gap to the GP oracle (oracle − model LL per target point, "
            "paired over tasks; lower is better) on the v3 prior's test tasks (the cards' "
            "`eval_v3`), over all of them and split by family: one kernel or a composite sum, "
            "noisy or near noise-free (quiet: noise std 1e-3 times the output scale). Task "
            "counts in brackets.",
            "",
            f"**Command**: `{command}`, commit `{commit}`.",
            "",
            "**Protocol or budget**: not a paper experiment (no paper number applies); the GP "
            "oracle is each row's reference, as in `zoo.md`.",
            "",
            f"**Hardware**: {hardware()}; {seconds:.0f} s in all.",
            "",
            *lines,
            "",
            f"**Reading**: lowest gap per column: {reading}.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    zoo = [n for n in list_pretrained() if n.startswith("gp1d-v")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=zoo, help=f"zoo names (default {zoo})")
    parser.add_argument("--batches", type=int, default=64, help="test batches of 16 tasks")
    parser.add_argument("--out", default="results/pretrained")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the cards' tasks are drawn on one thread
    start = time.perf_counter()
    rows = breakdown(*task_gaps(args.models, args.batches))
    text = report(rows, command_line(), git_commit(), time.perf_counter() - start)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "v3-families.md").write_text(text)
    (out / "v3-families.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
