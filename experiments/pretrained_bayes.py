"""How close to the GP oracle can any zoo model get? The Bayes-optimal predictive of the zoo's
single-kernel prior (GPs averaged over its kernels, lengthscales, periods and noise levels,
:mod:`tnpx.gp_average`), scored against the oracle and the zoo's models on the zoo cards' test
tasks (their first batches).

A model's gap to the oracle splits, task by task, into the oracle's advantage of knowing each
task's hyper-parameters (oracle − average: no model that sees only the context can close it)
and the model's own shortfall (average − model: what training and architecture can still
win). Issue 20's goal is a gap <= 0.15 nats on this prior.

    python -m experiments.pretrained_bayes      # results/pretrained/bayes-reference.{md,json}
    python -m experiments.pretrained_bayes --checkpoint v2=long-runs/gp1d-v2-tnp/checkpoints/last.pt
    python -m experiments.pretrained_bayes --batches 2 --out /tmp/look   # a quick look

The average is the costly part (~16 min of one core at the defaults), a model's scores are not:
its per-target densities are kept in ``<out>/bayes-average.pt`` and reused by later runs for the
same task under the same rule (``--recompute`` ignores them), so scoring a newly shipped model
costs seconds. The report says which commits computed the reused densities.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from experiments.bayes_cache import CACHE, AverageCache
from experiments.pretrained_eval import KERNELS, ROOT, single_kernel_sampler
from tnpx.checkpoint import load
from tnpx.config import load_config
from tnpx.data import GPConfig, batch_at
from tnpx.evaluation.protocol import mean_se
from tnpx.gp_average import HyperGrid
from tnpx.models import build_model
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.zoo import list_pretrained, pretrained

CONFIG = ROOT / "configs" / "pretrained-gp1d-tnp.yaml"  # today's zoo: the cards' test tasks
GRID = {"n_lengthscale": 12, "n_period": 96, "n_noise": 64, "refinements": 16, "tolerance": 1e-3}
FINE = {"n_lengthscale": 24, "n_period": 192, "n_noise": 128, "refinements": 24, "tolerance": 1e-4}
FINE_BATCHES = 2  # tasks the fine grid re-scores (it costs ~7x the default grid per task)
TARGET_GAP = 0.15  # issue 20's goal on this prior


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


def score_tasks(
    sampler,
    prior: GPConfig,
    n_batches: int,
    grid: dict,
    models: dict,
    progress: bool,
    cache: AverageCache,
) -> dict:
    """Per-target log densities of the oracle, the Bayes average (from ``cache`` where it has
    them) and each of ``models`` (their marginal predictive: the zoo's models are
    deterministic) on test batches ``0..n_batches-1`` of ``sampler``, summarised over all
    targets, over those inside the context's range (``interpolation``) and over those beyond it
    (``extrapolation``)."""
    oracle = build_model("gp-oracle", 1, 1)
    hyper_grid = HyperGrid.from_config(prior, **grid)
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
        densities["average"].append(cache.average(batch, grid, prior, hyper_grid))
    per_target = {name: torch.cat(v) for name, v in densities.items()}
    region = torch.cat(inside)
    out = summarise(per_target, torch.ones_like(region))
    out["interpolation"] = summarise(per_target, region)
    out["extrapolation"] = summarise(per_target, ~region)
    return out


def run(
    n_batches: int, models: dict, progress: bool = True, cache: AverageCache | None = None
) -> dict:
    """The reference on batches ``0..n_batches-1`` of the cards' test tasks (per kernel: a
    quarter as many of each kernel's, as the cards), with ``models`` on the same tasks, and
    the convergence check; the average's densities from and into ``cache``."""
    cache = cache if cache is not None else AverageCache(None)
    cfg = load_config(CONFIG)
    sampler = single_kernel_sampler(cfg)
    prior = sampler.config
    start = time.perf_counter()
    overall = score_tasks(sampler, prior, n_batches, GRID, models, progress, cache)
    overall_s = time.perf_counter() - start
    per_kernel = {
        k: score_tasks(
            single_kernel_sampler(cfg, kernels=[k]),
            prior,
            max(1, n_batches // 4),
            GRID,
            models,
            progress,
            cache,
        )
        for k in KERNELS
    }
    fine_batches = min(FINE_BATCHES, n_batches)
    coarse = score_tasks(sampler, prior, fine_batches, GRID, {}, progress, cache)
    fine = score_tasks(sampler, prior, fine_batches, FINE, {}, progress, cache)
    return {
        "config": str(CONFIG.relative_to(ROOT)),
        "batches": n_batches,
        "batch_size": cfg.eval.batch_size,
        "grid": GRID,
        "eval": overall,
        "per_kernel": per_kernel,
        "convergence": {"grid": FINE, "batches": fine_batches, "coarse": coarse, "fine": fine},
        "seconds": {"overall": overall_s, "total": time.perf_counter() - start},
        "average_cache": cache.summary(),
    }


def shortfalls(result: dict, name: str) -> tuple[float, float, float]:
    """Model ``name``'s shortfall (average − model) interpolating, extrapolating and on
    periodic tasks, from a :func:`run` result."""
    e = result["eval"]
    return (
        e["interpolation"]["models"][name]["shortfall"],
        e["extrapolation"]["models"][name]["shortfall"],
        result["per_kernel"]["periodic"]["models"][name]["shortfall"],
    )


def reading(result: dict) -> str:
    e, conv = result["eval"], result["convergence"]
    worst = max(KERNELS, key=lambda k: result["per_kernel"][k]["gap"])
    shift = conv["fine"]["average_ll"] - conv["coarse"]["average_ll"]
    parts = [
        f"Knowing each task's hyper-parameters is worth {e['gap']:.3f} ± {e['gap_se']:.3f} nats "
        "per target point on this prior: the part of any model's gap to the oracle that no "
        f"model seeing only the context can remove (issue 20's goal: a gap <= {TARGET_GAP}).",
        f"The largest part is on {worst} tasks ({result['per_kernel'][worst]['gap']:.3f}).",
        f"A finer rule moves the average's LL by {shift:+.4f} on "
        f"{conv['fine']['n_tasks']} tasks"
        + (
            ", so the rule is fine enough for these figures."
            if abs(shift) <= max(0.005, e["gap_se"])
            else f": the rule's own error is of that order (s.e. {e['gap_se']:.3f})."
        ),
    ]
    for name, m in e["models"].items():
        inter, extra, periodic = shortfalls(result, name)
        parts.append(
            f"`{name}`'s gap of {m['gap']:.3f} is {m['shortfall']:.3f} its own shortfall "
            f"({inter:.3f} interpolating, {extra:.3f} extrapolating; {periodic:.3f} on periodic "
            "tasks)."
        )
    return " ".join(parts)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def timing(result: dict) -> str:
    """This run's time, and where the average's densities came from."""
    seconds, cache = result["seconds"], result.get("average_cache", {})
    text = (
        f"{_duration(seconds['total'])} in all ({_duration(seconds['overall'])} for the "
        f"{result['eval']['n_tasks']:,} tasks of the first row)"
    )
    reused = cache.get("reused_batches", {})
    if not reused:
        return text + "."
    commits = ", ".join(f"`{c}` ({n})" for c, n in sorted(reused.items()))
    return (
        f"{text}; the Bayes average's densities were computed here for "
        f"{cache['computed_batches']} batches and reused for {sum(reused.values())} from "
        f"`{CACHE}`, computed by this command at the commits {commits} (batches in brackets) "
        "for the same tasks and the same rule."
    )


def _cell(mean: float, se: float) -> str:
    return f"{mean:.3f} ± {se:.3f}"


def _kernel_rows(result: dict) -> list[tuple[str, dict]]:
    return [(k, result["per_kernel"][k]) for k in KERNELS]


def table(first: str, entries: list[tuple[str, dict]]) -> list[str]:
    """Markdown rows: per entry the oracle, the average, its gap, and each model's gap with its
    shortfall in brackets."""
    names = list(entries[0][1]["models"])
    rows = [
        f"| {first} | GP oracle LL | Bayes average LL | gap (oracle − average) | "
        + " | ".join(f"`{n}` gap (shortfall)" for n in names)
        + " |",
        "|" + " --- |" * (4 + len(names)),
    ]
    for label, entry in entries:
        cells = [
            f"{label} ({entry['n_tasks']:,})",
            _cell(entry["oracle_ll"], entry["oracle_ll_se"]),
            _cell(entry["average_ll"], entry["average_ll_se"]),
            _cell(entry["gap"], entry["gap_se"]),
        ]
        cells += [
            f"{m['gap']:.3f} ({m['shortfall']:.3f} ± {m['shortfall_se']:.3f})"
            for m in entry["models"].values()
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def report(result: dict, command: str, commit: str) -> str:
    e, g, conv = result["eval"], result["grid"], result["convergence"]
    entries = [("all kernels", e), *_kernel_rows(result)]
    rows = table("tasks", entries)
    regions = table(
        "targets",
        [
            (f"{label}, {region}", entry[region])
            for label, entry in entries
            for region in ("interpolation", "extrapolation")
        ],
    )
    return f"""# The zoo's single-kernel prior: how close to the GP oracle a model can get

**What**: the Bayes-optimal predictive of the single-kernel prior that the zoo is scored on
(`{result["config"]}`: five kernels, lengthscale log-U[0.1, 2], period U[0.5, 2], noise std
log-U[0.01, 0.3], variance 1; 1–100 context points on [-2, 2], 100 targets on [-3, 3]): GPs
averaged over the kernel and every hyper-parameter, weighted by their evidence on the context
(`tnpx.gp_average`: an adaptive midpoint rule starting from {g["n_lengthscale"]} lengthscale ×
{g["n_period"]} frequency cells, split where the posterior mass is until the evidence estimate
moves by less than {g["tolerance"]:g} nats in two rounds running, and {g["n_noise"]} noise
levels). Metric: LL per target point (higher is better), mean ± s.e.
over tasks. The GP oracle knows each task's kernel, hyper-parameters and noise; the average
knows only the prior, as a trained model does, so its gap (oracle − average, paired over tasks)
is the part of any model's gap that training cannot remove. Each model's gap (oracle − model)
is beside it, and in brackets its shortfall (average − model): what training can still win.

**Command**: `{command}`, commit `{commit}`.

**Protocol or budget**: the zoo cards' test tasks (test split, `eval.seed`), their first
{result["batches"]} batches of {result["batch_size"]} (the cards score 64), per kernel a
quarter as many of that kernel's tasks. Not a paper experiment: no paper number applies.
Convergence: the first {conv["batches"]} batches again with twice as many cells on every axis
and a tolerance of {conv["grid"]["tolerance"]:g}.

**Hardware and time**: {result["hardware"]}; {timing(result)}

{chr(10).join(rows)}

The same tasks, their targets inside the context's range [-2, 2] (interpolation) and beyond it
(extrapolation), each task's mean over those targets:

{chr(10).join(regions)}

Convergence ({conv["fine"]["n_tasks"]} tasks): average LL {conv["coarse"]["average_ll"]:.4f} with
the rule above, {conv["fine"]["average_ll"]:.4f} with the finer one.

**Reading**: {reading(result)}
"""


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
    zoo = [n for n in list_pretrained() if n.startswith("gp1d-")]
    parser.add_argument("--models", nargs="*", default=zoo, help=f"zoo models (default {zoo})")
    parser.add_argument(
        "--checkpoint", action="append", default=[], metavar="NAME=PATH", help="another model"
    )
    parser.add_argument(
        "--recompute", action="store_true", help=f"ignore the average's densities in <out>/{CACHE}"
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    models = load_models(args.models, args.checkpoint)
    command, commit = command_line(), git_commit()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = AverageCache(out / CACHE, commit, reuse=not args.recompute)
    result = run(args.batches, models, progress=not args.no_progress, cache=cache)
    cache.save()
    result.update(command=command, commit=commit, hardware=hardware())
    (out / "bayes-reference.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "bayes-reference.md").write_text(report(result, command, commit))
    print((out / "bayes-reference.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
