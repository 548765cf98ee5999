"""Completion figures of the image tables (KR-4, TE-2): every row's predictive mean on the same
test tasks of a column, beside the context and the image, from the runs behind the cells."""

from __future__ import annotations

from pathlib import Path

from experiments.paper_tables.cells import cell_config, trained
from experiments.paper_tables.specs import REFERENCE, TableSpec
from tnpx.checkpoint import load
from tnpx.evaluation import build_test_sampler
from tnpx.plot import plot_image_comparison

N_TASKS = 3  # rows of a figure


def figure_name(column: str) -> str:
    return f"completions-{column}.png"


def draw_completions(
    spec: TableSpec,
    column: str,
    cells: dict,
    out: Path,
    runs: Path,
    exact: bool,
    extra: list[str],
) -> Path | None:
    """Draw ``out/<table>/completions-<column>.png`` from every row of the column whose cell
    exists (trained rows from their run's ``model.pt``; untrained ones are built). Returns the
    path, or None where the column is not image data or no trained row's model is found."""
    labels = [label for label in spec.models if (column, label) in cells]
    configs = {label: cell_config(spec, column, label, exact, runs, extra) for label in labels}
    if not configs or next(iter(configs.values())).data["name"] != "image":
        return None
    models = {}
    for label, cfg in configs.items():
        if spec.rows[label].trained:
            checkpoint = Path(cfg.train.out_dir) / "model.pt"
            if checkpoint.exists():
                models[label] = load(checkpoint)
        else:
            models[label] = trained(cfg)[0]
    if not any(spec.rows[label].trained for label in models):
        return None
    # The tasks depend on the data section and the seed only, not on a row's batch size; the
    # reference row has no row overrides at all.
    sampler = build_test_sampler(configs.get(REFERENCE, next(iter(configs.values()))))
    path = out / spec.name / figure_name(column)
    return plot_image_comparison(models, sampler, path, n_tasks=N_TASKS)
