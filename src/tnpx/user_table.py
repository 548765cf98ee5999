"""A user's table read once: :class:`UserTable`, the numbers a prediction takes from it.

The boundary (:func:`read_inputs` for targets, :func:`tnpx.apply.predict_missing.read_context`
for a context) turns the chosen columns of one :class:`~tnpx.user_files.Table` into numbers,
every value checked, exactly once; every later step takes the :class:`UserTable` and never
converts a column again. The user's own table is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .user_files import Dropped, Table, numeric_block

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
    """A :class:`UserTable` from :func:`~tnpx.user_files.numeric_block`'s result: ``values
    [n_kept, len(x_cols) + len(y_cols)]`` are rows ``positions`` of ``source``."""
    dropped = np.ones(len(source.frame), dtype=bool)
    dropped[positions] = False
    x = values[x_cols].to_numpy()
    y = values[y_cols].to_numpy() if y_cols else None
    return UserTable(source, list(x_cols), list(y_cols), x, y, observed, positions, dropped)


def read_inputs(table: Table, x_cols: list, drop_missing: bool) -> UserTable:
    """The target inputs ``x_cols`` of ``table`` (one chunk), read once.

    Raises:
        DataError: as :func:`tnpx.user_files.numeric_block` (a missing value only without
            ``drop_missing``).
    """
    values, positions = numeric_block(table, x_cols, Dropped(table.name) if drop_missing else None)
    return from_block(table, x_cols, [], values, positions)
