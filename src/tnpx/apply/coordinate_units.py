"""Inputs in the units a model was trained in: dates and datetimes taken at prediction time.

A checkpoint trained on gridded data stores each input's unit with its normalisation
(:func:`tnpx.checkpoint.stored_input_units`): ``"hours since 1970-01-01"`` for a time
coordinate (``"hours since 1970-01-01 (360_day)"`` for a non-standard calendar), a
coordinate's CF ``units`` (``"degrees_north"``) or ``""`` for a plain number. At prediction a
column with a time unit takes numbers in that unit, dates as text (``2010-05-01``,
``2010-05-01 12:00``), ``datetime64`` values and pandas Timestamps; dates become hours since
1970-01-01 UTC (a time zone is converted to UTC, a date without one is taken as UTC, as the
grid's own times are). A non-standard calendar's dates are refused: a date there does not
name one instant of the standard calendar. A date in a column the model takes as numbers is
refused naming the unit it wants.

This module is the one place that conversion happens: :func:`in_model_units` runs on every
table (a chunk at a time) before :func:`tnpx.user_table.numeric_block` reads its numbers, for
:func:`tnpx.predict`, ``tnpx predict`` and :class:`tnpx.NPRegressor` alike. The user's own
table is never changed (a converted table is a shallow copy with new columns).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..data.field_arrays import STANDARD_CALENDARS, TIME_UNIT, time_values
from ..user_files import DataError, Table, cell_text
from .table_chunks import Chunks

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

_CALENDAR = re.compile(r"\((?P<calendar>[^()]+)\)\s*$")


def is_time_unit(unit: str) -> bool:
    """Whether ``unit`` is a time the grid source counts dates in (hours since 1970-01-01)."""
    return unit.startswith(TIME_UNIT)


def calendar_of(unit: str) -> str:
    """The calendar a time ``unit`` names in brackets, ``"standard"`` where it names none."""
    found = _CALENDAR.search(unit)
    return found["calendar"].strip() if found else "standard"


def in_model_units(table: Table, units: dict[str, str] | None, cols: list) -> Table:
    """``table`` with each of ``cols`` whose stored unit is a time as numbers in that unit
    (dates converted; numbers and missing values as they were); ``units`` is ``{column:
    unit}`` (None: the model stores none, and the table is returned as it is).

    Raises:
        DataError: a value that is neither a number nor a date in a time column, a date in a
            non-standard calendar's column, or a date in a column the model takes as numbers
            (each names the table, row, column and the unit the model wants).
    """
    if not units:
        return table
    converted = {}
    for col in cols:
        unit = units.get(col)
        if unit is None or _is_numbers(table.frame[col]):
            continue
        if is_time_unit(unit) and calendar_of(unit).lower() in STANDARD_CALENDARS:
            converted[col] = _hours(table, col, unit)
        else:
            _refuse_dates(table, col, unit)
    if not converted:
        return table
    frame = table.frame.copy(deep=False)  # the user's frame keeps its own columns
    for col, values in converted.items():
        frame[col] = values
    return replace(table, frame=frame)


def units_of(chunks: Chunks, units: dict[str, str] | None, cols: list) -> Chunks:
    """``chunks`` (a function giving a table's chunks, :mod:`tnpx.apply.table_chunks`) with
    every chunk :func:`in_model_units`, as it is reached."""
    if not units:
        return chunks
    return lambda: (in_model_units(table, units, cols) for table in chunks())


def _is_numbers(column: pd.Series) -> bool:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return is_numeric_dtype(column) and not is_bool_dtype(column)


def _hours(table: Table, col, unit: str) -> np.ndarray:
    """Column ``col`` as float64 hours since 1970-01-01 ``[rows]``: numbers as they are, dates
    converted (UTC), NaN where a value is missing."""
    import pandas as pd
    from pandas.api.types import is_datetime64_any_dtype

    column = table.frame[col]
    if is_datetime64_any_dtype(column):
        numbers = np.full(len(column), np.nan)
        dated = column.notna().to_numpy()
    else:
        numbers = pd.to_numeric(column.astype(object), errors="coerce")
        numbers = np.array(numbers, dtype=np.float64)  # a copy of our own, written below
        dated = np.isnan(numbers) & column.notna().to_numpy()
    if not dated.any():
        return numbers
    dates = pd.to_datetime(column[dated], errors="coerce", utc=True, format="mixed")
    bad = dates.isna().to_numpy()
    if bad.any():
        pos = int(np.flatnonzero(dated)[bad.argmax()])
        raise DataError(
            f"{table.name}, {table.where(pos)}, column {col!r}: "
            f"{cell_text(column.iloc[pos])} is neither a number ({unit}) nor a date such as "
            "2010-05-01 or 2010-05-01 12:00"
        )
    naive = dates.dt.tz_localize(None).to_numpy("datetime64[ns]")
    numbers[dated] = time_values(naive)
    return numbers


def _refuse_dates(table: Table, col, unit: str) -> None:
    """A value of ``col`` that is a date, where the model takes numbers in ``unit``, as one
    line naming the unit (other text is left to :func:`~tnpx.user_table.numeric_block`)."""
    import pandas as pd

    column = table.frame[col]
    numbers = pd.to_numeric(column.astype(object), errors="coerce").to_numpy(np.float64)
    text = np.isnan(numbers) & column.notna().to_numpy()
    if not text.any():
        return
    pos = int(text.argmax())
    value = column.iloc[pos]
    if is_time_unit(unit):  # a non-standard calendar's time: no date names one instant of it
        calendar = calendar_of(unit)
        how = (
            f"; dates in the {calendar} calendar are not converted: give hours since "
            f"1970-01-01 in that calendar (cftime.date2num(dates, '{TIME_UNIT}', "
            f"'{calendar}'))"
        )
    elif _is_date(value):
        how = ""
    else:
        return
    wants = f" in {unit}" if unit else ""
    raise DataError(
        f"{table.name}, {table.where(pos)}, column {col!r}: the model takes numbers{wants}, "
        f"got {cell_text(value)}{how}"
    )


def _is_date(value) -> bool:
    """Whether ``value`` reads as a date (a Timestamp, datetime64 or date text)."""
    import pandas as pd

    if isinstance(value, (pd.Timestamp, np.datetime64)):
        return True
    return isinstance(value, str) and pd.to_datetime(value, errors="coerce") is not pd.NaT


__all__ = ["calendar_of", "in_model_units", "is_time_unit", "units_of"]
