"""The checks of :mod:`tnpx.apply.predict_steps`: each value a prediction takes or gives, or a
table with nothing to predict, fails as one :class:`~tnpx.user_files.DataError` that
names the table, the row and the column (never a NaN or an overflow further on)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..input_checks import max_abs_input
from ..user_files import DataError, Table

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd
    import torch

    from ..units import UnitMap


def check_model_range(
    table: Table,
    positions: np.ndarray,
    user: np.ndarray,
    model: np.ndarray,
    cols,
    dtype: torch.dtype,
) -> None:
    """Every value the model gets within its safe range (:func:`tnpx.input_checks.
    max_abs_input` of ``dtype``), else a :class:`DataError` naming the first row
    (``positions``: of ``table``) and column beyond it. ``user``, ``model`` ``[n, d]``: the
    values in the user's and the model's units."""
    bound = max_abs_input(dtype)
    beyond = np.abs(model) > bound
    if not beyond.any():
        return
    row, col = np.argwhere(beyond)[0]
    raise DataError(
        f"{table.name}, {table.where(int(positions[row]))}, column {cols[col]!r}: "
        f"{user[row, col]:.6g} is {model[row, col]:.3g} in the model's units, beyond the "
        f"+-{bound:.0e} a {str(dtype).removeprefix('torch.')} model takes without overflow; "
        "use values nearer the context's, or rescale them (input_scale / --input-range, "
        "output_scale / --output-scale)"
    )


def check_finite_result(table: Table, positions: np.ndarray, frame: pd.DataFrame, n_in: int):
    """Every predicted value finite, else a :class:`DataError` naming the first row and
    column that is not (``frame``: the result rows of ``table``'s rows ``positions``)."""
    values = frame.iloc[:, n_in:].to_numpy()
    bad = ~np.isfinite(values)
    if not bad.any():
        return
    row, col = np.argwhere(bad)[0]
    inputs = ", ".join(f"{c}={v:.6g}" for c, v in frame.iloc[row, :n_in].items())
    raise DataError(
        f"{table.name}, {table.where(int(positions[row]))}: the prediction "
        f"{frame.columns[n_in + col]!r} is {values[row, col]} (not finite) at {inputs}; "
        "the model's arithmetic overflowed there"
    )


def check_units(units: UnitMap, x_cols: list, y_cols: list, name: str) -> None:
    """A unit map with finite, positive scales, else a :class:`DataError` naming the column
    whose range or spread overflows float64 (values near 1e308)."""
    for affine, cols in ((units.x, x_cols), (units.y, y_cols)):
        ok = np.isfinite(affine.loc) & np.isfinite(affine.scale) & (affine.scale > 0)
        if not ok.all():
            col = cols[int(np.argmin(ok))]
            raise DataError(
                f"{name}, column {col!r}: its values are too large to scale (their range or "
                "spread overflows float64); rescale them"
            )


def no_targets(name: str, rows: int) -> DataError:
    """The error for a targets table ``name`` with nothing to predict at: ``rows`` dropped
    for a missing value (0: the table has a header but no rows)."""
    reason = "every row has a missing value" if rows else "a header but no rows"
    return DataError(f"{name}: no targets to predict at ({reason})")
