"""The report of a BO benchmark (:mod:`.benchmark`), rewritten from all saved cells:
``OUT/README.md`` (final regret beside the paper's, time per iteration, our ordering against
the paper's), ``OUT/results.json`` and ``OUT/regret.png``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from experiments.bo.benchmark import BASELINES, BOBenchmark, labels
from experiments.kit import mean_se, pm
from tnpx.extras import pyplot
from tnpx.provenance import hardware

KERNEL_TITLES = {"matern32": "Matérn-3/2", "periodic": "periodic", "rbf": "RBF"}


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
                row.append(f"{pm(m, se)}{ref}")
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


def write_report(
    bench: BOBenchmark,
    cells: dict[tuple[str, str], dict],
    command: str,
    commit: str,
    wall_s: float,
) -> None:
    """Rewrite the benchmark's report from ``cells`` ((kernel, label) -> cell, as
    :func:`~experiments.bo.benchmark.load_cells` returns them)."""
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
    from tnpx.plot import save_figure

    plt = pyplot("plotting")

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
