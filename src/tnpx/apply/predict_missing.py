"""Missing output values (NaN, an empty cell) in a prediction's context.

A model that reads missing outputs (built with ``missing_outputs=True``, or ``gp`` /
``context-moments``: :attr:`~tnpx.NeuralProcess.reads_missing_outputs`) takes a context row
that misses some of its outputs: the missing values are masked (``mask_yc``, False there) and
fed to the model as 0.0, so what stands there never matters. A row missing *every* output
carries nothing and is refused (or dropped with ``drop_missing``), as is a missing output for
any other model, in one line naming the row, the column and the models that read them. The
user's table is never changed: the parsing runs on a copy.

Used by :func:`tnpx.predict`, ``tnpx predict`` and :class:`tnpx.NPRegressor` (through
:func:`tnpx.apply.predict_steps.plan_prediction`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..user_files import DataError, Table, column_names
from ..user_table import Dropped, UserTable, from_block, numeric_block

if TYPE_CHECKING:  # pragma: no cover
    from ..models import NeuralProcess


def read_context(
    ctx: Table, x_cols: list, y_cols: list, net: NeuralProcess, drop_missing: bool
) -> UserTable:
    """The context's ``x_cols`` and ``y_cols`` read once: a :class:`~tnpx.user_table.UserTable`
    whose ``y`` is NaN and ``observed`` False at a missing output (``observed`` None where no
    output is missing).

    Rows missing an input, and (for a model that reads missing outputs) rows missing every
    output, are dropped with ``drop_missing`` (its ``dropped``; the caller warns).

    Raises:
        DataError: as :func:`tnpx.user_table.numeric_block`; a missing output for a
            model that does not read them, or a row without any output, without
            ``drop_missing``.
    """
    cols = [*x_cols, *y_cols]
    dropped = Dropped(ctx.name) if drop_missing else None  # the UserTable records the rows
    missing = ctx.frame[y_cols].isna().to_numpy() if len(y_cols) else np.zeros((len(ctx.frame), 0))
    if not missing.any():
        return from_block(ctx, x_cols, y_cols, *numeric_block(ctx, cols, dropped))
    if not net.reads_missing_outputs:
        if dropped is None:
            raise _missing(ctx, y_cols, missing, _refusal(net))
        # dropped, as for a missing input
        return from_block(ctx, x_cols, y_cols, *numeric_block(ctx, cols, dropped))
    none = missing.all(1)
    if none.any() and dropped is None:
        raise _missing(ctx, y_cols, missing & none[:, None], "a context row needs an output")
    partial = missing & ~none[:, None]  # filled with 0.0 to parse, then marked missing
    frame = ctx.frame.copy()
    for j, col in enumerate(y_cols):
        frame[col] = frame[col].mask(partial[:, j], 0.0)
    values, positions = numeric_block(replace(ctx, frame=frame), cols, dropped)
    observed = ~partial[positions]
    values[y_cols] = np.where(observed, values[y_cols].to_numpy(), np.nan)
    observed = None if observed.all() else observed
    return from_block(ctx, x_cols, y_cols, values, positions, observed)


def _refusal(net: NeuralProcess) -> str:
    from ..models.registry import missing_outputs_refusal

    return missing_outputs_refusal(net)


def _missing(ctx: Table, y_cols: list, missing: np.ndarray, why: str) -> DataError:
    """One line naming the first row with a missing output, its columns and how many more."""
    rows = np.flatnonzero(missing.any(1))
    first = int(rows[0])
    cols = [c for c, m in zip(y_cols, missing[first]) if m]
    more = f"; {len(rows) - 1} more row(s) like it" if len(rows) > 1 else ""
    columns = f"column {cols[0]!r}" if len(cols) == 1 else f"columns {column_names(cols)}"
    return DataError(
        f"{ctx.name}, {ctx.where(first)}, {columns}: missing output value (empty cell or "
        f"NaN){more}; {why}, or drop such rows with drop_missing=True (--drop-missing)"
    )


def masked_outputs(yc_model: np.ndarray, observed: np.ndarray | None) -> np.ndarray:
    """``yc_model [n_ctx, dim_y]`` with the missing values 0.0 (the model reads them masked)."""
    return yc_model if observed is None else np.where(observed, yc_model, 0.0)


def check_missing_y(net: NeuralProcess, y: np.ndarray) -> None:
    """``y [n]`` or ``[n, n_outputs]`` (an estimator's context outputs) may hold NaN only where
    ``net`` reads missing outputs, and never in every output of a row: else a ``ValueError``
    in scikit-learn's words (``Input y contains NaN``) naming the first row."""
    missing = np.isnan(y.reshape(len(y), -1))
    if not missing.any():
        return
    rows = np.flatnonzero(missing.any(1))
    if not net.reads_missing_outputs:
        why = _refusal(net)
    else:
        rows = np.flatnonzero(missing.all(1))
        if not len(rows):
            return
        why = "every output of a row is missing there: a context row needs one"
    outputs = ", ".join(str(j) for j in np.flatnonzero(missing[rows[0]]))
    more = f" and {len(rows) - 1} more row(s)" if len(rows) > 1 else ""
    raise ValueError(f"Input y contains NaN at row {rows[0]} (output {outputs}){more}; {why}")
