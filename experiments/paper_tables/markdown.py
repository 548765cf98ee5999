"""The markdown tables of a table's README: our numbers beside the paper's, the gap to the
GP oracle, the model sizes, the cells (steps, times, commits) and, for tables that train once
and test per column (TE-4), the change from the training column."""

from __future__ import annotations

import json
import math

from experiments.kit import pm
from experiments.paper_tables.cells import Cell
from experiments.paper_tables.specs import LATENT, ORACLE, TableSpec, is_trained


def model_label(model: str, registered: str | None = None) -> str:
    """The row's label, with † for a latent-variable model (``registered``: its model name,
    default the label)."""
    return f"{model} †" if (registered or model) in LATENT else model


def row_label(spec: TableSpec, label: str) -> str:
    return model_label(label, spec.rows[label].model)


def value_text(spec: TableSpec, cell: Cell | None, paper: float | None) -> str:
    ours = "—" if cell is None else pm(cell.value(spec.metric), cell.nll_se)
    return ours if paper is None else f"{ours} ({paper:.{spec.paper_digits}f})"


def nll_text(cell: Cell | None, paper: float | None) -> str:
    ours = "—" if cell is None else pm(cell.nll, cell.nll_se)
    return ours if paper is None else f"{ours} ({paper:.3f})"


def value_table(spec: TableSpec, cells: dict) -> str:
    """Rows × columns: our number ± s.e. with the paper's number in brackets."""
    head = "| model | " + " | ".join(spec.columns[k] for k in spec.kernels) + " |"
    rows = [head, "| --- |" + " --- |" * len(spec.kernels)]
    for label in spec.models:
        texts = [
            value_text(spec, cells.get((k, label)), spec.paper_value(label, k))
            for k in spec.kernels
        ]
        rows.append(f"| {row_label(spec, label)} | " + " | ".join(texts) + " |")
    return "\n".join(rows)


def gap_table(spec: TableSpec, cells: dict) -> str:
    """Rows × columns: NLL − oracle NLL on the same tasks, paired s.e."""
    head = "| model | " + " | ".join(spec.columns[k] for k in spec.kernels) + " |"
    rows = [head, "| --- |" + " --- |" * len(spec.kernels)]
    for label in spec.models:
        if spec.rows[label].model == ORACLE:
            continue
        texts = []
        for kernel in spec.kernels:
            m = cells[kernel, label].metrics if (kernel, label) in cells else None
            ok = m is not None and m.gap is not None
            texts.append(pm(m.gap, m.gap_se) if ok else "—")
        rows.append(f"| {row_label(spec, label)} | " + " | ".join(texts) + " |")
    return "\n".join(rows)


def sizes_table(spec: TableSpec, cells: dict) -> str:
    """Per row: the options it was trained with and its parameter count (from its cells)."""
    rows = ["| model | model options as trained | parameters |", "| --- | --- | ---: |"]
    for label in spec.models:
        ran = [c for (_, m), c in cells.items() if m == label]
        if not ran or spec.rows[label].model == ORACLE:
            rows.append(f"| {label} | {'not run' if not ran else '— (not trained)'} | — |")
            continue
        options = sorted({json.dumps(c.model_options, sort_keys=True) for c in ran})
        params = sorted({c.parameters for c in ran})
        untrained = "" if spec.rows[label].trained else " (not trained)"
        rows.append(
            f"| {label} | {'; '.join(f'`{o}`' for o in options)}{untrained} | "
            + ", ".join(f"{p:,}" for p in params)
            + " |"
        )
    return "\n".join(rows)


def steps_text(cell: Cell) -> str:
    if not is_trained(cell.registered):
        return "— (not trained)"
    return f"{cell.steps:,} × {cell.batch_size}"


def seconds_text(seconds: float | None) -> str:
    return "—" if seconds is None or math.isnan(seconds) else f"{seconds:.0f} s"


def cells_table(spec: TableSpec, cells: dict) -> str:
    """One row per finished cell: protocol, steps, test tasks, size, wall time, commit."""
    rows = [
        f"| {spec.column_kind} | model | protocol | steps × batch | test tasks | parameters "
        "| train | eval | train + eval | commit |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for (kernel, model), c in sorted(cells.items(), key=lambda kv: _order(spec, kv[0])):
        rows.append(
            f"| {spec.columns[kernel]} | {model} | {c.protocol} | {steps_text(c)} "
            f"| {c.test_tasks:,} | {c.parameters:,} | {seconds_text(c.train_seconds)} "
            f"| {seconds_text(c.eval_seconds)} | {seconds_text(c.wall_seconds)} | {c.commit} |"
        )
    return "\n".join(rows)


def _order(spec: TableSpec, key: tuple[str, str]) -> tuple[int, int]:
    return spec.kernels.index(key[0]), spec.models.index(key[1])


def estimator_notes(spec: TableSpec, cells: dict) -> str:
    """† lines: which LL estimator scored each latent model (from its cells)."""
    lines = []
    for label in spec.models:
        if spec.rows[label].model not in LATENT:
            continue
        used = sorted({c.ll_estimator for (_, m), c in cells.items() if m == label})
        lines.append(f"- † {label}: {'; '.join(used) if used else 'not run yet'}")
    return "\n".join(lines)


def transfer_table(spec: TableSpec, cells: dict) -> str:
    """For tables whose columns share one training run (TE-4): each held-out column's value
    minus the first (training) column's, per row, with the paper's difference beside it. The
    columns' test tasks differ, so the s.e. combines the two independently."""
    home, *away = spec.kernels
    label = spec.columns
    lines = [
        f"| model | {' | '.join(f'{label[k]} − {label[home]}' for k in away)} |",
        f"| --- |{' --- |' * len(away)}",
    ]
    for row in spec.models:
        texts = []
        for k in away:
            a, b = cells.get((k, row)), cells.get((home, row))
            pa, pb = spec.paper_value(row, k), spec.paper_value(row, home)
            paper = "" if pa is None or pb is None else f" ({pa - pb:+.2f})"
            if a is None or b is None:
                texts.append(f"—{paper}")
                continue
            diff = a.value(spec.metric) - b.value(spec.metric)
            se = math.hypot(a.nll_se, b.nll_se)
            texts.append(f"{diff:+.3f} ± {se:.3f}{paper}")
        lines.append(f"| {row_label(spec, row)} | {' | '.join(texts)} |")
    return "\n".join(lines)
