"""The TNP-KR paper's GP tables at their protocol's data: the long runs of KR-1
(``long-runs/kr1-<kernel>-<model>/``: RBF, Matérn-3/2 and periodic) and KR-3
(``long-runs/kr3-<model>/``: 2D RBF) against the paper's numbers, with their learning curves.

    python -m experiments.paper_tables.kr_exact                      # KR-1: table + curves
    python -m experiments.paper_tables.kr_exact --table kr3          # KR-3
    python -m experiments.paper_tables.kr_exact --test-batches 100   # a quick, smaller test set

A finished run is scored once on the test set and the cell cached (results/<table>-exact/cells).

For each run: steps done, the latest held-out validation NLL, and, for a finished run, the NLL on
the protocol's test set (``--test-batches`` batches; PROTOCOLS: 5,000) with the GP oracle's on
the same tasks, beside the paper's NLL. The figure draws held-out NLL against training steps for
every run, a panel per kernel, with the table's budget cells (results/<table>/cells) at their
step counts on the same axes. Writes ``results/<table>-exact/README.md``, ``results.json`` and
``learning_curves.png``.
"""

from __future__ import annotations

import argparse
import csv
import json
from dataclasses import dataclass
from pathlib import Path

from experiments.kit import pm
from experiments.long_runs.driver import RUNS
from tnpx.config import load_config
from tnpx.evaluation import cached_evaluate
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import RunStatus, run_status

ROOT = Path(__file__).resolve().parents[2]
KERNEL_NAMES = {"rbf": "RBF", "matern32": "Matérn-3/2", "periodic": "periodic"}
GOAL = "each within 2 standard errors of the paper's NLL"
# The test s.e. this table reports: over the 5,000 test batches, not the tasks. The protocol's
# batch shares one context size and one set of input locations among its tasks, so they are not
# independent (cnp-gap-analysis.md, "Test set and metric").
TEST_SE = "ll_se_batches"


@dataclass(frozen=True)
class ExactTable:
    """One of the paper's tables at its protocol: its kernels, the paper's test NLL per
    (kernel, model), the batch size and what its README says of the task and the protocol."""

    name: str  # "kr1": runs long-runs/kr1-..., results/kr1-exact, budget cells results/kr1/cells
    title: str
    kernels: tuple[str, ...]
    paper: dict[tuple[str, str], float]
    batch_size: int
    what: str
    protocol: str
    runs: str  # how its runs are trained

    @property
    def label(self) -> str:
        """``KR-1`` for ``kr1``."""
        return f"{self.name[:2].upper()}-{self.name[2:]}"

    def run_prefix(self, kernel: str) -> str:
        """Run names of ``kernel``'s runs start with this (KR-3 has one kernel, not named)."""
        return f"{self.name}-{kernel}-" if len(self.kernels) > 1 else f"{self.name}-"

    @property
    def se_note(self) -> str:
        return (
            f"Test s.e.: over the 5,000 test batches (each batch's {self.batch_size} tasks share "
            "a context size and input locations, so they are not independent, and an s.e. over "
            "tasks would understate the noise)."
        )


TABLES = {
    "kr1": ExactTable(
        name="kr1",
        title="KR-1 at the exact protocol (TNP-KR Table 3)",
        kernels=("rbf", "matern32", "periodic"),
        # The TNP-KR paper's KR-1 test NLL (Table 3; PROTOCOLS.md): the goal.
        paper={
            ("rbf", "tnp-d"): -0.455,
            ("rbf", "tnp-kr-full"): -0.453,
            ("rbf", "cnp"): 0.238,
            ("matern32", "tnp-d"): -0.023,
            ("matern32", "tnp-kr-full"): -0.024,
            ("periodic", "tnp-d"): 0.516,
            ("periodic", "tnp-kr-full"): 0.516,
        },
        batch_size=32,
        what="1D GP tasks (RBF, Matérn-3/2 or periodic kernel) on 150 locations (50 uniform + "
        "the 100-point grid on [−2, 2]), 3–49 noisy context points (σ = 0.1), noiseless targets "
        "at all 150",
        protocol="exact: 100,000 batches of 32, Yogi, lr 1e-3 cosine-annealed to 1e-5, no "
        "warm-up, global-norm clip 3.0; every model at its `kr-code` preset (the dl4bi code's "
        "function, `docs/fidelity.md`); one seed (the paper: 5). Test: 5,000 batches of 32 once a "
        "run finishes.",
        runs="`python -m experiments.long_runs.driver advance --minutes M` (each `tnpx train "
        "configs/kr1-<kernel>.yaml model.name=<model> train.val_every=2500 "
        "train.out_dir=long-runs/kr1-<kernel>-<model> --resume --max-minutes M`; `cnp-lecun`: the "
        "same from Flax's `lecun_normal` weights, `train.weight_init=lecun_normal`, "
        "[cnp-gap-analysis.md](cnp-gap-analysis.md))",
    ),
    "kr3": ExactTable(
        name="kr3",
        title="KR-3 at the protocol's data and sizes (TNP-KR Table 5)",
        kernels=("rbf",),
        # The TNP-KR paper's KR-3 test NLL (Table 5; PROTOCOLS.md): the goal.
        paper={("rbf", "tnp-d"): 0.484, ("rbf", "tnp-kr-full"): 0.482},
        batch_size=16,
        what="2D RBF GP tasks on [−2, 2]²: 128 uniform locations + the 256 of a 16×16 grid, "
        "12–127 of the uniform ones noisy context points (σ = 0.1), noiseless targets at all 384",
        protocol="the protocol's data, batch 16, global-norm clip 3.0 and every model at its "
        "`kr-code` preset with all 6 layers (the dl4bi code's function, `docs/fidelity.md`), "
        "with the time-to-accuracy recipe in place of the paper's optimiser: AdamW 1e-3, 1,000 "
        "warm-up steps, cosine to 1 % over 25,000 steps (the paper: Yogi, cosine over 100,000); "
        "one seed (the paper: 5). Test: 5,000 batches of 16 once a run finishes.",
        runs="`python -m experiments.long_runs.driver advance --runs kr3-<model> --minutes M` "
        "(`experiments/long_runs/plans/te1-kr3.md`)",
    ),
}


def test_se(test: dict) -> float:
    """A test cell's standard error of the NLL, over batches (:data:`TEST_SE`)."""
    return test[TEST_SE]


@dataclass(frozen=True)
class ExactRun:
    """A long run at the exact protocol: ``long-runs/<run>/``, its kernel and model, and its
    label in the table (the model, or the model and what differs: ``cnp-lecun``)."""

    run: str
    kernel: str
    model: str
    label: str
    paper: float | None = None


def exact_runs(table: ExactTable = TABLES["kr1"]) -> list[ExactRun]:
    """Every run of ``table`` that ``experiments/long_runs/driver.py`` registers
    (``kr1-<kernel>-*``, ``kr3-*``), kernel by kernel in the table's order."""
    runs = []
    for kernel in table.kernels:
        prefix = table.run_prefix(kernel)
        for name, (_, overrides) in RUNS.items():
            if name.startswith(prefix):
                model = next(o.split("=", 1)[1] for o in overrides if o.startswith("model.name="))
                label = name.removeprefix(prefix)
                runs.append(ExactRun(name, kernel, model, label, table.paper.get((kernel, model))))
    return runs


def cell_name(run: str, n_batches: int, table: str = "kr1") -> str:
    """A run's cached test cell in ``results/<table>-exact/cells/``: ``<model>-test<N>.json``
    for the RBF runs (the names KR-1's were first cached under), ``<kernel>-<model>-...``
    else."""
    return f"{run.removeprefix(f'{table}-').removeprefix('rbf-')}-test{n_batches}.json"


def curve(folder: Path) -> list[tuple[int, float]]:
    """``(step, validation NLL)`` from a run's metrics log."""
    path = folder / "metrics.csv"
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [(int(r["step"]), -float(r["val_ll"])) for r in csv.DictReader(f) if r["val_ll"]]


def budget_cells(table: ExactTable = TABLES["kr1"]) -> dict[tuple[str, str], tuple[int, float]]:
    """``(kernel, model) -> (steps, test NLL)`` of the table's budget cells."""
    cells = {}
    for kernel in table.kernels:
        for path in sorted((ROOT / f"results/{table.name}/cells").glob(f"{kernel}-*.json")):
            cell = json.loads(path.read_text())
            cells[(kernel, cell["model"])] = (int(cell["steps"]), -float(cell["metrics"]["ll"]))
    return cells


@dataclass
class Row:
    """One run's line of the table: where it stands, its test cell once finished, its curve."""

    spec: ExactRun
    status: RunStatus
    test: dict | None
    curve: list[tuple[int, float]]


def plot(rows: list[Row], budget: dict, path: Path, table: ExactTable = TABLES["kr1"]) -> None:
    """Per kernel, validation NLL against steps per run, its model's budget cell (square), a
    finished run's test NLL (star, with the GP oracle's on the same tasks as a cross) and the
    paper's (dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = [k for k in table.kernels if any(r.spec.kernel == k for r in rows)]
    if not kernels:  # no run of the table has started
        return
    fig, axes = plt.subplots(1, len(kernels), figsize=(6.0 * len(kernels), 4.2), squeeze=False)
    for ax, kernel in zip(axes[0], kernels):
        here = [r for r in rows if r.spec.kernel == kernel]
        for i, r in enumerate(here):
            color, label = f"C{i}", r.spec.label
            if r.curve:
                ax.plot(*zip(*r.curve), ".-", ms=3, color=color, label=f"{label} (exact, val.)")
            cell = budget.get((kernel, r.spec.model))
            if cell is not None and r.spec.label == r.spec.model:
                ax.plot(*cell, "s", color=color, label=f"{label} (budget cell, test)")
            if r.test is not None and r.curve:
                steps = r.curve[-1][0]
                ax.plot(steps, -r.test["ll"], "*", ms=10, color=color, label=f"{label} (test)")
                ax.plot(
                    steps, -r.test["oracle_ll"], "x", color=color, label="GP oracle, same tasks"
                )
            if r.spec.paper is not None:
                ax.axhline(r.spec.paper, color=color, ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel(f"training steps (batch {table.batch_size}; budget cells: batch 16)")
        ax.set_ylabel("held-out NLL per target (lower is better)")
        ax.set_title(f"{table.label} {KERNEL_NAMES[kernel]}; dotted: the paper's test NLL")
        ax.legend(fontsize=6, loc="upper right", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def score(spec: ExactRun, folder: Path, cells: Path, n_batches: int, table: str = "kr1") -> dict:
    """A finished run's test cell (computed once, then read from ``cells``)."""
    from tnpx import load

    cfg = load_config(folder / "config.yaml", [f"eval.n_batches={n_batches}"])
    cell = cells / cell_name(spec.run, n_batches, table)
    return cached_evaluate(load(folder / "model.pt"), cfg, cell, needs=(TEST_SE,)).as_dict()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--test-batches", type=int, default=5000, help="test batches (PROTOCOLS: 5,000)"
    )
    parser.add_argument("--table", choices=sorted(TABLES), default="kr1")
    parser.add_argument("--out", help="default: results/<table>-exact")
    args = parser.parse_args()
    table = TABLES[args.table]
    commit, out = git_commit(), ROOT / (args.out or f"results/{table.name}-exact")
    (out / "cells").mkdir(parents=True, exist_ok=True)
    rows = []
    for spec in exact_runs(table):
        folder = ROOT / "long-runs" / spec.run
        if not (folder / "config.yaml").exists():
            continue
        status = run_status(folder)
        test = (
            score(spec, folder, out / "cells", args.test_batches, table.name)
            if status.finished
            else None
        )
        rows.append(Row(spec, status, test, curve(folder)))
    (out / "results.json").write_text(
        json.dumps(
            {
                r.spec.run: {
                    "kernel": r.spec.kernel,
                    "model": r.spec.model,
                    "steps_done": r.status.steps_done,
                    "steps_total": r.status.steps_total,
                    "val_nll": None if r.status.val_ll is None else -r.status.val_ll,
                    "curve": r.curve,
                    "test": r.test,
                    "paper_nll": r.spec.paper,
                }
                for r in rows
            },
            indent=2,
        )
    )
    budget = budget_cells(table)
    plot(rows, budget, out / "learning_curves.png", table)
    (out / "README.md").write_text(report(rows, budget, commit, table))
    print(f"wrote {out / 'README.md'}")


def finished_reading(
    label: str, paper: float | None, test: dict, val_curve: list[tuple[int, float]]
) -> str:
    """A finished run's test NLL against the goal (the paper's NLL within 2 of our standard
    errors: PROTOCOLS does not restate the paper's), against the GP oracle, and, where the
    goal is missed, what the held-out curve's last 20,000 steps say."""
    nll, se, oracle = -test["ll"], test_se(test), -test["oracle_ll"]
    gap = f"{nll - oracle:.3f} above the GP oracle ({oracle:.3f}) on the same tasks"
    if paper is None:
        return f"{label}: test NLL {pm(nll, se)}, {gap}."
    diff = nll - paper
    if abs(diff) <= 2 * se:
        verdict = "within 2 standard errors of the paper's: the goal is met"
    elif diff < 0:
        # Better than the band asks: the paper's accuracy is reached, but the two numbers
        # differ by more than our error bar (one seed here, the paper's mean of 5 seeds).
        verdict = (
            f"{-diff:.3f} better than the paper's ({-diff / se:.1f} s.e.): the paper's "
            "accuracy is reached, outside the 2-s.e. band on the better side"
        )
    else:
        verdict = (
            f"{diff:.3f} worse than the paper's ({diff / se:.1f} s.e.): the goal is NOT met"
            + curve_trend(val_curve)
        )
    return (
        f"**{label}** (finished): test NLL {pm(nll, se)} against the paper's "
        f"{paper:.3f}, {verdict}; {gap}."
    )


Curve = list[tuple[int, float]]  # (step, validation NLL)


def curve_span(val_curve: Curve, span: int) -> tuple[int, float, int, float] | None:
    """``(step, NLL)`` at the last validation ``span`` steps before the end, and at the end, as
    ``(step, before, last_step, last)``; None when the curve is shorter than ``span``."""
    if not val_curve:
        return None
    last_step, last = val_curve[-1]
    earlier = [(s, v) for s, v in val_curve if s <= last_step - span]
    if not earlier:
        return None
    step, before = earlier[-1]
    return step, before, last_step, last


def still_falling(val_curve: Curve, span: int = 20_000, flat: float = 0.01) -> bool:
    """Whether the held-out NLL fell by ``flat`` nats or more over the last ``span`` steps."""
    found = curve_span(val_curve, span)
    return found is not None and found[1] - found[3] >= flat


def curve_trend(val_curve: list[tuple[int, float]], span: int = 20_000, flat: float = 0.01) -> str:
    """How the held-out NLL moved over the run's last ``span`` steps, as a clause: "flattened"
    when it fell by less than ``flat`` nats (32 validation batches: s.e. about 0.01)."""
    found = curve_span(val_curve, span)
    if found is None:
        return ""
    step, before, last_step, last = found
    moved = f" (its held-out NLL went {before:.3f} → {last:.3f} from step {step:,} to {last_step:,}"
    if not still_falling(val_curve, span, flat):
        return moved + ": flattened, so more steps at this schedule would not close the gap)"
    return moved + ": still falling, so a longer schedule may close part of the gap)"


def report(rows: list[Row], budget: dict, commit: str, table: ExactTable = TABLES["kr1"]) -> str:
    lines = [
        "| kernel | run | steps checkpointed | train time | latest val. NLL (step) | "
        "test NLL ± s.e. | GP oracle | paper | budget cell (steps) |",
        "| --- | --- | ---: | ---: | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        s, t, spec = r.status, r.test, r.spec
        val = "—" if s.val_ll is None else f"{-s.val_ll:.3f} ({s.val_step:,})"
        test = "—" if t is None else pm(-t["ll"], test_se(t))
        oracle = "—" if t is None else f"{-t['oracle_ll']:.3f}"
        paper = "—" if spec.paper is None else f"{spec.paper:.3f}"
        cell = budget.get((spec.kernel, spec.model)) if spec.label == spec.model else None
        cell = "—" if cell is None else f"{cell[1]:.3f} ({cell[0]:,})"
        hours = "—" if s.train_hours is None else f"{s.train_hours:.1f} h"
        lines.append(
            f"| {KERNEL_NAMES[spec.kernel]} | {spec.label} | {s.steps_done:,} / "
            f"{s.steps_total:,} | {hours} | {val} | {test} | {oracle} | {paper} | {cell} |"
        )
    unfinished = [
        f"{r.spec.label} ({KERNEL_NAMES[r.spec.kernel]})" for r in rows if not r.status.finished
    ]
    finished = [
        finished_reading(
            f"{r.spec.label} ({KERNEL_NAMES[r.spec.kernel]})", r.spec.paper, r.test, r.curve
        )
        for r in rows
        if r.test is not None
    ]
    reading = " ".join(finished)
    if unfinished:
        reading += (
            f" Runs still training: {', '.join(unfinished)}: their validation NLL is the held-out "
            "NLL so far on 32 validation batches (not the test set), so it is a point on the way, "
            "not a result to set beside the paper's."
        )
    goals = "; ".join(
        f"{KERNEL_NAMES[k]} "
        + ", ".join(f"{m} {v:.3f}" for (kk, m), v in table.paper.items() if kk == k)
        for k in table.kernels
    )
    return f"""# {table.title}

**What**: PROTOCOLS {table.label}: {table.what}. Metric: NLL per target (lower is better). The goal
({GOAL}): {goals}.

**Command**: `{command_line()}`, commit `{commit}`. Runs: {table.runs}.

**Protocol**: {table.protocol}
{table.se_note}

**Hardware**: {hardware()}; one torch thread per run, two runs at a time, advanced in slices
across sessions and machines (train time is summed over slices).

{chr(10).join(lines)}

![learning curves](learning_curves.png)

**Reading**: {reading} The budget cells (results/{table.name}, batch 16, smaller models) sit where
their step counts put them on the same axes.
"""


if __name__ == "__main__":
    main()
