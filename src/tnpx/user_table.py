"""A user's table read once: :class:`UserTable`, the numbers a prediction takes from it.

The boundary (:func:`read_inputs` for targets, :func:`tnpx.apply.predict_missing.read_context`
for a context) turns the chosen columns of one :class:`~tnpx.user_files.Table` into numbers,
every value checked, exactly once; every later step takes the :class:`UserTable` and never
converts a column again. The user's own table is never changed. :func:`numeric_block` is that
conversion (every value checked; a missing one dropped with one warning, or refused).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .user_files import DataError, Table, cell_text, warn_user

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

DROPPED_FOR = "a missing value"  # why a row is dropped (drop_missing); the only reason there is


@dataclass(frozen=True, eq=False)
class UserTable:
    """The numbers of one table (or one chunk of a long one), read once.

    Attributes:
        source: the table as read (its name and row labels name rows in messages).
        x_cols, y_cols: the input and output columns (``y_cols`` empty for targets).
        x: ``[n_kept, dim_x]`` float64, the inputs of the rows kept.
        y: ``[n_kept, dim_y]`` float64, the outputs (NaN at a missing output a model reads
            masked); None for targets.
        observed: ``[n_kept, dim_y]`` bool, False at a missing output; None where none is.
        positions: ``[n_kept]`` int, the kept rows' positions in ``source``.
        dropped: ``[n_rows]`` bool, the rows dropped (for :data:`DROPPED_FOR`, with
            ``drop_missing``); all False otherwise.
    """

    source: Table
    x_cols: list
    y_cols: list
    x: np.ndarray
    y: np.ndarray | None
    observed: np.ndarray | None
    positions: np.ndarray
    dropped: np.ndarray

    @property
    def name(self) -> str:
        """The name messages give the table (a path, or "context DataFrame")."""
        return self.source.name

    @property
    def rows(self) -> np.ndarray:
        """``[n_kept]``: the kept rows' 0-based row numbers in the whole source (a chunk's
        ``offset`` added)."""
        return self.source.offset + self.positions

    def values(self) -> np.ndarray:
        """``[n_kept, dim_x + dim_y]``: inputs then outputs, in the columns' order."""
        return self.x if self.y is None else np.hstack([self.x, self.y])

    def inputs(self) -> pd.DataFrame:
        """The inputs ``[n_kept, dim_x]`` as a frame with the kept rows' labels."""
        import pandas as pd

        index = self.source.frame.index
        index = index[self.positions] if self.dropped.any() else index  # the source's, as is
        return pd.DataFrame(self.x, index=index, columns=list(self.x_cols))

    def log_dropped(self, log: Dropped) -> None:
        """Add the dropped rows to ``log`` (which warns once, over all chunks)."""
        log.add(self.source, self.dropped)


def from_block(
    source: Table, x_cols: list, y_cols: list, values: pd.DataFrame, positions: np.ndarray,
    observed: np.ndarray | None = None,
) -> UserTable:  # fmt: skip
    """A :class:`UserTable` from :func:`numeric_block`'s result: ``values
    [n_kept, len(x_cols) + len(y_cols)]`` are rows ``positions`` of ``source``."""
    dropped = np.ones(len(source.frame), dtype=bool)
    dropped[positions] = False
    x = values[x_cols].to_numpy()
    y = values[y_cols].to_numpy() if y_cols else None
    return UserTable(source, list(x_cols), list(y_cols), x, y, observed, positions, dropped)


def read_inputs(table: Table, x_cols: list, drop_missing: bool) -> UserTable:
    """The target inputs ``x_cols`` of ``table`` (one chunk), read once.

    Raises:
        DataError: as :func:`numeric_block` (a missing value only without
            ``drop_missing``).
    """
    values, positions = numeric_block(table, x_cols, Dropped(table.name) if drop_missing else None)
    return from_block(table, x_cols, [], values, positions)


# Columns to numbers: each value checked; a missing one dropped (with one warning) or refused.
@dataclass
class Dropped:
    """Rows dropped for a missing value, over the chunks of one table: one warning for all."""

    name: str
    rows: int = 0  # rows seen
    where: list = field(default_factory=list)  # where the dropped rows are, the first few
    count: int = 0  # rows dropped

    def add(self, table: Table, dropped: np.ndarray, shown: int = 5) -> None:
        """Record a chunk: ``dropped [n]`` (bool) marks its dropped rows."""
        self.rows += len(dropped)
        positions = np.flatnonzero(dropped)
        self.count += len(positions)
        self.where += [table.where(int(p)) for p in positions[: shown - len(self.where)]]

    def warn(self) -> None:
        """One warning if any row was dropped."""
        if self.count:
            more = self.count - len(self.where)
            rows = ", ".join(self.where) + (f" and {more} more" if more else "")
            warn_user(
                f"{self.name}: dropped {self.count} of {self.rows} rows with a missing value "
                f"({rows})"
            )


def numeric_rows(table: Table, cols: list, drop_missing: bool = False) -> pd.DataFrame:
    """The columns ``cols`` of ``table`` as float64, every value checked.

    Raises:
        DataError: a value that is not a number, infinite, or missing (an empty cell or NaN);
            with ``drop_missing`` rows with a missing value are dropped instead, with a warning.
    """
    dropped = Dropped(table.name)
    values, _ = numeric_block(table, cols, dropped if drop_missing else None)
    dropped.warn()
    return values


def numeric_block(
    table: Table, cols: list, dropped: Dropped | None = None
) -> tuple[pd.DataFrame, np.ndarray]:
    """The columns ``cols`` of ``table`` (one chunk) as float64, every value checked, and the
    positions ``[n_kept]`` of the rows kept. Rows with a missing value are dropped into
    ``dropped`` where it is given (which warns once, at the end), an error otherwise.

    Raises:
        DataError: as :func:`numeric_rows`.
    """
    import pandas as pd

    values = pd.DataFrame({c: _numeric_column(table, c) for c in cols}, index=table.frame.index)
    values.columns = list(cols)  # as given, whatever their type
    for col in cols:
        infinite = np.isinf(values[col].to_numpy())
        if infinite.any():
            pos = int(infinite.argmax())
            raise DataError(
                f"{table.name}, {table.where(pos)}, column {col!r}: "
                f"{cell_text(table.frame[col].iloc[pos])} is not a finite number"
            )
    missing = values.isna().to_numpy()
    rows = missing.any(axis=1)
    if dropped is not None:
        dropped.add(table, rows)
    if not rows.any() or dropped is not None:
        return values[~rows] if rows.any() else values, np.flatnonzero(~rows)
    pos, col_index = np.argwhere(missing)[0]
    more = int(rows.sum()) - 1
    raise DataError(
        f"{table.name}, {table.where(int(pos))}, column {cols[col_index]!r}: missing value "
        f"(empty cell or NaN){f'; {more} more row(s) have missing values' if more else ''}; "
        "fill them in, or drop such rows with drop_missing=True (--drop-missing)"
    )


def _numeric_column(table: Table, col) -> np.ndarray:
    """One column as float64 (missing values NaN); a value that is not a number is an error."""
    import pandas as pd
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    column = table.frame[col]
    if is_numeric_dtype(column) and not is_bool_dtype(column):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    if is_bool_dtype(column):
        bad = column.notna().to_numpy()
        values = np.zeros(len(column))
    else:
        parsed = pd.to_numeric(column.astype(object), errors="coerce")
        values = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.isnan(values) & column.notna().to_numpy()
    if bad.any():
        pos = int(bad.argmax())
        raise DataError(
            f"{table.name}, {table.where(pos)}, column {col!r}: "
            f"{cell_text(column.iloc[pos])} is not a number"
        )
    return values


__all__ = ["Dropped", "UserTable", "from_block", "numeric_block", "numeric_rows", "read_inputs"]
