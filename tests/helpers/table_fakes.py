"""Fake table cells for the tests of experiments/paper_tables/build.py: cells with given NLLs,
written where a table reads them, and the README a table writes from them. Nothing trains."""

from __future__ import annotations

from pathlib import Path

from experiments.paper_tables import build as kt
from tnpx.evaluation.protocol import Metrics

RUN = {
    "command": "python -m experiments.paper_tables.build",
    "commit": "abc1234",
    "hardware": "test machine",
    "exact": False,
    "protocol": "budget",
}


def fake_cell(table: str, kernel: str, model: str, nll: float, se: float = 0.01) -> kt.Cell:
    oracle = model == kt.ORACLE
    metrics = Metrics(model, 1024, -nll, se, 0.9)
    if not oracle:
        metrics.oracle_ll, metrics.oracle_ll_se, metrics.gap, metrics.gap_se = 0.5, 0.01, 0.2, 0.01
    return kt.Cell(
        table=table,
        kernel=kernel,
        model=model,
        protocol="budget",
        metrics=metrics,
        ll_estimator=f"estimator of {model}",
        parameters=0 if oracle else 120_000,
        model_options={} if oracle else {"dim_model": 64},
        steps=0 if oracle else 1500,
        batch_size=16,
        test_tasks=1024,
        train_seconds=None if oracle else 100.0,
        eval_seconds=5.0,
        commit="abc1234",
        hardware="test machine",
    )


def write_cells(out: Path, spec: kt.TableSpec, nlls: dict[tuple[str, str], float]) -> None:
    for (kernel, model), nll in nlls.items():
        path = kt.cell_path(out, spec.name, kernel, model)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fake_cell(spec.name, kernel, model, nll).to_json())


def paper_like(spec: kt.TableSpec, offset: float = 0.1) -> dict[tuple[str, str], float]:
    """Every cell at the paper's NLL plus ``offset`` (the oracle well below, the reference
    row, where the table has one, well above)."""
    nlls = {(k, m): v + offset for m, row in spec.paper.items() for k, v in row.items()}
    nlls.update({(k, kt.ORACLE): -1.0 for k in spec.kernels})
    if kt.REFERENCE in spec.models:  # the context's moments: behind every trained model
        nlls.update({(k, kt.REFERENCE): 5.0 for k in spec.kernels})
    return nlls


def nll_rows(text: str) -> dict[str, str]:
    """The NLL table's rows (the README's first table), by model label."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| model | "))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("| "):
            break
        rows[line.split("|")[1].strip()] = line
    return rows


def readme(out: Path, spec: kt.TableSpec) -> str:
    kt.write_outputs(spec, out, RUN)
    return (out / spec.name / "README.md").read_text()
