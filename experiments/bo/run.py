"""Running a BO benchmark (:mod:`.benchmark`): its tasks, a surrogate per row, one
(kernel, surrogate) cell at a time, saved as soon as it is done, the report rewritten after
every cell (:mod:`.report`). The command line:

    python -m experiments.bo.run configs/kr2-budget.yaml [--models LABEL ...]
        [--kernels KERNEL ...] [--out OUT] [--no-progress]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

import torch

from experiments.bo.benchmark import (
    BOBenchmark,
    cell_path,
    checkpoint_digest,
    checkpoint_path,
    labels,
    load_benchmark,
    load_cells,
)
from experiments.bo.report import write_report
from tnpx.bo import (
    BOTask,
    FittedGP,
    NeuralSurrogate,
    OracleGP,
    RandomSearch,
    Surrogate,
    run_bo,
)
from tnpx.config import load_config
from tnpx.data import batch_at, build_sampler
from tnpx.extras import require
from tnpx.gp import KERNELS
from tnpx.provenance import command_line, git_commit, hardware


# -- tasks -------------------------------------------------------------------------------------
def bo_tasks(bench: BOBenchmark, kernel: str) -> list[BOTask]:
    """The benchmark's ``n_tasks`` tasks for ``kernel``: each its own draw (own locations and
    hyper-parameters) from the test split of the named config's GP prior."""
    s = bench.settings
    source = bench.config_path.parent / s.tasks_from.format(kernel=kernel)
    experiment = load_config(source)
    options = {**experiment.data_options(), **s.data, "min_ctx": 0, "max_ctx": 0}
    sampler = build_sampler(experiment.data["name"], batch_size=1, seed=s.task_seed, **options)
    tasks = []
    for i in range(s.n_tasks):
        b = batch_at(sampler, i, split="test")
        hyper = {k: float(v[0]) for k, v in b.info.items() if k != "kernel"}
        hyper["kernel"] = KERNELS[int(b.info["kernel"][0])]
        tasks.append(BOTask(b.xt[0].double(), b.yt[0, :, 0].double(), hyper))
    return tasks


def surrogate_for(bench: BOBenchmark, label: str, kernel: str) -> Surrogate:
    if label == "gp-oracle":
        return OracleGP(noise=bench.settings.noise)
    if label == "gp-fitted":
        return FittedGP()
    if label == "random":
        return RandomSearch()
    from tnpx.checkpoint import load

    return NeuralSurrogate(load(checkpoint_path(bench, label, kernel)), label)


# -- cells -------------------------------------------------------------------------------------
def run_cell(bench: BOBenchmark, kernel: str, label: str, progress: bool = True) -> dict:
    """Every (task, seed) run of one surrogate on one kernel; saved and returned."""
    from tqdm import tqdm

    s = bench.settings
    checkpoint = checkpoint_path(bench, label, kernel) if label in bench.models else None
    digest = None if checkpoint is None else checkpoint_digest(checkpoint)  # before it loads
    surrogate = surrogate_for(bench, label, kernel)
    tasks = bo_tasks(bench, kernel)
    runs = [(i, seed) for i in range(s.n_tasks) for seed in range(s.n_seeds)]
    regrets, seconds = [], []
    start = time.perf_counter()
    bounds = _bounds(tasks[0])
    for i, seed in tqdm(runs, desc=f"{kernel} {label}", disable=not progress, leave=False):
        run = run_bo(
            surrogate,
            tasks[i],
            n_init=s.n_init,
            n_iter=s.n_iter,
            acquisition=s.acquisition,
            seed=1_000_003 * seed + i,  # run (task i, seed) is reproducible on its own
            noise=s.noise,
            optimizer=s.optimizer,
            bounds=bounds,
        )
        regrets.append(run.regret)
        seconds.extend(run.seconds)
    cell = {
        "kernel": kernel,
        "label": label,
        "checkpoint": None if checkpoint is None else str(checkpoint),
        "checkpoint_sha256": digest,
        "settings": asdict(s),
        "regret": regrets,
        "seconds_per_iteration": sum(seconds) / max(len(seconds), 1),
        "wall_s": time.perf_counter() - start,
        "commit": git_commit(),
        "hardware": hardware(),
    }
    path = cell_path(bench, kernel, label)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cell))
    return cell


def _bounds(task: BOTask) -> torch.Tensor:
    return torch.stack([task.x.min(0).values, task.x.max(0).values])


def run_benchmark(
    bench: BOBenchmark,
    only_models: list[str] | None = None,
    only_kernels: list[str] | None = None,
    progress: bool = True,
) -> dict:
    """Run every missing cell (those whose checkpoint exists), rewriting the report after
    each; returns the cells."""
    started = time.perf_counter()
    command, commit = command_line(), git_commit()
    done = load_cells(bench)  # once: it hashes every surrogate's checkpoint
    for kernel in bench.settings.kernels:
        if only_kernels and kernel not in only_kernels:
            continue
        for label in labels(bench):
            if only_models and label not in only_models:
                continue
            if (kernel, label) in done:
                continue
            if label in bench.models and not checkpoint_path(bench, label, kernel).exists():
                print(
                    f"skip {kernel} {label}: no checkpoint {checkpoint_path(bench, label, kernel)}"
                )
                continue
            done[(kernel, label)] = run_cell(bench, kernel, label, progress)
            write_report(bench, done, command, commit, time.perf_counter() - started)
    write_report(bench, done, command, commit, time.perf_counter() - started)
    return done


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m experiments.bo.run",
        description="Runs every (kernel, surrogate) cell of a BO benchmark config (e.g. "
        "configs/kr2-budget.yaml) that is not yet saved and writes OUT/README.md (final regret "
        "table, paper numbers beside), results.json and regret.png. Cells whose model "
        "checkpoint is missing are skipped.",
    )
    p.add_argument("config")
    p.add_argument("--models", nargs="+", metavar="LABEL", help="only these surrogates")
    p.add_argument("--kernels", nargs="+", metavar="KERNEL", help="only these kernels")
    p.add_argument("--out", help="output folder (default: the config's out_dir)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    require("matplotlib", "plot", "plotting")  # the regret plot: say so before running
    bench = load_benchmark(args.config, args.out)
    run_benchmark(bench, args.models, args.kernels, progress=not args.no_progress)
    print(f"wrote {bench.out_dir / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
