"""Time to accuracy on KR-1, KR-3 and TE-1: how many steps, core-hours and FLOPs a training
recipe needs to reach the paper's held-out NLL (TNP-KR Tables 3 and 5; the TE paper's Table 5
at Δ = 0, its LL read as an NLL).

A *recipe* is a long run (``experiments/long_runs/driver.py``: a config and overrides, trained in
slices at one torch thread) on the KR-1 protocol's data; the protocol's own recipe is the
exact-protocol runs ``kr1-rbf-<model>`` themselves. Each run logs its held-out validation LL (32
fixed batches of 32 tasks, split ``val``) every 2,500 steps and its speed every 100
(``metrics.csv``). From those this script draws each recipe's curve of validation NLL against

- steps (batches of the run's batch size),
- core-hours: the logged intervals' steps over their speed, summed (one torch thread = one
  core; validation time excluded), so a recipe's hours are its own machine's,
- FLOPs: the steps times one training step's FLOPs, counted by torch's FLOP counter
  (``torch.utils.flop_counter``) on a forward and backward of the recipe's model over 8 batches
  of its data (the context size varies by batch) — the same count on any machine,

and writes, per recipe, the first logged point at or below the paper's NLL (or the closest the
run got), in ``results/time-to-accuracy/`` (README.md, results.json, curves.png).

A KR-1 run finished is scored here on the protocol's test set (cached). KR-3 and TE-1 runs are
scored by their tables' own commands (``python -m experiments.paper_tables.kr_exact --table kr3``,
``python -m experiments.paper_tables.te1_protocol``): their test column reads those cached cells
and stays empty until they exist.

    python -m experiments.long_runs.time_to_accuracy             # every recipe with a run folder
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from experiments.kit import pm
from experiments.long_runs.driver import FOLDER, RUNS
from experiments.paper_tables.kr_exact import (
    KERNEL_NAMES,
    TABLES,
    TEST_SE,
    cell_name,
    exact_runs,
    test_se,
)
from experiments.paper_tables.te1 import PAPER as TE1_PAPER
from experiments.paper_tables.te1_protocol import cell_path as te1_cell_path
from tnpx.config import load_config
from tnpx.data import batch_at, build_sampler
from tnpx.evaluation import cached_evaluate
from tnpx.models import build_model
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import read_metrics

KR1_EXACT_CELLS = FOLDER.parent / "results" / "kr1-exact" / "cells"
PROTOCOL_STEPS = 100_000  # batches of PROTOCOL_BATCH: the goal is a quarter of it
PROTOCOL_BATCH = 32
# Each table's protocol: (steps, batch); the goal is the paper's number in a quarter of them.
PROTOCOLS = {"kr1": (PROTOCOL_STEPS, PROTOCOL_BATCH), "kr3": (100_000, 16), "te1": (500_000, 16)}
TE1_TEST_BATCHES = 320  # results/te1/protocol.md's test set (5,120 tasks per Δ)
KERNEL_LABELS = {**KERNEL_NAMES, "mixture": "TE-1's kernel mixture"}
RECIPE_WHAT = "AdamW 1e-3, 1k warm-up, cosine to 1e-2 of it over the planned steps"
# recipe -> (long run, model, what differs from the protocol). The protocol: Yogi 1e-3, cosine
# to 1e-5 over 100,000 steps, batch 32, no warm-up, clip 3.0 (configs/kr1-rbf.yaml).
ADAMW_WHAT = "AdamW 5e-4, 1k warm-up, cosine to 1e-2 of it over 25k steps"
ADAMW_1E3_WHAT = "AdamW 1e-3, 1k warm-up, cosine to 1e-2 of it over 25k steps"
B16_WHAT = "the recipe at batch 16 for 50k steps (the same tasks, twice the updates; warm-up 2k)"
RECIPES = {
    "protocol (tnp-d)": ("kr1-rbf-tnp-d", "tnp-d", "the paper's: Yogi 1e-3, cosine over 100k"),
    "protocol (tnp-kr-full)": (
        "kr1-rbf-tnp-kr-full",
        "tnp-kr-full",
        "the paper's: Yogi 1e-3, cosine over 100k",
    ),
    "protocol (cnp)": ("kr1-rbf-cnp", "cnp", "the paper's: Yogi 1e-3, cosine over 100k"),
    "lecun-init (cnp)": (
        "kr1-rbf-cnp-lecun",
        "cnp",
        "the protocol's, from Flax's lecun_normal weights (dl4bi's initialisation)",
    ),
    "yogi-cosine-25k (tnp-kr-full)": (
        "tta-kr1-rbf-tnp-kr-full-yogi-25k",
        "tnp-kr-full",
        "the protocol's optimiser, its cosine laid out over 25k steps",
    ),
    "adamw-warmup-25k (tnp-kr-full)": (
        "tta-kr1-rbf-tnp-kr-full-adamw-25k",
        "tnp-kr-full",
        ADAMW_WHAT,
    ),
    "adamw-1e-3-warmup-25k (tnp-kr-full)": (
        "tta-kr1-rbf-tnp-kr-full-adamw1e3-25k",
        "tnp-kr-full",
        ADAMW_1E3_WHAT,
    ),
    "adamw-1e-3-warmup-25k (tnp-kr-full), seed 1": (
        "tta-kr1-rbf-tnp-kr-full-adamw1e3-25k-seed1",
        "tnp-kr-full",
        f"{ADAMW_1E3_WHAT}; another seed (initial weights, training and validation batches)",
    ),
    "adamw-1e-3-warmup, 3 layers of 96 (tnp-kr-full)": (
        "tta-kr1-rbf-tnp-kr-full-96x3-adamw1e3",
        "tnp-kr-full",
        "the recipe; 3 layers of width 96 (6 heads) for 6 of 64, 21,700 steps: the base's FLOPs",
    ),
    "adamw-1e-3-warmup, 11 layers of 48 (tnp-kr-full)": (
        "tta-kr1-rbf-tnp-kr-full-48x11-adamw1e3",
        "tnp-kr-full",
        "the recipe; 11 layers of width 48 (3 heads) for 6 of 64, 25k steps: the base's FLOPs",
    ),
    "schedule-free-25k (tnp-kr-full)": (
        "tta-kr1-rbf-tnp-kr-full-schedulefree-25k",
        "tnp-kr-full",
        "schedule-free AdamW 1e-3, 1k warm-up, then constant (its average evaluated), 25k steps",
    ),
    "adamw-1e-3-warmup, batch 16 (tnp-kr-full)": (
        "tta-kr1-rbf-tnp-kr-full-b16-adamw1e3",
        "tnp-kr-full",
        B16_WHAT,
    ),
    "adamw-1e-3-warmup-25k (tnp-d)": ("tta-kr1-rbf-tnp-d-adamw1e3-25k", "tnp-d", ADAMW_1E3_WHAT),
    "adamw-1e-3-warmup, batch 16 (tnp-d)": (
        "tta-kr1-rbf-tnp-d-b16-adamw1e3",
        "tnp-d",
        B16_WHAT,
    ),
    "adamw-1e-3-warmup-25k + EMA (tnp-d)": (
        "tta-kr1-rbf-tnp-d-adamw1e3-25k-ema",
        "tnp-d",
        f"{ADAMW_1E3_WHAT}; validated and saved as an EMA of the weights (decay 0.999)",
    ),
    "protocol (tnp-kr-full, Matérn-3/2)": (
        "kr1-matern32-tnp-kr-full",
        "tnp-kr-full",
        "the paper's: Yogi 1e-3, cosine over 100k",
    ),
    "adamw-1e-3-warmup-25k (tnp-kr-full, Matérn-3/2)": (
        "tta-kr1-matern32-tnp-kr-full-adamw1e3-25k",
        "tnp-kr-full",
        ADAMW_1E3_WHAT,
    ),
    "protocol (tnp-kr-full, periodic)": (
        "kr1-periodic-tnp-kr-full",
        "tnp-kr-full",
        "the paper's: Yogi 1e-3, cosine over 100k",
    ),
    "adamw-1e-3-warmup-25k (tnp-kr-full, periodic)": (
        "tta-kr1-periodic-tnp-kr-full-adamw1e3-25k",
        "tnp-kr-full",
        ADAMW_1E3_WHAT,
    ),
    # KR-3 and TE-1 at their protocols' data and sizes with the recipe
    # (experiments/long_runs/plans/te1-kr3.md: the steps each plan affords).
    **{
        f"KR-3 recipe ({m})": (f"kr3-{m}", m, f"KR-3: {RECIPE_WHAT} (25k)")
        for m in ("tnp-d", "tnp-kr-full")
    },
    **{
        f"TE-1 recipe ({m})": (f"te1-{m}", m, f"TE-1: {RECIPE_WHAT}")
        for m in ("tnp", "cnp", "convcnp", "pt-tnp-ist", "te-pt-tnp", "te-tnp-rope")
    },
}


def table_of(run: str) -> str:
    """The paper table a long run belongs to: ``kr3``, ``te1`` or ``kr1`` (``tta-kr1-...``)."""
    return run.split("-", 1)[0] if run.startswith(("kr3-", "te1-")) else "kr1"


@dataclass
class Curve:
    """One recipe's logged validation points: steps, core-hours, GFLOPs and NLL."""

    recipe: str
    run: str
    model: str
    what: str
    kernel: str
    steps: list[int]
    hours: list[float]
    gflops: list[float]
    nll: list[float]
    steps_planned: int
    gflops_per_step: float
    seed: int = 0  # train.seed: initial weights, training and validation batches
    test: dict | None = None  # a finished run's score on the protocol's test set
    batch: int = PROTOCOL_BATCH  # tasks per step
    table: str = "kr1"  # kr1, kr3 or te1

    @property
    def protocol(self) -> tuple[int, int]:
        """The table's protocol: (steps, batch)."""
        return PROTOCOLS[self.table]

    def protocol_steps(self, step: int) -> float:
        """``step`` of this run in the protocol's steps (its batches): the same tasks seen."""
        return step * self.batch / self.protocol[1]

    def step_text(self, step: int) -> str:
        """``step`` for a reader: with its batch size when that is not the protocol's."""
        return f"{step:,}" + ("" if self.batch == self.protocol[1] else f" of {self.batch}")

    @property
    def goal(self) -> float | None:
        """The paper's test NLL for this table, kernel and model (TE-1: minus its LL at
        Δ = 0); None where the paper has no such row (``te-tnp-rope`` is tnpx's own)."""
        if self.table == "te1":
            row = TE1_PAPER.get(self.model)
            return None if row is None else -row[0]
        return TABLES[self.table].paper[(self.kernel, self.model)]

    def test_nll(self) -> float | None:
        """The finished run's NLL on the protocol's test set, if scored."""
        return None if self.test is None else -self.test["ll"]

    def reached(self, goal: float | None) -> int | None:
        """The index of the first point at or below ``goal``, or None."""
        if goal is None:
            return None
        return next((i for i, v in enumerate(self.nll) if v <= goal), None)


def step_gflops(config: str, overrides: list[str], n_batches: int = 8) -> float:
    """GFLOPs of one training step (forward and backward) of the run's model on its data,
    averaged over ``n_batches`` batches (the KR layout draws the context size per batch)."""
    from torch.utils.flop_counter import FlopCounterMode

    cfg = load_config(config, overrides)
    torch.manual_seed(0)
    dims = cfg.model.get("dim_x", 1), cfg.model.get("dim_y", 1)
    model = build_model(cfg.model["name"], *dims, **cfg.model_options())
    sampler = build_sampler(cfg.data["name"], cfg.data["batch_size"], 0, **cfg.data_options())
    total = 0
    for i in range(n_batches):
        batch = batch_at(sampler, i)
        counter = FlopCounterMode(display=False)
        with counter:
            model.training_loss(batch).backward()
        total += counter.get_total_flops()
    return total / n_batches / 1e9


def curve(recipe: str, run: str, model: str, what: str, root: Path = FOLDER) -> Curve | None:
    """The recipe's curve from its run folder's ``metrics.csv`` (None if it has no folder)."""
    folder = root / run
    rows = read_metrics(folder / "metrics.csv")
    if not rows:
        return None
    config, overrides = RUNS[run]
    per_step = step_gflops(config, overrides)
    steps, hours, gflops, nll = [], [], [], []
    seconds, previous = 0.0, 0
    for row in rows:
        step = int(row["step"])
        if row.get("steps_per_s"):
            seconds += (step - previous) / float(row["steps_per_s"])
        previous = step
        if row.get("val_ll"):
            steps.append(step)
            hours.append(seconds / 3600)
            gflops.append(step * per_step)
            nll.append(-float(row["val_ll"]))
    cfg = load_config(config, overrides)
    kernels = list(cfg.data["kernels"])  # a KR run trains on one kernel, TE-1 on a mixture
    kernel = kernels[0] if len(kernels) == 1 else "mixture"
    planned = int(cfg.train.steps)
    return Curve(
        recipe,
        run,
        model,
        what,
        kernel,
        steps,
        hours,
        gflops,
        nll,
        planned,
        per_step,
        int(cfg.train.seed),
        batch=int(cfg.data["batch_size"]),
        table=table_of(run),
    )


def score_finished(c: Curve, cells: Path, n_batches: int, root: Path = FOLDER) -> None:
    """A finished run's NLL on the protocol's test set (``n_batches`` batches of 32, beside the
    GP oracle's on the same tasks), computed once and cached in ``cells``; the validation
    curve alone says only where to look."""
    folder = root / c.run
    if not (folder / "model.pt").exists():
        return
    if c.table != "kr1":
        c.test = scored_elsewhere(c)
        return
    from tnpx import load

    cfg = load_config(folder / "config.yaml", [f"eval.n_batches={n_batches}"])
    cell = cells / f"{c.run}-test{n_batches}.json"
    if c.run in {
        r.run for r in exact_runs()
    }:  # a protocol run: experiments.paper_tables.kr_exact's cell
        cell = KR1_EXACT_CELLS / cell_name(c.run, n_batches)
    c.test = cached_evaluate(load(folder / "model.pt"), cfg, cell, needs=(TEST_SE,)).as_dict()


def scored_elsewhere(c: Curve) -> dict | None:
    """A KR-3 or TE-1 run's test cell as its table's command cached it (TE-1: at Δ = 0), or
    None before that command has scored it."""
    if c.table == "te1":
        cells = FOLDER.parent / "results" / "te1" / "protocol-cells"
        cell = te1_cell_path(cells, c.model, 0.0, TE1_TEST_BATCHES)
    else:
        cells = FOLDER.parent / "results" / f"{c.table}-exact" / "cells"
        cell = cells / cell_name(c.run, 5000, c.table)
    return json.loads(cell.read_text()) if cell.exists() else None


def test_score(c: Curve) -> str:
    """``NLL ± s.e. (oracle NLL)`` on the test set, or a dash before the run is finished."""
    if c.test is None:
        return "—"
    oracle = c.test.get("oracle_ll")
    return pm(-c.test["ll"], test_se(c.test)) + ("" if oracle is None else f" ({-oracle:.3f})")


def goal_verdict(c: Curve, step: int) -> str:
    """Whether the goal (the paper's test NLL within a quarter of the protocol's steps) is met.
    The validation curve only says where: the 32 validation batches are easier than the test
    set (the protocol runs score ~0.02 better there), so a finished run counts only by its test
    NLL."""
    if c.protocol_steps(step) > c.protocol[0] // 4:
        return "no"
    test = c.test_nll()
    if test is None:
        return "on validation; test not yet scored"
    return "yes" if test <= c.goal else f"no: test NLL {test:.3f} is above it"


def table(curves: list[Curve]) -> list[str]:
    head = (
        "| recipe | what differs | seed | steps planned | paper NLL | reached at step "
        "| core-hours | TFLOPs | within a quarter of the protocol's steps? | best val NLL (step) "
        "| test NLL ± s.e. (GP oracle) |"
    )
    rows = [head, "|" + " --- |" * 11]
    for c in curves:
        goal = c.goal
        i = c.reached(goal)
        best = min(range(len(c.nll)), key=c.nll.__getitem__)
        if i is None:
            at, hours, tflops, verdict = "not reached", "—", "—", "no"
            if goal is None:
                at, verdict = "no paper row", "—"
            elif c.steps[-1] < c.steps_planned:
                verdict = f"not yet (run at {c.step_text(c.steps[-1])})"
            elif c.test_nll() is not None:  # finished: KR-3's and TE-1's validation is harder
                verdict = f"{goal_verdict(c, c.steps[-1])} (by its test NLL at the last step)"
        else:
            at, hours = c.step_text(c.steps[i]), f"{c.hours[i]:.2f}"
            tflops = f"{c.gflops[i] / 1e3:,.0f}"
            verdict = goal_verdict(c, c.steps[i])
        rows.append(
            f"| {c.recipe} | {c.what} | {c.seed} | {c.step_text(c.steps_planned)} "
            f"| {'—' if goal is None else f'{goal:.3f}'} "
            f"| {at} | {hours} | {tflops} | {verdict} | {c.nll[best]:.3f} "
            f"({c.step_text(c.steps[best])}) "
            f"| {test_score(c)} |"
        )
    return rows


def paired_rows(curves: list[Curve]) -> list[str]:
    """Each scored recipe against the protocol run of its model and kernel, on the same test
    tasks. Their NLL difference is the difference of their gaps to the GP oracle (the oracle
    cancels), so its s.e. over batches is at most the sum of the two gaps' s.e.
    (sd(a - b) <= sd(a) + sd(b)): a bound from the cells' summaries, far below either NLL's
    own s.e., because the tasks' difficulty cancels too. Empty when no pair is scored."""
    # a protocol run is KR-1's: a KR-3 or TE-1 run of the same model has none to pair with
    protocol = {(c.table, c.model, c.kernel): c for c in curves if c.recipe.startswith("protocol")}
    rows = []
    for c in curves:
        base = protocol.get((c.table, c.model, c.kernel))
        if c is base or base is None or c.test is None or base.test is None:
            continue
        if abs(c.test["oracle_ll"] - base.test["oracle_ll"]) > 1e-9:  # not the same tasks
            raise ValueError(f"{c.recipe} and {base.recipe} were scored on different test tasks")
        diff = c.test_nll() - base.test_nll()
        bound = c.test["gap_se_batches"] + base.test["gap_se_batches"]
        rows.append(
            f"| {c.recipe} | {base.recipe} | {diff:+.3f} | ≤ {bound:.4f} "
            f"| {math.floor(10 * abs(diff) / bound) / 10:.1f} |"  # floored: a lower bound
        )
    if not rows:
        return []
    return [
        "Paired on the same test tasks: each recipe's test NLL minus its model's protocol "
        "run's (positive: the recipe is worse), with a bound on the difference's s.e. over "
        "batches (the sum of the two gaps' s.e.; see `paired_rows`):",
        "",
        "| recipe | against | NLL difference | s.e. of the difference | s.e.s apart (at least) |",
        "| --- | --- | ---: | ---: | ---: |",
        *rows,
        "",
    ]


def plot(curves: list[Curve], path: Path) -> None:
    """One row of panels per table and kernel, and the CNP apart (its NLL lives far above the
    TNPs'): NLL against steps, core-hours and TFLOPs, the paper's NLL dashed."""
    from tnpx.extras import pyplot

    plt = pyplot("the time-to-accuracy figure")
    keys = [
        (table, kernel, cnp)
        for table in PROTOCOLS
        for kernel in KERNEL_LABELS
        for cnp in (False, True)
    ]
    groups = [[c for c in curves if (c.table, c.kernel, c.model == "cnp") == k] for k in keys]
    groups = [g for g in groups if g]
    fig, grid = plt.subplots(len(groups), 3, figsize=(15, 4 * len(groups)), squeeze=False)
    for axes, group in zip(grid, groups):
        for c in group:
            steps = [c.protocol_steps(s) for s in c.steps]
            for ax, xs in zip(axes, (steps, c.hours, [g / 1e3 for g in c.gflops])):
                ax.plot(xs, c.nll, "o-", ms=3, label=c.recipe)
        for goal in sorted({c.goal for c in group if c.goal is not None}):
            for ax in axes:
                ax.axhline(goal, ls="--", lw=0.8, color="k")
        steps, batch = group[0].protocol
        axes[0].axvline(steps // 4, ls=":", color="r", lw=0.8)
        for ax, label in zip(axes, (f"steps (batches of {batch})", "core-hours", "TFLOPs")):
            ax.set_xlabel(label)
        where = f"{group[0].table.upper()[:2]}-{group[0].table[2:]}, "
        axes[0].set_ylabel(f"{where}{KERNEL_LABELS[group[0].kernel]}: validation NLL")
        axes[0].legend(fontsize=7)
    fig.suptitle("Time to the paper's NLL (dashed); dotted: a quarter of the protocol's steps")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/time-to-accuracy")
    parser.add_argument(
        "--test-batches", type=int, default=5000, help="test batches of 32 (PROTOCOLS: 5,000)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    curves = [c for c in (curve(r, *spec) for r, spec in RECIPES.items()) if c is not None]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for c in curves:
        score_finished(c, out / "cells", args.test_batches)
    (out / "results.json").write_text(json.dumps([asdict(c) for c in curves], indent=1) + "\n")
    plot(curves, out / "curves.png")
    missing = [
        f"`{r}` (`{s[0]}`)" for r, s in RECIPES.items() if r not in {c.recipe for c in curves}
    ]
    text = "\n".join(
        [
            "# Time to accuracy: KR-1, KR-3 and TE-1, steps / core-hours / FLOPs to the paper's "
            "NLL",
            "",
            "**What**: held-out validation NLL per target point (lower is better; 32 fixed "
            "batches of 32 tasks of the KR-1 protocol's data, split `val`; KR-3 and TE-1: their "
            "runs' own validation batches of the `val` split, TE-1 at Δ = 0) against training "
            "steps, core-hours and FLOPs, per training recipe; the goal is the paper's test "
            "NLL (TNP-KR Tables 3 and 5; TE Table 5 at Δ = 0, minus its LL). A recipe reaches "
            "it at its first logged validation point at or below it. The KR-3 and TE-1 rows' "
            "test column reads the cells their tables' commands cache (`python -m "
            "experiments.paper_tables.kr_exact --table kr3`, `python -m "
            "experiments.paper_tables.te1_protocol`: 320 batches of 16 at Δ = 0, s.e. over "
            "batches) and stays empty until those have scored the finished run.",
            "",
            f"**Command**: `{command_line()}`, commit `{git_commit()}`. Runs: "
            "`python -m experiments.long_runs.driver advance --runs RUN --minutes M`.",
            "",
            "**Protocol or budget**: the KR-1 protocol's data (PROTOCOLS.md) and model presets "
            "(`kr-code`); the recipes differ only as the table says. One seed each: seed 0, so "
            "every recipe sees the same batches in the same order, except a row whose seed "
            "column says otherwise (a replicate of a recipe). The test set is the same for "
            "every row (`eval.seed`). The validation NLL is not "
            "the protocol's 5,000-batch test NLL: every finished run is then scored on those "
            "(the last column, beside the GP oracle on the same tasks; cached in `cells/`). "
            "Core-hours are the runs' own logged speeds (one torch "
            "thread each, two runs sharing a 2-core machine); FLOPs are counted, not timed. "
            + TABLES["kr1"].se_note,
            "",
            f"**Hardware**: {hardware()}.",
            "",
            *table(curves),
            "",
            *paired_rows(curves),
            *([f"Not run yet: {', '.join(missing)}.", ""] if missing else []),
            "![curves](curves.png)",
            "",
            "**Reading**: " + reading(curves),
            "",
        ]
    )
    (out / "README.md").write_text(text)
    print(text)
    return 0


def reading(curves: list[Curve]) -> str:
    parts = []
    for c in curves:
        i = c.reached(c.goal)
        where = "did not reach" if i is None else f"reached at step {c.step_text(c.steps[i])}"
        if c.goal is None:
            parts.append(f"{c.recipe} has no paper row (best validation NLL {min(c.nll):.3f})")
            continue
        text = (
            f"{c.recipe} {where} the paper's {KERNEL_LABELS[c.kernel]} {c.goal:.3f} on validation"
        )
        test = c.test_nll()
        if test is not None:
            side = "at or below" if test <= c.goal else "above"
            se = test_se(c.test)
            text += (
                f", and its test NLL after {c.step_text(c.steps[-1])} steps is {test:.3f} ± "
                f"{se:.3f}, {abs(test - c.goal):.3f} {side} the paper's"
                # the test set's own noise: the paper scored other tasks (its seeds' test sets)
                + (" (within 2 s.e.)" if abs(test - c.goal) <= 2 * se else "")
            )
        parts.append(text)
    return (
        "; ".join(parts) + f". {validation_against_test(curves)} Between two of our own runs "
        "the paired table is the one to read: their difference, on the same tasks, is "
        "measured far more tightly than either NLL."
    )


def validation_against_test(curves: list[Curve]) -> str:
    """Per table, whether its finished runs' last validation NLL (a few held-out batches) lies
    below or above their test NLL, counted: why a recipe meets the goal only by its test NLL."""
    counts: dict[str, list[int]] = {}
    for c in curves:
        test = c.test_nll()
        if test is not None and c.nll:
            name = f"{c.table[:2].upper()}-{c.table[2:]}"  # kr3 -> KR-3
            counts.setdefault(name, [0, 0])[0 if c.nll[-1] < test else 1] += 1
    if not counts:
        return ""
    said = "; ".join(
        f"{table}: {lo} of {lo + hi} lower, {hi} higher" for table, (lo, hi) in counts.items()
    )
    return (
        f"Validation and test differ: a finished run's last validation NLL against its test "
        f"NLL ({said}; compare the last two columns), so a recipe meets the goal only by its "
        "test NLL."
    )


if __name__ == "__main__":
    sys.exit(main())
