"""A user's tables read with errors that say where: CSV files, NetCDF files (with xarray)
and pandas DataFrames, their columns chosen and checked, every value numeric and finite.

Every problem raises :class:`DataError` with one message naming the file (or DataFrame), the
row as the user can find it (the data row of a file, the index label of a frame) and the
column; nothing is dropped silently (``drop_missing`` drops rows with a missing value and
says how many).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

NETCDF_SUFFIXES = {".nc", ".nc4", ".cdf", ".netcdf"}


class DataError(ValueError):
    """User data that cannot be used: the message names the file (or frame), row and column."""


# -- reading tables ----------------------------------------------------------------------------
@dataclass
class Table:
    """A table of user data and the name its messages use (a path, or "context DataFrame").
    A chunk of a longer table has ``offset``, the number of rows before it."""

    frame: pd.DataFrame
    name: str
    from_file: bool
    offset: int = 0

    def where(self, position: int) -> str:
        """Where row ``position`` (0-based, within this chunk) is, in words a user can find
        it by."""
        if self.from_file:
            return f"data row {self.offset + position + 1}"
        label = self.frame.index[position]
        label = label.item() if isinstance(label, np.generic) else label
        at = "" if label == self.offset + position else f" (position {self.offset + position})"
        return f"row {cell_text(label)}{at}"


def read_table(source, role: str, header_only: bool = False) -> Table:
    """``source`` (a DataFrame, or the path of a CSV file or, with xarray, a NetCDF file) as a
    :class:`Table`; ``role`` ("context" or "targets") names a DataFrame in messages. With
    ``header_only`` a CSV file's table has its columns and no rows (others are read whole).

    Raises:
        DataError: the file is missing, unreadable, empty, not CSV, or has no header row.
    """
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        name = f"{role} DataFrame"
        duplicated = source.columns[source.columns.duplicated()]
        if len(duplicated):
            raise DataError(f"{name}: column(s) {column_names(duplicated)} appear more than once")
        return Table(source, name, from_file=False)
    if not isinstance(source, (str, Path)):
        raise TypeError(f"{role}: expected a pandas DataFrame or a file path, got {type(source)}")
    path = Path(source)
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "no such file"
        raise DataError(f"{path}: {what}")
    if is_netcdf(path):
        frame = _read_netcdf(path)
    else:
        frame = _read_csv(path, nrows=0 if header_only else None)
    _check_header(frame, str(path))
    return Table(frame, str(path), from_file=True)


# index_col=False: a first row with an extra value is not taken for an index
CSV_OPTIONS = {"skipinitialspace": True, "index_col": False}


def is_netcdf(path: Path) -> bool:
    return path.suffix.lower() in NETCDF_SUFFIXES


def _read_csv(path: Path, nrows: int | None = None) -> pd.DataFrame:
    import pandas as pd

    with csv_errors(path):
        return pd.read_csv(path, nrows=nrows, **CSV_OPTIONS)


@contextmanager
def csv_errors(path: Path) -> Iterator[None]:
    """Reading ``path`` as CSV: any failure becomes one :class:`DataError` saying where."""
    import pandas as pd

    try:
        with warnings.catch_warnings():  # data lost to a ragged row is an error, not a warning
            warnings.simplefilter("error", pd.errors.ParserWarning)
            yield
    except (pd.errors.ParserWarning, pd.errors.ParserError) as err:
        row = _ragged_row(path)
        if row is not None:
            raise DataError(
                f"{path}, {row}: more values than the header has column names"
            ) from None
        raise DataError(f"{path}: not a readable CSV file ({_first_line(err)})") from None
    except pd.errors.EmptyDataError:
        raise DataError(
            f"{path}: the file is empty; expected a header row of column names, then one row "
            "per point"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise DataError(f"{path}: cannot read the file ({_first_line(err)})") from None


def _ragged_row(path: Path) -> str | None:
    """Where the first row with more fields than the header is, if one has (read only on a
    parse error)."""
    import csv

    try:
        with path.open(newline="") as f:
            rows = csv.reader(f, skipinitialspace=True)
            n_cols = len(next(rows))
            for i, row in enumerate(r for r in rows if r):  # pandas skips blank lines too
                if len(row) > n_cols:
                    return f"data row {i + 1} (line {rows.line_num})"
    except (OSError, UnicodeDecodeError, StopIteration, csv.Error):
        pass
    return None


def _read_netcdf(path: Path) -> pd.DataFrame:
    """A NetCDF file's variables as columns, one row per grid point (coordinates included)."""
    try:
        import xarray
    except ImportError:
        raise DataError(
            f"{path}: reading NetCDF files needs xarray; pip install 'tnpx[xarray]' "
            "(or save the table as CSV)"
        ) from None
    try:
        with xarray.open_dataset(path) as data:
            return data.to_dataframe().reset_index()
    except Exception as err:  # any backend failure: report it against the file
        raise DataError(f"{path}: cannot read the NetCDF file ({_first_line(err)})") from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _check_header(frame: pd.DataFrame, name: str) -> None:
    """Column names are required: a nameless column or a first row of numbers is an error."""
    names = [str(c) for c in frame.columns]
    for i, col in enumerate(names):
        if col.startswith("Unnamed: "):
            raise DataError(f"{name}: column {i + 1} has no name; every column needs a header")
    if names and all(_is_number(c) for c in names):
        raise DataError(
            f"{name}: the first line ({', '.join(names)}) is numbers, not column names; "
            "add a header row naming the columns"
        )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- choosing and checking columns -------------------------------------------------------------
def choose_columns(
    context: Table, targets: Table, x_cols, y_cols, dim_x: int, dim_y: int
) -> tuple[list, list]:
    """The input and output columns: by default every column of the targets is an input and
    every other column of the context an output. Checked against the model's sizes.

    Raises:
        DataError: a named column is missing, or the counts do not match ``dim_x``/``dim_y``.
    """
    if x_cols is None:
        x_cols = [c for c in targets.frame.columns if c not in as_list(y_cols)]
    x_cols = as_list(x_cols)
    require_columns(targets, x_cols)
    if y_cols is None:
        y_cols = [c for c in context.frame.columns if c not in x_cols]
    y_cols = as_list(y_cols)
    require_columns(context, [*x_cols, *y_cols])
    both = [c for c in x_cols if c in y_cols]
    if both:
        raise DataError(f"column(s) {both} are named as both inputs and outputs")
    if len(x_cols) != dim_x:
        raise DataError(
            f"{targets.name}: the model takes {dim_x} input column(s) but {len(x_cols)} "
            f"were found: {column_names(x_cols)}; name the inputs with x_cols (--x-cols)"
        )
    if len(y_cols) != dim_y:
        raise DataError(
            f"{context.name}: the model predicts {dim_y} output column(s) but the context has "
            f"{len(y_cols)} besides the inputs {column_names(x_cols)}: "
            f"{column_names(y_cols)}; name the outputs with y_cols (--y-cols)"
        )
    return x_cols, y_cols


def as_list(cols) -> list:
    """A column name, or an iterable of names, as a list (``None``: no column)."""
    return [cols] if isinstance(cols, str) else list(cols or [])


def column_names(cols) -> str:
    return ", ".join(repr(c) for c in cols) if len(cols) else "none"


def require_columns(table: Table, cols: list, named_by: str | None = None) -> None:
    """A :class:`DataError` for the first of ``cols`` that ``table`` lacks, naming the option
    that named it (``named_by``) and the columns it has."""
    by = f" (named by {named_by})" if named_by else ""
    for col in cols:
        if col not in table.frame.columns:
            raise DataError(
                f"{table.name}: no column {col!r}{by}; its columns are "
                f"{column_names(table.frame.columns)}"
            )


def cell_text(value) -> str:
    """A cell's value as the user wrote it: strings quoted, numbers plain."""
    return repr(value) if isinstance(value, str) else str(value)


def warn_user(message: str) -> None:
    """A ``UserWarning`` attributed to the first caller outside tnpx (the user's line)."""
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("tnpx."):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


__all__ = [
    "CSV_OPTIONS",
    "NETCDF_SUFFIXES",
    "DataError",
    "Table",
    "as_list",
    "cell_text",
    "choose_columns",
    "column_names",
    "csv_errors",
    "is_netcdf",
    "read_table",
    "require_columns",
    "warn_user",
]
