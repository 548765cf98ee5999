"""How close to the GP oracle can any zoo model get? The Bayes-optimal predictive of the zoo's
single-kernel prior (GPs averaged over its kernels, lengthscales, periods and noise levels,
:mod:`tnpx.gp.average`), scored against the oracle and the zoo's models on the zoo cards' test
tasks (their first batches).

A model's gap to the oracle splits, task by task, into the oracle's advantage of knowing each
task's hyper-parameters (oracle − average: no model that sees only the context can close it)
and the model's own shortfall (average − model: what training and architecture can still
win). The zoo's goal is a gap <= 0.15 nats on this prior.

    python -m experiments.bayes.reference      # results/pretrained/bayes-reference.{md,json}
    python -m experiments.bayes.reference --dry-run      # what is reused, what computed, how long
    python -m experiments.bayes.reference --cached-only  # the models' rows, never the average
    python -m experiments.bayes.reference --checkpoint run=long-runs/gp1d-v2-tnp/checkpoints/last.pt
    python -m experiments.bayes.reference --batches 2 --out /tmp/look   # a quick look

The average is the costly part (~20 min of one core at the defaults), a model's scores are not:
its per-target densities are kept in ``<out>/bayes-average.pt``, written batch by batch (a
stopped run resumes where it stopped), and reused by later runs for the same task under the
same rule (``--recompute`` ignores them), so scoring a newly shipped model costs seconds. The
first line printed says how many batches are reused and how many computed, with the time the
latter take. The report says which commits computed the reused densities. Torch runs on one
thread: the test tasks themselves differ in their last bits with the thread count (float64
sampling), so another count would be other tasks, never a cache hit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import NamedTuple

import torch

from experiments.bayes.cache import CACHE, AverageCache
from experiments.bayes.report import duration, report
from experiments.zoo.score import KERNELS, ROOT, single_kernel_sampler
from tnpx.checkpoint import load
from tnpx.config import ExperimentConfig, load_config
from tnpx.data import TaskSampler, batch_at
from tnpx.evaluation import mean_se
from tnpx.gp import HyperGrid
from tnpx.models import build_model
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.zoo import list_pretrained, pretrained

CONFIG = ROOT / "configs" / "pretrained-gp1d-tnp.yaml"  # today's zoo: the cards' test tasks
GRID = {"n_lengthscale": 12, "n_period": 96, "n_noise": 64, "refinements": 16, "tolerance": 1e-3}
FINE = {"n_lengthscale": 24, "n_period": 192, "n_noise": 128, "refinements": 24, "tolerance": 1e-4}
FINE_BATCHES = 2  # tasks the fine grid re-scores (it costs ~9x the default grid per task)
# The average's cost per task, in seconds of one core (the lab's EPYC, contexts of 1-100
# points), and the fine rule's factor: the estimate a run's plan announces, no more.
SECONDS_PER_TASK, FINE_COST = 1.7, 9


def summarise(per_target: dict[str, torch.Tensor], region: torch.Tensor) -> dict:
    """Each series' per-task mean over the targets in ``region`` (``[tasks, n_tgt]``, tasks
    with none left out), then mean ± s.e. over tasks: the oracle and the average, the average's
    gap, and each model's gap and shortfall, paired over the tasks."""
    keep = region.any(-1)
    count = region.sum(-1)[keep]
    per_task = {n: (v * region).sum(-1)[keep] / count for n, v in per_target.items()}
    oracle, average = per_task.pop("oracle"), per_task.pop("average")
    out = {"n_tasks": int(keep.sum())}
    out["oracle_ll"], out["oracle_ll_se"] = mean_se(oracle)
    out["average_ll"], out["average_ll_se"] = mean_se(average)
    out["gap"], out["gap_se"] = mean_se(oracle - average)
    out["models"] = {}
    for name, ll in per_task.items():
        gap, shortfall = mean_se(oracle - ll), mean_se(average - ll)
        out["models"][name] = {
            "ll": mean_se(ll)[0],
            "gap": gap[0],
            "gap_se": gap[1],
            "shortfall": shortfall[0],
            "shortfall_se": shortfall[1],
        }
    return out


class Part(NamedTuple):
    """A range of the reference's test batches: the first ``batches`` of ``sampler`` under the
    rule ``grid`` (:meth:`HyperGrid.from_config`'s options), with the models or without."""

    sampler: TaskSampler
    batches: int
    grid: dict
    with_models: bool = True


def parts(cfg: ExperimentConfig, n_batches: int) -> dict[str, Part]:
    """A run's parts in the order it scores them: all kernels, each kernel (a quarter as many
    of that kernel's, as the cards), and the convergence check (the first batches again with
    the rule and with the finer one)."""
    sampler = single_kernel_sampler(cfg)
    per_kernel, fine_batches = max(1, n_batches // 4), min(FINE_BATCHES, n_batches)
    return {
        "all kernels": Part(sampler, n_batches, GRID),
        **{k: Part(single_kernel_sampler(cfg, kernels=[k]), per_kernel, GRID) for k in KERNELS},
        "convergence, coarse": Part(sampler, fine_batches, GRID, False),
        "convergence, fine": Part(sampler, fine_batches, FINE, False),
    }


def score_tasks(
    sampler: TaskSampler,
    hyper_grid: HyperGrid,
    n_batches: int,
    models: dict,
    progress: bool,
    cache: AverageCache,
) -> dict:
    """Per-target log densities of the oracle, the Bayes average under ``hyper_grid`` (from
    ``cache`` where it has them) and each of ``models`` (their marginal predictive: the zoo's
    models are deterministic) on test batches ``0..n_batches-1`` of ``sampler``, summarised
    over all targets, over those inside the context's range (``interpolation``) and over those
    beyond it (``extrapolation``)."""
    oracle = build_model("gp-oracle", 1, 1)
    lo, hi = sampler.input_domain
    batches = range(n_batches)
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc="bayes average", dynamic_ncols=True, leave=False)
    densities: dict[str, list[torch.Tensor]] = {"oracle": [], "average": []}
    densities.update({name: [] for name in models})
    inside = []
    for i in batches:
        batch = batch_at(sampler, i, split="test")
        x = batch.xt[..., 0]
        inside.append((x >= lo) & (x <= hi))
        with torch.no_grad():
            for name, model in {"oracle": oracle, **models}.items():
                pred = model.predict_batch(batch)
                densities[name].append(pred.log_prob(batch.yt).sum(-1).double())
        densities["average"].append(cache.average(batch, hyper_grid))
    per_target = {name: torch.cat(v) for name, v in densities.items()}
    region = torch.cat(inside)
    out = summarise(per_target, torch.ones_like(region))
    out["interpolation"] = summarise(per_target, region)
    out["extrapolation"] = summarise(per_target, ~region)
    return out


def run(
    n_batches: int, models: dict, progress: bool = True, cache: AverageCache | None = None
) -> dict:
    """The reference on batches ``0..n_batches-1`` of the cards' test tasks (:func:`parts`),
    with ``models`` on the same tasks, and the convergence check; the average's densities from
    and into ``cache``."""
    cache = cache if cache is not None else AverageCache(None)
    cfg = load_config(CONFIG)
    prior = single_kernel_sampler(cfg).config
    start = time.perf_counter()
    scored, overall_s = {}, None
    for label, part in parts(cfg, n_batches).items():
        grid = HyperGrid.from_config(prior, **part.grid)
        chosen = models if part.with_models else {}
        scored[label] = score_tasks(part.sampler, grid, part.batches, chosen, progress, cache)
        if overall_s is None:  # the first row's
            overall_s = time.perf_counter() - start
    return {
        "config": str(CONFIG.relative_to(ROOT)),
        "batches": n_batches,
        "batch_size": cfg.eval.batch_size,
        "grid": GRID,
        "eval": scored["all kernels"],
        "per_kernel": {k: scored[k] for k in KERNELS},
        "convergence": {
            "grid": FINE,
            "batches": min(FINE_BATCHES, n_batches),
            "coarse": scored["convergence, coarse"],
            "fine": scored["convergence, fine"],
        },
        "seconds": {"overall": overall_s, "total": time.perf_counter() - start},
        "average_cache": cache.summary(),
    }


def plan(n_batches: int, cache: AverageCache) -> tuple[int, list[str]]:
    """What a run at ``n_batches`` takes from ``cache`` and what it computes: the batches to
    compute, and lines saying so per part with the time they take (no average computed)."""
    cfg = load_config(CONFIG)
    prior = single_kernel_sampler(cfg).config
    seen: set[str] = set()
    missing, total, seconds, lines = 0, 0, 0.0, []
    for label, part in parts(cfg, n_batches).items():
        batches = (batch_at(part.sampler, i, split="test") for i in range(part.batches))
        grid = HyperGrid.from_config(prior, **part.grid)
        count = cache.missing(batches, grid, seen)
        rate = SECONDS_PER_TASK * (FINE_COST if part.grid == FINE else 1)
        missing, total = missing + count, total + part.batches
        seconds += count * cfg.eval.batch_size * rate
        lines.append(
            f"  {label}: batches 0-{part.batches - 1}, {part.batches - count} reused, "
            f"{count} to compute"
        )
    head = (
        f"Bayes average: {missing} of {total} batches to compute (~{duration(seconds)} of "
        f"one core), {total - missing} reused (from {cache.path} or met earlier in the run)"
    )
    return missing, [head, *lines]


def load_models(names: list[str], checkpoints: list[str]) -> dict:
    """The zoo's models ``names`` and ``NAME=PATH`` checkpoints, in eval mode."""
    models = {name: pretrained(name).eval() for name in names}
    for spec in checkpoints:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--checkpoint {spec!r}: expected NAME=PATH")
        models[name] = load(path).eval()
    return models


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=16, help="test batches (of the cards')")
    parser.add_argument("--out", default="results/pretrained")
    zoo = [n for n in list_pretrained(include_retired=True) if n.startswith("gp1d-")]
    parser.add_argument("--models", nargs="*", default=zoo, help=f"zoo models (default {zoo})")
    parser.add_argument(
        "--checkpoint", action="append", default=[], metavar="NAME=PATH", help="another model"
    )
    parser.add_argument(
        "--recompute", action="store_true", help=f"ignore the average's densities in <out>/{CACHE}"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what a run reuses and computes, then stop"
    )
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="score the models only if the cache holds the average of every task",
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.batches < 1:
        parser.error(f"--batches must be >= 1, got {args.batches}")
    torch.set_num_threads(1)  # the tasks' bits (so the cache's keys) depend on it
    commit, out = git_commit(), Path(args.out)
    cache = AverageCache(out / CACHE, commit, reuse=not args.recompute)
    missing, lines = plan(args.batches, cache)
    print("\n".join(lines), flush=True)
    if args.dry_run:
        return 0
    if args.cached_only and missing:
        raise SystemExit(
            f"--cached-only: {cache.path} lacks the average of {missing} batches; run without "
            "--cached-only to compute them (the first line above says how long)"
        )
    models = load_models(args.models, args.checkpoint)
    out.mkdir(parents=True, exist_ok=True)
    result = run(args.batches, models, progress=not args.no_progress, cache=cache)
    cache.save()
    result.update(command=command_line(), commit=commit, hardware=hardware())
    (out / "bayes-reference.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "bayes-reference.md").write_text(report(result, result["command"], commit))
    print((out / "bayes-reference.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
