"""``tnpx bo run CONFIG``: a BO benchmark (PROTOCOLS KR-2, or the older TNP-D protocol) as a
table of final regret per surrogate and kernel, resumable cell by cell.

A config (``configs/kr2*.yaml``, ``configs/tnpd-bo*.yaml``) names the task distribution (the
data section of a KR-1 config per kernel, with overrides), the loop's settings, the trained
models (checkpoint paths with ``{kernel}``) and the baselines. Each (kernel, surrogate) cell
is saved to ``OUT/cells/KERNEL/LABEL.json`` when done; a later run skips finished cells with
the same settings. The report ``OUT/README.md``, ``OUT/results.json`` and ``OUT/regret.png``
are rewritten from all saved cells after every cell.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import yaml

from ..config import load_config
from ..data import batch_at, build_sampler
from ..kernels import KERNELS
from ..report import command_line, git_commit, hardware
from .loop import BOTask, FittedGP, NeuralSurrogate, OracleGP, RandomSearch, Surrogate, run_bo

BASELINES = ("gp-oracle", "gp-fitted", "random")
KERNEL_TITLES = {"matern32": "Matérn-3/2", "periodic": "periodic", "rbf": "RBF"}


@dataclass
class BOSettings:
    """The loop and task settings of a benchmark (everything a cell's numbers depend on)."""

    tasks_from: str = "kr1-{kernel}.yaml"  # experiment config whose data section gives tasks
    data: dict = field(default_factory=dict)  # overrides to that data section
    kernels: list = field(default_factory=lambda: ["matern32", "periodic", "rbf"])
    n_tasks: int = 100
    n_seeds: int = 5
    task_seed: int = 0
    n_init: int = 10
    n_iter: int = 50
    noise: float = 0.0
    acquisition: str = "kr-ei"
    optimizer: str = "candidates"


@dataclass
class BOBenchmark:
    name: str
    description: str
    protocol: str  # exact | budget
    notes: str  # how a budget differs from the paper
    settings: BOSettings
    models: dict  # label -> checkpoint path template with {kernel}
    baselines: list
    paper: dict  # label -> {kernel: published final regret}
    out_dir: Path
    config_path: Path


def load_benchmark(path: str | Path, out_dir: str | Path | None = None) -> BOBenchmark:
    """Read a BO benchmark config; unknown keys and baselines are errors that list valid ones."""
    path = Path(path)
    raw = yaml.safe_load(path.read_text()) or {}
    known = {"name", "description", "protocol", "notes", "bo", "models", "baselines", "paper"}
    known |= {"out_dir"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; valid: {', '.join(sorted(known))}")
    bo = raw.get("bo", {})
    valid = set(BOSettings.__dataclass_fields__)
    bad = sorted(set(bo) - valid)
    if bad:
        raise ValueError(f"{path}: unknown bo option(s) {bad}; valid: {', '.join(sorted(valid))}")
    baselines = list(raw.get("baselines", BASELINES))
    wrong = sorted(set(baselines) - set(BASELINES))
    if wrong:
        raise ValueError(f"{path}: unknown baseline(s) {wrong}; valid: {', '.join(BASELINES)}")
    return BOBenchmark(
        name=raw.get("name", path.stem),
        description=raw.get("description", ""),
        protocol=raw.get("protocol", "budget"),
        notes=raw.get("notes", ""),
        settings=BOSettings(**bo),
        models=dict(raw.get("models", {})),
        baselines=baselines,
        paper=dict(raw.get("paper", {})),
        out_dir=Path(out_dir or raw.get("out_dir", f"results/bo/{path.stem}")),
        config_path=path,
    )


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
    from ..checkpoint import load

    return NeuralSurrogate(load(checkpoint_path(bench, label, kernel)), label)


def checkpoint_path(bench: BOBenchmark, label: str, kernel: str) -> Path:
    return Path(bench.models[label].format(kernel=kernel))


# -- cells -------------------------------------------------------------------------------------
def cell_path(bench: BOBenchmark, kernel: str, label: str) -> Path:
    return bench.out_dir / "cells" / kernel / f"{label}.json"


def run_cell(bench: BOBenchmark, kernel: str, label: str, progress: bool = True) -> dict:
    """Every (task, seed) run of one surrogate on one kernel; saved and returned."""
    from tqdm import tqdm

    s = bench.settings
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
        "checkpoint": str(checkpoint_path(bench, label, kernel)) if label in bench.models else None,
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


def load_cells(bench: BOBenchmark) -> dict[tuple[str, str], dict]:
    """Saved cells whose settings match the config's (others are stale and re-run)."""
    cells = {}
    for path in sorted((bench.out_dir / "cells").glob("*/*.json")):
        cell = json.loads(path.read_text())
        if cell["settings"] == asdict(bench.settings):
            cells[(cell["kernel"], cell["label"])] = cell
    return cells


def labels(bench: BOBenchmark) -> list[str]:
    return list(bench.models) + [b for b in bench.baselines if b not in bench.models]


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
    for kernel in bench.settings.kernels:
        if only_kernels and kernel not in only_kernels:
            continue
        for label in labels(bench):
            if only_models and label not in only_models:
                continue
            if (kernel, label) in load_cells(bench):
                continue
            if label in bench.models and not checkpoint_path(bench, label, kernel).exists():
                print(
                    f"skip {kernel} {label}: no checkpoint {checkpoint_path(bench, label, kernel)}"
                )
                continue
            run_cell(bench, kernel, label, progress)
            write_report(bench, command, commit, time.perf_counter() - started)
    cells = load_cells(bench)
    write_report(bench, command, commit, time.perf_counter() - started)
    return cells


# -- the report --------------------------------------------------------------------------------
def mean_se(values: list[float]) -> tuple[float, float]:
    t = torch.tensor(values, dtype=torch.float64)
    se = t.std().item() / math.sqrt(len(t)) if len(t) > 1 else float("nan")
    return t.mean().item(), se


def final_regrets(cell: dict) -> list[float]:
    return [r[-1] for r in cell["regret"]]


def regret_table(bench: BOBenchmark, cells: dict) -> str:
    kernels = bench.settings.kernels
    head = "| model | " + " | ".join(KERNEL_TITLES.get(k, k) for k in kernels) + " |"
    lines = [head, "|" + " --- |" * (len(kernels) + 1)]
    for label in labels(bench):
        row = [label]
        for k in kernels:
            paper = bench.paper.get(label, {}).get(k)
            ref = f" ({paper:.3f})" if paper is not None else ""
            cell = cells.get((k, label))
            if cell is None:
                row.append(f"—{ref}")
            else:
                m, se = mean_se(final_regrets(cell))
                row.append(f"{m:.3f} ± {se:.3f}{ref}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def time_table(bench: BOBenchmark, cells: dict) -> str:
    kernels = bench.settings.kernels
    lines = [
        "| model | "
        + " | ".join(f"{KERNEL_TITLES.get(k, k)}: ms / iteration, cell wall time" for k in kernels)
        + " |",
        "|" + " --- |" * (len(kernels) + 1),
    ]
    for label in labels(bench):
        row = [label]
        for k in kernels:
            cell = cells.get((k, label))
            row.append(
                "—"
                if cell is None
                else f"{1e3 * cell['seconds_per_iteration']:.1f} ms, {cell['wall_s']:.0f} s"
            )
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def reading(bench: BOBenchmark, cells: dict) -> str:
    """Per kernel: our order of the models against the paper's, over the models in both."""
    out = []
    for k in bench.settings.kernels:
        both = [
            label
            for label in labels(bench)
            if (k, label) in cells and k in bench.paper.get(label, {})
        ]
        if len(both) < 2:
            continue
        ours = sorted(both, key=lambda m: mean_se(final_regrets(cells[(k, m)]))[0])
        paper = sorted(both, key=lambda m: bench.paper[m][k])
        verdict = "the same order" if ours == paper else "a different order"
        out.append(
            f"- {KERNEL_TITLES.get(k, k)}: ours {' < '.join(ours)}; paper {' < '.join(paper)} "
            f"({verdict})."
        )
    base = []
    for k in bench.settings.kernels:
        vals = {b: mean_se(final_regrets(cells[(k, b)]))[0] for b in BASELINES if (k, b) in cells}
        if vals:
            base.append(
                f"{KERNEL_TITLES.get(k, k)}: " + ", ".join(f"{b} {v:.3f}" for b, v in vals.items())
            )
    if base:
        out.append("- Baselines (final regret): " + "; ".join(base) + ".")
    return "\n".join(out) or "- Not enough cells yet to compare orderings."


def write_report(bench: BOBenchmark, command: str, commit: str, wall_s: float) -> None:
    cells = load_cells(bench)
    s = bench.settings
    bench.out_dir.mkdir(parents=True, exist_ok=True)
    missing = []
    for label in labels(bench):
        absent = [KERNEL_TITLES.get(k, k) for k in s.kernels if (k, label) not in cells]
        if absent:
            where = "all kernels" if len(absent) == len(s.kernels) else ", ".join(absent)
            missing.append(f"{label} ({where})")
    commits = sorted({c["commit"] for c in cells.values()})
    hardware_seen = sorted({c["hardware"] for c in cells.values()}) or [hardware()]
    runs = s.n_tasks * s.n_seeds
    text = f"""# {bench.name}: {bench.description}

**What**: Bayesian optimisation of 1D GP sample paths (minimisation). Each run: a task's
candidate locations with noiseless objective values, {s.n_init} initial observations (the first
of a random permutation), {s.n_iter} iterations of surrogate → acquisition `{s.acquisition}`
maximised over {
        "the candidates (re-selection allowed)"
        if s.optimizer == "candidates"
        else "the domain by BoTorch optimize_acqf, then the nearest candidate"
    } → observe
(observation noise std {s.noise}). Metric: **regret** = best objective value observed − the
task's minimum, after the last iteration (lower is better), mean ± standard error over
{s.n_tasks} tasks × {s.n_seeds} seeds = {runs} runs; the paper's number in brackets.

**Command**: `{command}`, commit `{commit}` (cells computed at: {", ".join(commits) or "—"}).
Config `{bench.config_path}`.

**Protocol or budget**: {bench.protocol}. {bench.notes}

**Hardware and time**: {"; ".join(hardware_seen)}. Time per BO iteration (surrogate fit or
conditioning + acquisition over all candidates + choice) and wall time per cell below; this
invocation ran {wall_s:.0f} s.

{regret_table(bench, cells)}

{
        "**Not run yet**: " + ", ".join(missing) + " (no checkpoint yet, or not reached)."
        if missing
        else ""
    }

Regret against iteration: `regret.png`.

**Reading**:
{reading(bench, cells)}

## Time per BO iteration

{time_table(bench, cells)}
"""
    (bench.out_dir / "README.md").write_text(text)
    summary = {
        f"{k}/{label}": {
            "final_regret": mean_se(final_regrets(c))[0],
            "final_regret_se": mean_se(final_regrets(c))[1],
            "mean_regret_by_iteration": torch.tensor(c["regret"]).mean(0).tolist(),
            "seconds_per_iteration": c["seconds_per_iteration"],
            "wall_s": c["wall_s"],
            "commit": c["commit"],
        }
        for (k, label), c in cells.items()
    }
    (bench.out_dir / "results.json").write_text(json.dumps(summary, indent=1))
    if cells:
        plot_regret(bench, cells, bench.out_dir / "regret.png")


def plot_regret(bench: BOBenchmark, cells: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plot import save_figure

    kernels = bench.settings.kernels
    fig, axes = plt.subplots(1, len(kernels), figsize=(4.6 * len(kernels), 3.6), squeeze=False)
    for ax, k in zip(axes[0], kernels):
        for label in labels(bench):
            if (k, label) not in cells:
                continue
            r = torch.tensor(cells[(k, label)]["regret"], dtype=torch.float64)
            mean = r.mean(0)
            se = r.std(0) / math.sqrt(len(r)) if len(r) > 1 else torch.zeros_like(mean)
            it = torch.arange(len(mean))
            style = "--" if label in BASELINES else "-"
            ax.plot(it, mean, style, label=label, lw=1.3)
            ax.fill_between(it, mean - se, mean + se, alpha=0.15, lw=0)
        ax.set_yscale("symlog", linthresh=1e-3)  # regret reaches 0 exactly
        ax.set_title(KERNEL_TITLES.get(k, k))
        ax.set_xlabel("iteration")
    axes[0, 0].set_ylabel("regret (mean ± s.e.)")
    for ax in axes[0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    return save_figure(fig, path)
