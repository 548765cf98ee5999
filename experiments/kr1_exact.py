"""KR-1 RBF at the exact protocol (issue 20): the long runs of ``long-runs/kr1-rbf-<model>/``
against the TNP-KR paper's numbers, with their learning curves.

    python -m experiments.kr1_exact                     # table + curves from the runs so far
    python -m experiments.kr1_exact --test-batches 100  # a quick, smaller test set

A finished run is scored once on the test set and the cell cached (results/kr1-exact/cells).

For each run: steps done of 100,000, the latest held-out validation NLL, and, for a finished
run, the NLL on the protocol's test set (``--test-batches`` batches of 32; PROTOCOLS: 5,000)
with the GP oracle's on the same tasks, beside the paper's NLL. The figure draws held-out NLL
against training steps for every run, with the KR-1 budget cells (results/kr1/cells, batch 16)
at their step counts on the same axes. Writes ``results/kr1-exact/README.md``, ``results.json``
and ``learning_curves.png``.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from tnpx.config import load_config
from tnpx.evaluation.protocol import cached_evaluate
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training.runs import run_status

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("tnp-d", "tnp-kr-full", "cnp", "tnp-kr-fast", "convcnp")
PAPER_NLL = {"tnp-d": -0.455, "tnp-kr-full": -0.453, "cnp": 0.238}  # KR Table 3, RBF
GOAL = "each within 2 standard errors of the paper's NLL"


def curve(folder: Path) -> list[tuple[int, float]]:
    """``(step, validation NLL)`` from a run's metrics log."""
    path = folder / "metrics.csv"
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [(int(r["step"]), -float(r["val_ll"])) for r in csv.DictReader(f) if r["val_ll"]]


def budget_cells() -> dict[str, tuple[int, float]]:
    """``model -> (steps, test NLL)`` of the KR-1 RBF budget table's cells."""
    cells = {}
    for path in sorted((ROOT / "results/kr1/cells").glob("rbf-*.json")):
        cell = json.loads(path.read_text())
        cells[cell["model"]] = (int(cell["steps"]), -float(cell["metrics"]["ll"]))
    return cells


def plot(curves: dict, budget: dict, tests: dict, path: Path) -> None:
    """Validation NLL against steps per run, its budget cell (square), a finished run's test
    NLL (star, with the GP oracle's on the same tasks as a cross) and the paper's (dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (model, points) in enumerate(curves.items()):
        color = f"C{i}"
        if points:
            ax.plot(*zip(*points), "-", color=color, label=f"{model} (exact, val.)")
        if model in budget:
            ax.plot(*budget[model], "s", color=color, label=f"{model} (budget cell, test)")
        if tests.get(model) is not None:
            steps, test = points[-1][0], tests[model]
            ax.plot(steps, -test["ll"], "*", ms=10, color=color, label=f"{model} (test)")
            ax.plot(steps, -test["oracle_ll"], "x", color=color, label="GP oracle, same tasks")
        if model in PAPER_NLL:
            ax.axhline(PAPER_NLL[model], color=color, ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("training steps (batch 32; budget cells: batch 16)")
    ax.set_ylabel("held-out NLL per target (lower is better)")
    ax.set_title("KR-1 RBF: learning curves; dotted: the paper's test NLL")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--test-batches", type=int, default=5000, help="test batches of 32 (PROTOCOLS: 5,000)"
    )
    parser.add_argument("--out", default="results/kr1-exact")
    args = parser.parse_args()
    commit, out = git_commit(), ROOT / args.out
    (out / "cells").mkdir(parents=True, exist_ok=True)
    rows = {}
    for model in MODELS:
        folder = ROOT / "long-runs" / f"kr1-rbf-{model}"
        if not (folder / "config.yaml").exists():
            continue
        status = run_status(folder)
        test = None
        if status.finished:
            from tnpx import load

            cfg = load_config(folder / "config.yaml", [f"eval.n_batches={args.test_batches}"])
            cell = out / "cells" / f"{model}-test{args.test_batches}.json"
            test = cached_evaluate(load(folder / "model.pt"), cfg, cell).as_dict()
        rows[model] = {"status": status, "test": test, "curve": curve(folder)}
    (out / "results.json").write_text(
        json.dumps(
            {
                m: {
                    "steps_done": r["status"].steps_done,
                    "steps_total": r["status"].steps_total,
                    "val_nll": None if r["status"].val_ll is None else -r["status"].val_ll,
                    "curve": r["curve"],
                    "test": r["test"],
                }
                for m, r in rows.items()
            },
            indent=2,
        )
    )
    budget = budget_cells()
    plot(
        {m: r["curve"] for m, r in rows.items()},
        budget,
        {m: r["test"] for m, r in rows.items()},
        out / "learning_curves.png",
    )
    (out / "README.md").write_text(report(rows, budget, commit))
    print(f"wrote {out / 'README.md'}")


def finished_reading(model: str, test: dict, val_curve: list[tuple[int, float]]) -> str:
    """A finished run's test NLL against the goal (the paper's NLL within 2 of our standard
    errors: PROTOCOLS does not restate the paper's), against the GP oracle, and, where the
    goal is missed, what the held-out curve's last 20,000 steps say."""
    nll, se, oracle = -test["ll"], test["ll_se"], -test["oracle_ll"]
    gap = f"{nll - oracle:.3f} above the GP oracle ({oracle:.3f}) on the same tasks"
    if model not in PAPER_NLL:
        return f"{model}: test NLL {nll:.3f} ± {se:.3f}, {gap}."
    diff = nll - PAPER_NLL[model]
    if abs(diff) <= 2 * se:
        verdict = "within 2 standard errors of the paper's: the goal is met"
    elif diff < 0:
        # Better than the band asks: the paper's accuracy is reached, but the two numbers
        # differ by more than our error bar (one seed here, the paper's mean of 5 seeds).
        verdict = (
            f"{-diff:.3f} better than the paper's ({-diff / se:.0f} s.e.): the paper's "
            "accuracy is reached, outside the 2-s.e. band on the better side"
        )
    else:
        verdict = (
            f"{diff:.3f} worse than the paper's ({diff / se:.0f} s.e.): the goal is NOT met"
            + curve_trend(val_curve)
        )
    return (
        f"**{model}** (finished): test NLL {nll:.3f} ± {se:.3f} against the paper's "
        f"{PAPER_NLL[model]:.3f}, {verdict}; {gap}."
    )


def curve_trend(val_curve: list[tuple[int, float]], span: int = 20_000, flat: float = 0.01) -> str:
    """How the held-out NLL moved over the run's last ``span`` steps, as a clause: "flattened"
    when it fell by less than ``flat`` nats (32 validation batches: s.e. about 0.01)."""
    if not val_curve:
        return ""
    last_step, last = val_curve[-1]
    earlier = [(s, v) for s, v in val_curve if s <= last_step - span]
    if not earlier:
        return ""
    step, before = earlier[-1]
    moved = f" (its held-out NLL went {before:.3f} → {last:.3f} from step {step:,} to {last_step:,}"
    if before - last < flat:
        return moved + ": flattened, so more steps at this schedule would not close the gap)"
    return moved + ": still falling, so a longer schedule may close part of the gap)"


def report(rows: dict, budget: dict, commit: str) -> str:
    lines = [
        "| model | steps checkpointed | train time | latest val. NLL (step) | test NLL ± s.e. | "
        "GP oracle | paper | budget cell (steps) |",
        "| --- | ---: | ---: | --- | --- | --- | --- | --- |",
    ]
    for model, r in rows.items():
        s, t = r["status"], r["test"]
        val = "—" if s.val_ll is None else f"{-s.val_ll:.3f} ({s.val_step:,})"
        test = "—" if t is None else f"{-t['ll']:.3f} ± {t['ll_se']:.3f}"
        oracle = "—" if t is None else f"{-t['oracle_ll']:.3f}"
        paper = f"{PAPER_NLL[model]:.3f}" if model in PAPER_NLL else "—"
        cell = f"{budget[model][1]:.3f} ({budget[model][0]:,})" if model in budget else "—"
        hours = "—" if s.train_hours is None else f"{s.train_hours:.1f} h"
        lines.append(
            f"| {model} | {s.steps_done:,} / {s.steps_total:,} | {hours} | {val} | {test} | "
            f"{oracle} | {paper} | {cell} |"
        )
    unfinished = [m for m, r in rows.items() if not r["status"].finished]
    finished = [
        finished_reading(m, r["test"], r["curve"]) for m, r in rows.items() if r["test"] is not None
    ]
    reading = " ".join(finished)
    if unfinished:
        reading += (
            f" Runs still training: {', '.join(unfinished)}: their validation NLL is the held-out "
            "NLL so far on 32 validation batches (not the test set), so it is a point on the way, "
            "not a result to set beside the paper's."
        )
    return f"""# KR-1 RBF at the exact protocol (TNP-KR Table 3)

**What**: PROTOCOLS KR-1, RBF kernel: 1D GP tasks on 150 locations (50 uniform + the 100-point
grid on [−2, 2]), 3–49 noisy context points (σ = 0.1), noiseless targets at all 150. Metric:
NLL per target (lower is better). The goal ({GOAL}): TNP-D −0.455, TNP-KR-Full −0.453,
CNP 0.238.

**Command**: `{command_line()}`, commit `{commit}`. Runs: `python -m experiments.long_runs
advance --minutes M` (each `tnpx train configs/kr1-rbf.yaml model.name=<model>
train.val_every=2500 train.out_dir=long-runs/kr1-rbf-<model> --resume --max-minutes M`).

**Protocol**: exact: 100,000 batches of 32, Yogi, lr 1e-3 cosine-annealed to 1e-5, no warm-up,
global-norm clip 3.0; every model at its `kr-code` preset (the dl4bi code's function,
`docs/fidelity.md`); one seed (the paper: 5). Test: 5,000 batches of 32 once a run finishes.

**Hardware**: {hardware()}; one torch thread per run, two runs at a time, advanced in slices
across sessions and machines (train time is summed over slices).

{chr(10).join(lines)}

![learning curves](learning_curves.png)

**Reading**: {reading} The budget cells (results/kr1, batch 16, smaller models) sit where
their step counts put them on the same axes.
"""


if __name__ == "__main__":
    main()
