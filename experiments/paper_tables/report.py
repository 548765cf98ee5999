"""A table's results files from its cached cells: README.md (the sections of
shared/RESULTS.md, its tables from :mod:`experiments.paper_tables.markdown`), results.json and
the plot of our numbers against the paper's."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from experiments.paper_tables.cells import cell_config, load_cells, missing_cells
from experiments.paper_tables.figures import figure_name
from experiments.paper_tables.markdown import (
    cells_table,
    estimator_notes,
    gap_table,
    sizes_table,
    transfer_table,
    value_table,
)
from experiments.paper_tables.ordering import ordering, ordering_sentence, reference_sentence
from experiments.paper_tables.specs import LATENT, METRICS, ORACLE, REFERENCE, TableSpec, is_trained
from tnpx.config import load_config
from tnpx.provenance import hardware


def distinct(values) -> str:
    return ", ".join(str(v) for v in sorted(set(values))) or "—"


def protocol_text(spec: TableSpec, cells: dict, exact: bool) -> str:
    trained = [c for c in cells.values() if is_trained(c.registered)]
    steps = distinct(f"{c.steps:,}" for c in trained)
    batch = distinct(c.batch_size for c in trained)
    tasks = distinct(f"{c.test_tasks:,}" for c in cells.values())
    cfg = load_config(spec.config_path(spec.kernels[0], exact))
    if exact:
        return (
            f"exact protocol ({steps} steps of batch {batch}, {tasks} test tasks, "
            f"{spec.exact_sizes}); one training seed ({spec.paper_seeds})"
        )
    data = f"; data: {spec.budget_data}" if spec.budget_data else ""
    faster = "".join(
        f" ({prefix} parameters at {factor:g}× that rate)"
        for prefix, factor in cfg.optim.lr_multipliers.items()
    )
    return (
        f"budget: {steps} steps of batch {batch} (paper: {spec.paper_train}); "
        f"{cfg.optim.name} lr {cfg.optim.lr}{faster} with "
        f"{cfg.schedule.warmup(cfg.train.steps)} warm-up steps and "
        f"{cfg.schedule.name} decay (paper: {spec.paper_optim}); one training "
        f"seed ({spec.paper_seeds}); {tasks} test tasks "
        f"(paper: {spec.paper_test}); {spec.budget_sizes}{data}"
    )


def row_presets(spec: TableSpec, exact: bool) -> dict[str, str]:
    """Each row's preset as the table's command builds it (from the first column's config and
    the row's preset and options), with the row's own options on top at the budget; "none"
    without one: no reference code where the row says so, else tnpx's defaults."""
    presets = {}
    for label, row in spec.rows.items():
        cfg = cell_config(spec, spec.kernels[0], label, exact, Path("runs"), [])
        preset = cfg.model.get("preset")
        extra = (
            "" if exact or preset is None else ", ".join(f"{k}={v}" for k, v in row.budget.items())
        )
        if preset is not None:
            presets[label] = f"`{preset}`" + (f" with {extra}" if extra else "")
        elif row.preset is None:
            presets[label] = "none (no reference code: tnpx's model)"
        else:
            presets[label] = "none (tnpx defaults)"
    return presets


def presets_text(spec: TableSpec, exact: bool) -> str:
    """Which preset each row used, grouped by preset, and what that means for the table."""
    groups: dict[str, list[str]] = {}
    for label, preset in row_presets(spec, exact).items():
        groups.setdefault(preset, []).append(label)
    listed = "; ".join(f"{preset}: {', '.join(labels)}" for preset, labels in groups.items())
    note = spec.exact_presets if exact else spec.budget_presets
    return listed + (f" ({note})" if note else "")


def other_provenance(cells: dict, commit: str) -> str:
    """A note when cached cells came from other commits or machines than this run."""
    commits = {c.commit for c in cells.values()} - {commit}
    machines = {c.hardware for c in cells.values()} - {hardware()}
    notes = []
    if commits:
        notes.append(f"some cells were computed at other commits ({', '.join(sorted(commits))})")
    if machines:
        notes.append(f"some on other hardware ({'; '.join(sorted(machines))})")
    return (" " + "; ".join(notes).capitalize() + ".") if notes else ""


def missing_text(spec: TableSpec, cells: dict, skipped: Mapping | None = None) -> str:
    """The cells not run yet, by row, and why where this run skipped them."""
    missing = missing_cells(spec, cells)
    if not missing:
        return "All cells are run."
    by_model = {m: [k for k, mm in missing if mm == m] for m in spec.models}
    by_model = {m: ks for m, ks in by_model.items() if ks}
    everywhere = len(spec.kernels) > 1

    def where(ks: list[str]) -> str:
        if everywhere and len(ks) == len(spec.kernels):
            return f"all {spec.column_kind}s"
        return ", ".join(spec.columns[k] for k in ks)

    listed = "; ".join(f"{m} ({where(ks)})" for m, ks in by_model.items())
    text = (
        f"**Not run yet** ({len(missing)} of {len(spec.kernels) * len(spec.models)} cells, "
        f"shown as —): {listed}. Run the command again to fill them in."
    )
    reasons = sorted({why for (k, m), why in (skipped or {}).items() if (k, m) in missing})
    if reasons:
        text += " Skipped for missing data: " + "; ".join(reasons) + "."
    return text


def metric_text(spec: TableSpec) -> str:
    return METRICS[spec.metric]


def plot_name(spec: TableSpec) -> str:
    return f"{spec.metric}_vs_paper.png"


def figures_section(spec: TableSpec, run: dict) -> str:
    """The completion figures of the image columns (``--figures``), where drawn."""
    figures = run.get("figures") or {}
    if not figures:
        return ""
    images = "\n\n".join(
        f"**{spec.columns[column]}**\n\n![completions, {spec.columns[column]}]({name})"
        for column, name in figures.items()
    )
    return (
        "\n## Completions\n\nEach row's predictive mean on the same test tasks of a column, "
        "beside the context (unseen pixels blue) and the image; drawn from the runs behind the "
        f"cells by `{table_command(spec, run['exact'])} --figures`.\n\n{images}\n"
    )


def table_command(spec: TableSpec, exact: bool) -> str:
    """The command that computes every cell of the table (cached cells are kept)."""
    return f"python -m experiments.paper_tables.build --tables {spec.name}" + (
        " --exact" if exact else ""
    )


def report(spec: TableSpec, cells: dict, run: dict) -> str:
    """The table's README.md (the sections of shared/RESULTS.md, in its order)."""
    sentences = "\n\n".join(
        " ".join(
            filter(None, (ordering_sentence(spec, k, cells), reference_sentence(spec, k, cells)))
        )
        for k in spec.kernels
    )
    provenance = other_provenance(cells, run["commit"])
    metric = spec.metric_name
    plot = f"\n![our {metric} against the paper's]({plot_name(spec)})\n" if run.get("plot") else ""
    skipped = {tuple(s["cell"]): s["why"] for s in run.get("skipped", [])}
    rows = {r.model for r in spec.rows.values()}
    blocks, notes = [], []
    if rows & set(LATENT):
        blocks.append(
            "† Latent-variable models predict a mixture over K samples, so their LL is an "
            f"estimate:\n{estimator_notes(spec, cells)}"
        )
        notes.append(
            "The TNP-KR code scores NP/ANP with a single latent sample and BNP/BANP with the "
            "per-target marginal over 4 bootstraps (the `kr-code` presets), so † rows are not "
            "the same estimator as the paper's."
        )
    if ORACLE in rows:
        notes.append(
            "The gp-oracle row is the exact GP posterior under each task's generating "
            "hyper-parameters (not trained; no paper number)."
        )
    fitted = [
        label
        for label, r in spec.rows.items()
        if r.model not in (ORACLE, REFERENCE) and not r.trained
    ]
    if REFERENCE in rows:
        notes.append(
            f"The {REFERENCE} row is a reference, not a paper's model: every target of a task "
            "gets the mean and variance of its context outputs (shrunk towards N(0, 1) by one "
            "pseudo-observation), ignoring the inputs. A trained model near it has not yet "
            "learnt to use where the context points are."
        )
    if fitted:
        notes.append(
            f"The {', '.join(fitted)} row is a GP fitted to each test task's context by "
            "maximising its marginal likelihood (not trained)."
        )
    if notes:
        blocks.append(" ".join(notes))
    gap = (
        f"\n## Gap to the GP oracle (NLL − oracle NLL on the same tasks, paired s.e.)\n\n"
        f"{gap_table(spec, cells)}\n"
        if spec.gp_data
        else ""
    )
    return f"""# {spec.title}

**What**: PROTOCOLS {spec.title.split(":")[0]}: {spec.what}. Metric: {metric_text(spec)},
mean ± standard error over the test tasks; the paper's number ({spec.paper_note}) in brackets.
Every model of a column is scored on the same test tasks.

**Command**: `{table_command(spec, run["exact"])}` builds the whole table, resuming cell by
cell; this file was last written by `{run["command"]}`, commit `{run["commit"]}` (recorded at
start).{provenance}

**Protocol or budget**: {protocol_text(spec, cells, run["exact"])}.

**Presets**: {presets_text(spec, run["exact"])}.

**Hardware and time**: {run["hardware"]}; wall time per cell (train + eval) in the last table.

{value_table(spec, cells)}

{missing_text(spec, cells, skipped)}

{(chr(10) * 2).join(blocks)}

## Reading

{sentences}

(* = the swap exceeds 2 standard errors of the difference.) {caveat(spec, cells, run["exact"])}
{plot}{gap}{transfer_section(spec, cells)}{figures_section(spec, run)}
## Model sizes

Budget sizes are set in `experiments/paper_tables/specs.py`: each row's `budget` options in
`TABLES`.
The KR tables take theirs from `kr_code_budget` (`kr_specs.py`): every row at its `kr-code`
preset (the TNP-KR code's sizes) but the three transformers, which keep 3 of their 6 layers.
The TE tables keep D_z = 32 and cut the transformers to 2 layers (`te_specs.py`).

{sizes_table(spec, cells)}

## Cells

{cells_table(spec, cells)}
"""


def transfer_section(spec: TableSpec, cells: dict) -> str:
    if not spec.shared_training or len(spec.kernels) < 2:
        return ""
    home = spec.columns[spec.kernels[0]]
    return (
        f"\n## Generalisation to held-out {spec.column_kind}s\n\n"
        f"Each model is trained once, on {home}. Change in {spec.metric_name} from {home} to "
        f"each held-out {spec.column_kind} (a model that generalises loses little; the paper's "
        f"change in brackets):\n\n{transfer_table(spec, cells)}\n"
    )


def caveat(spec: TableSpec, cells: dict, exact: bool) -> str:
    """What the ordering can and cannot say under this protocol."""
    if exact:
        return "Exact-protocol cells: the paper's ordering is the claim under test."
    steps = distinct(f"{c.steps:,}" for c in cells.values() if is_trained(c.registered))
    data = (
        " The budget's data are not the paper's either, so its numbers are not comparable with "
        "the paper's; only the ordering is."
        if spec.budget_data
        else ""
    )
    return (
        f"At this budget ({steps} steps) no model is near convergence, so the ordering says "
        "how far each model gets in a short run, not where it would end; swaps here do not "
        "contradict the paper unless they persist under the exact protocol." + data
    )


def results_json(spec: TableSpec, cells: dict, run: dict) -> str:
    orderings = {}
    for kernel in spec.kernels:
        o = ordering(spec, kernel, cells)
        rho = None if math.isnan(o["spearman"]) else o["spearman"]
        orderings[kernel] = {**o, "spearman": rho, "swaps": [asdict(s) for s in o["swaps"]]}
    skipped = {tuple(s["cell"]): s["why"] for s in run.get("skipped", [])}
    missing = []
    for k, m in missing_cells(spec, cells):
        entry = {spec.column_kind: k, "model": m}
        if (k, m) in skipped:
            entry["why"] = skipped[k, m]
        missing.append(entry)
    return json.dumps(
        {
            "table": spec.name,
            **{k: v for k, v in run.items() if k not in ("plot", "skipped")},
            "metric": spec.metric,
            "metric_text": metric_text(spec),
            f"paper_{spec.metric}": spec.paper,
            "rows": {label: asdict(row) for label, row in spec.rows.items()},
            "budget_sizes": None
            if run["exact"]
            else {label: dict(row.budget) for label, row in spec.rows.items()},
            "cells": [asdict(c) for c in cells.values()],
            "missing": missing,
            "ordering": orderings,
        },
        indent=2,
    )


def plot(spec: TableSpec, cells: dict, path: Path) -> bool:
    """Our number against the paper's, one colour per column; False when nothing to plot."""
    points = [
        (k, m, spec.paper[m][k], c)
        for (k, m), c in cells.items()
        if spec.paper_value(m, k) is not None
    ]
    if not points:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = spec.metric
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for kernel in spec.kernels:
        mine = [p for p in points if p[0] == kernel]
        if not mine:
            continue
        ax.errorbar(
            [p[2] for p in mine],
            [p[3].value(metric) for p in mine],
            [p[3].nll_se for p in mine],
            fmt="o",
            capsize=2,
            label=spec.columns[kernel],
        )
        for _, model, x, c in mine:
            ax.annotate(
                model, (x, c.value(metric)), fontsize=6, xytext=(3, 2), textcoords="offset points"
            )
    lo = min(min(p[2], p[3].value(metric)) for p in points)
    hi = max(max(p[2], p[3].value(metric)) for p in points)
    ax.plot([lo, hi], [lo, hi], "k:", lw=1, label="ours = paper")
    better = "lower" if metric == "nll" else "higher"
    ax.set_xlabel(f"paper {spec.metric_name} ({better} is better)")
    ax.set_ylabel(f"our {spec.metric_name} ± s.e.")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_outputs(spec: TableSpec, out: Path, run: dict) -> None:
    """README.md, results.json and the plot of the table, from every cached cell."""
    cells = load_cells(out, spec)
    folder = out / spec.name
    folder.mkdir(parents=True, exist_ok=True)
    figures = {k: figure_name(k) for k in spec.kernels if (folder / figure_name(k)).exists()}
    run = {**run, "plot": plot(spec, cells, folder / plot_name(spec)), "figures": figures}
    (folder / "results.json").write_text(results_json(spec, cells, run))
    (folder / "README.md").write_text(report(spec, cells, run))
