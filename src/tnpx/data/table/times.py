"""Time columns of a user's table: numbers or dates, parsed with errors that name the row.

One job: turn a column that says *when* into values that can be compared. A numeric column
stays numeric (its own units: days, hours, model steps); anything else is parsed as dates
(datetime64, with one time zone: mixed offsets are converted to UTC). Used by the ``table``
source's split by time and by the ``stations`` source's time steps and windows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...user_files import DataError, Table

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd


def parse_times(table: Table, col) -> pd.Series:
    """Column ``col`` of ``table`` as times ``[rows]``: float64 for a numeric column, else
    datetime64 (text parsed as dates).

    Raises:
        DataError: a missing time, or a value that is neither a number nor a date (one line
            naming the file, row and column).
    """
    import pandas as pd
    from pandas.api.types import is_bool_dtype, is_datetime64_any_dtype, is_numeric_dtype

    column = table.frame[col]
    missing = column.isna().to_numpy()
    if missing.any():
        pos = int(missing.argmax())
        raise DataError(f"{table.name}, {table.where(pos)}, column {col!r}: missing time")
    if is_numeric_dtype(column) and not is_bool_dtype(column):
        times = column.astype(np.float64)
        bad = ~np.isfinite(times.to_numpy())
    elif is_datetime64_any_dtype(column):
        return column
    else:
        times = _parse_dates(column.astype(object))
        bad = times.isna().to_numpy()
    if bad.any():
        pos = int(bad.argmax())
        value = column.iloc[pos]
        shown = repr(value) if isinstance(value, str) else str(value)
        raise DataError(
            f"{table.name}, {table.where(pos)}, column {col!r}: {shown} is not a time "
            "(a finite number, or a date such as 2024-01-31 12:00)"
        )
    return pd.Series(times.to_numpy(), index=column.index, name=col)


def _parse_dates(column: pd.Series) -> pd.Series:
    """Dates parsed from text: in the format the first value suggests (fast), else each value
    in its own format; NaT where neither can."""
    dates = _to_dates(column)
    return _to_dates(column, format="mixed") if dates.isna().any() else dates


def _to_dates(column: pd.Series, **options) -> pd.Series:
    import pandas as pd

    try:
        return pd.to_datetime(column, errors="coerce", **options)
    except ValueError:  # mixed time zones: compare them on one clock
        return pd.to_datetime(column, errors="coerce", utc=True, **options)


def is_dates(times: pd.Series) -> bool:
    """Whether ``times`` (from :func:`parse_times`) are dates rather than numbers."""
    from pandas.api.types import is_datetime64_any_dtype

    return bool(is_datetime64_any_dtype(times))


def time_order(times: pd.Series) -> np.ndarray:
    """``[rows]`` float64 values in the order of ``times`` (dates as their integer ticks):
    for sorting, not for arithmetic."""
    if is_dates(times):
        return times.astype("int64").to_numpy().astype(np.float64)
    return times.to_numpy(np.float64)
