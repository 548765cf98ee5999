"""Incremental context and the causal buffer (issue 22): what ``inc-tnp`` buys and costs.

Four parts, each cached as JSON under ``--out`` (a re-run skips finished parts; ``--redo``
recomputes some), then ``README.md`` and plots are written from whatever is cached:

- ``update``: the time to add one point to inc-tnp's cache of N points (``model.update``)
  against re-encoding N + 1 points, N = 10^2 .. 10^4 (KR-1 budget sizes);
- ``kr1``: KR-1 RBF (``configs/kr1-rbf-tnpx-budget.yaml``) LL of ``inc-tnp`` and ``tnp`` trained
  with the same config (runs under ``--runs``, resumed or reused), paired over the same test
  tasks, and how much inc-tnp's prediction moves when its context is reordered;
- ``sampling``: time and peak tensor memory of ``tnpx.sample`` for ``--paths`` paths of K
  targets given ``--n-ctx`` context points: tnp's rollout (today's), inc-tnp's rollout and
  inc-tnp's causal buffer, over a K sweep;
- ``covariance``: ``benchmarks/joint_samples.py``'s correlation and covariance errors against
  the GP posterior on KR-1 RBF test tasks for the three samplers, with the Monte Carlo floor,
  and the joint LL of posterior draws under the buffer's and the rollout's factorisations.

    python -m benchmarks.incremental                 # everything (~20 min on one CPU thread)
    python -m benchmarks.incremental --parts update  # one part
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from benchmarks import incremental_parts as parts
from benchmarks.incremental_report import write_report
from tnpx.provenance import command_line, git_commit, hardware

PARTS = ("update", "kr1", "sampling", "covariance")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--redo", nargs="*", choices=PARTS, default=[], help="recompute these")
    parser.add_argument("--out", default="results/incremental")
    parser.add_argument("--runs", default="runs/incremental")
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 1000, 10000])
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per update point")
    parser.add_argument("--n-ctx", type=int, default=256)
    parser.add_argument("--paths", type=int, default=16)
    parser.add_argument("--sweep", nargs="+", type=int, default=[16, 32, 64, 128])
    parser.add_argument("--sampling-repeats", type=int, default=7, help="timed calls per cell")
    parser.add_argument("--orders", type=int, default=8, help="context orders per test task")
    parser.add_argument("--tasks", type=int, default=16, help="covariance: test tasks")
    parser.add_argument("--n-targets", type=int, default=12)
    parser.add_argument("--n-samples", type=int, default=1000)
    parser.add_argument("overrides", nargs="*", help="config overrides for both KR-1 runs")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    provenance = {"command": command_line(), "commit": git_commit(), "hardware": hardware()}
    extra = ["train.progress=false", *args.overrides]
    for part in args.parts:
        path = out / f"{part}.json"
        if path.exists() and part not in args.redo:
            print(f"[{part}] cached: {path}")
            continue
        if part == "update":
            result = parts.update_cost(args.sizes, args.repeats)
        elif part == "kr1":
            result = parts.kr1_ll(args.runs, extra, args.orders)
        else:
            models = {
                name: parts.train_or_load(parts.kr1_config(name, args.runs, extra))[0]
                for name in parts.MODELS
            }
            if part == "sampling":
                result = parts.sampling_cost(
                    models, args.n_ctx, args.paths, args.sweep, args.sampling_repeats
                )
            else:
                result = parts.covariance(
                    models, args.runs, extra, args.tasks, args.n_targets, args.n_samples
                )
        result["provenance"] = provenance
        path.write_text(json.dumps(result, indent=1))
    print(write_report(out))


if __name__ == "__main__":
    main()
