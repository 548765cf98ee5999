"""Checks of the ``table`` source (:mod:`tnpx.data.table`): its options, and the table's
values (missing values, outputs that never change, repeated inputs). A bad option is a
``ValueError``, bad data a :class:`~tnpx.user_files.DataError`; each one line naming the column
and, where it applies, the task."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...likelihoods import check_exposure_option
from ...user_files import DataError, Table, as_list, column_names
from .splits import SPLIT_BY

if TYPE_CHECKING:
    from .config import TableConfig


# -- options -----------------------------------------------------------------------------------
def _check_options(
    c: TableConfig, has_frame: bool, source: str = "table"
) -> tuple[list, list, list]:
    """The task, input and output columns; a ``ValueError`` for an option out of range."""
    if c.path is None and not has_frame:
        raise ValueError(
            f"data sampler {source!r} needs path: a CSV or Parquet file, one row a point"
        )
    task, x, y = as_list(c.task), as_list(c.x), as_list(c.y)
    for option, cols in (("task", task), ("x", x), ("y", y)):
        if not cols:
            raise ValueError(f"{source}: name the {option} column(s) ({option}: [COLUMN, ...])")
    named = [*task, *x, *y, *as_list(c.exposure)]
    twice = sorted({str(col) for col in named if named.count(col) > 1})
    if twice:
        raise ValueError(
            f"{source}: column(s) {twice} named more than once among task, x, y and exposure"
        )
    if c.min_ctx < 1:
        raise ValueError(
            f"{source}: min_ctx must be >= 1 (a task needs a context), got {c.min_ctx}"
        )
    if c.max_ctx is not None and c.max_ctx < c.min_ctx:
        raise ValueError(f"{source}: max_ctx={c.max_ctx} is below min_ctx={c.min_ctx}")
    if c.max_tgt is not None and c.max_tgt < 1:
        raise ValueError(f"{source}: max_tgt must be >= 1 (or null: no cap), got {c.max_tgt}")
    if len(c.ctx_fraction) != 2 or not 0 <= c.ctx_fraction[0] <= c.ctx_fraction[1] <= 1:
        raise ValueError(
            f"{source}: ctx_fraction must be [low, high], 0 <= low <= high <= 1, "
            f"got {c.ctx_fraction}"
        )
    if not 0 < c.val_fraction < 1:  # training validates on it
        raise ValueError(f"{source}: val_fraction must lie in (0, 1), got {c.val_fraction}")
    if not 0 <= c.test_fraction < 1 or c.val_fraction + c.test_fraction >= 1:
        raise ValueError(
            f"{source}: test_fraction must lie in [0, 1) and leave training tasks "
            f"(val_fraction + test_fraction < 1), got {c.test_fraction}"
        )
    _check_split_options(c, source)
    check_exposure_option(c.exposure, c.likelihood, source)
    return task, x, y


def _check_split_options(c: TableConfig, source: str) -> None:
    """``split_by`` and the options that go with it."""
    if c.split_by not in SPLIT_BY:
        raise ValueError(
            f"{source}: split_by must be one of {', '.join(SPLIT_BY)}, got {c.split_by!r}"
        )
    if c.split_by == "task" and c.split_column is not None:
        raise ValueError(f"{source}: split_column is for split_by time or region, not task")
    if c.split_by == "time" and c.split_column is None:
        raise ValueError(f"{source}: split_by time needs split_column: the column of each time")
    if c.split_by == "region" and c.split_column is None:
        raise ValueError(f"{source}: split_by region needs split_column: the column of regions")
    lists = {"val": c.val_regions, "test": c.test_regions}
    if all(v is None for v in lists.values()):
        return
    if c.split_by != "region":
        raise ValueError(f"{source}: val_regions/test_regions are for split_by region")
    if not c.val_regions:  # training validates on held-out tasks
        raise ValueError(f"{source}: name the regions held out for validation (val_regions)")
    both = sorted({str(r) for r in c.val_regions} & {str(r) for r in c.test_regions or []})
    if both:
        raise ValueError(f"{source}: region(s) {both} named in both val_regions and test_regions")


# -- the table's values ------------------------------------------------------------------------
def _check_missing(table: Table, x_cols, y_cols, code, keys, show) -> np.ndarray | None:
    """Where output values are missing, ``[rows, dim_y]`` bool (None: nowhere); they are
    masked, not dropped. A missing input value, an output column without any value, or a row
    without any output value is an error naming the column and the first task."""
    for col in x_cols:
        missing = table.frame[col].isna().to_numpy()
        if missing.any():
            raise DataError(
                f"{_first_missing(table, f'column {col!r}', missing, code, keys, show)}; missing "
                "input values are not supported yet: fill them in or remove those rows"
            )
    missing_y = np.stack([table.frame[col].isna().to_numpy() for col in y_cols], 1)
    for j, col in enumerate(y_cols):
        if missing_y[:, j].all():
            raise DataError(f"{table.name}, column {col!r}: every value is missing")
    empty = missing_y.all(1)
    if len(y_cols) == 1 and empty.any():
        raise DataError(
            f"{_first_missing(table, f'column {y_cols[0]!r}', empty, code, keys, show)}; rows "
            "without any output value are not supported yet: fill them in or remove those rows"
        )
    if empty.any():
        where = f"columns {column_names(y_cols)}"
        what = "row(s) missing every output"
        raise DataError(
            f"{_first_missing(table, where, empty, code, keys, show, what)}; such rows are not "
            "supported yet (a row needs one output value): fill them in or remove those rows"
        )
    return missing_y if missing_y.any() else None


def _first_missing(
    table: Table, where: str, missing: np.ndarray, code, keys, show, what="missing value(s)"
) -> str:
    """How many rows ``missing [rows]`` marks, in how many tasks, and the first of them."""
    pos = int(np.argmax(missing))
    n_tasks = len(np.unique(code[missing]))
    return (
        f"{table.name}, {where}: {int(missing.sum())} {what} in {n_tasks} task(s), the first "
        f"in task {show(keys[code[pos]])} ({table.where(pos)})"
    )


def _check_varies(table: Table, y_cols: list, y: np.ndarray) -> None:
    """An output column with one value throughout (its observed values: ``y [rows, dim_y]``
    is NaN where missing) leaves nothing to learn."""
    for j, col in enumerate(y_cols):
        seen = y[~np.isnan(y[:, j]), j]
        if (seen == seen[0]).all():
            raise DataError(
                f"{table.name}, column {col!r}: every value is {seen[0]:g}; an output that "
                "never changes cannot be learnt"
            )


def _check_trained(table: Table, y_cols: list, train_y: np.ndarray) -> None:
    """Every output must be observed somewhere in the training tasks (``train_y [rows,
    dim_y]``, NaN where missing): its normalisation is fitted there, and a model learns it."""
    for j, col in enumerate(y_cols):
        if np.isnan(train_y[:, j]).all():
            raise DataError(
                f"{table.name}, column {col!r}: no value in the training tasks (only in held-out "
                "ones), so it cannot be learnt; fill some in or change the split"
            )


def _check_duplicates(table, x_cols, code, x, order, keys, show, y=None) -> None:
    """Two rows of one task at the same inputs: an error (context and target would share a
    point; with different outputs the model cannot tell them apart: a ``task`` column too
    coarse, an input left out). ``order`` sorts the rows by task, then inputs; ``y [rows,
    dim_y]`` (NaN where missing) says whether the outputs conflict."""
    xs, cs = x[order], code[order]
    same = (cs[1:] == cs[:-1]) & (xs[1:] == xs[:-1]).all(1)
    if not same.any():
        return
    pairs = np.stack([order[:-1][same], order[1:][same]], 1)  # [n, 2] rows repeating
    first, other = sorted(pairs[np.argmin(pairs.max(1))].tolist())
    at = ", ".join(f"{col}={v:g}" for col, v in zip(x_cols, x[first]))
    conflict = ""
    if y is not None and not np.array_equal(y[first], y[other], equal_nan=True):
        conflict = " with different outputs, which the model cannot tell apart"
    raise DataError(
        f"{table.name}: {int(same.sum())} row(s) repeat the inputs {column_names(x_cols)} of "
        f"another row of their task, the first in task {show(keys[code[first]])} "
        f"({table.where(first)} and {table.where(other)}: {at}){conflict}; average repeated "
        "measurements, or add the column that tells them apart to task (or to x)"
    )
