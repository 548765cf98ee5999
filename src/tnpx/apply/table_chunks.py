"""A user's table a chunk of rows at a time, so that a long target file is never held whole.

A CSV file is read by pandas ``chunksize`` rows at a time, with the options and the errors of
:func:`tnpx.user_files.read_table`; each chunk is a :class:`~tnpx.user_files.Table`
whose ``offset`` keeps the row numbers in messages those of the whole file. A DataFrame or
NetCDF file is already whole in memory, and is cut into slices.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..user_files import CSV_OPTIONS, Table, csv_errors, is_netcdf, read_table
from ..user_table import UserTable, read_inputs

if TYPE_CHECKING:
    import pandas as pd

Chunks = Callable[[], Iterator[Table]]
Reads = Callable[[], Iterator[UserTable]]


def open_chunked(source, role: str, rows: int | None) -> tuple[Table, Chunks]:
    """The table's header (its columns, no rows; a DataFrame or a NetCDF file whole) and a
    function giving its chunks of ``rows`` rows (all rows in one where ``rows`` is None).
    Call the function again for a second pass: a file is read again.

    Raises:
        DataError: as :func:`tnpx.user_files.read_table`, for the header at once, for a
            row when its chunk is read.
    """
    if rows is not None and isinstance(source, (str, Path)) and not is_netcdf(Path(source)):
        head = read_table(source, role, header_only=True)
        return head, lambda: _file_chunks(head, rows)
    whole = read_table(source, role)
    return whole, lambda: _slices(whole, rows)


def _file_chunks(head: Table, rows: int) -> Iterator[Table]:
    offset = 0
    for frame in read_csv_chunks(Path(head.name), rows):
        yield Table(frame, head.name, head.from_file, offset)
        offset += len(frame)


def _slices(whole: Table, rows: int | None) -> Iterator[Table]:
    n = len(whole.frame)
    step = n if rows is None else rows
    for start in range(0, n, max(step, 1)):
        yield Table(whole.frame.iloc[start : start + step], whole.name, whole.from_file, start)


def read_csv_chunks(path: Path, rows: int) -> Iterator[pd.DataFrame]:
    """The CSV file at ``path``, ``rows`` data rows at a time."""
    import pandas as pd

    with csv_errors(path):
        reader = pd.read_csv(path, chunksize=rows, **CSV_OPTIONS)
    with reader:
        while True:
            with csv_errors(path):  # a chunk is parsed here, so its errors surface here
                chunk = next(reader, None)
            if chunk is None:
                return
            yield chunk


def read_chunks(chunks: Chunks, x_cols: list, drop_missing: bool, keep: bool) -> Reads:
    """A function giving each chunk's inputs ``x_cols`` read (:func:`tnpx.user_table.
    read_inputs`) as the chunk is reached. Called again (a second pass) it reads a file's
    chunks again; with ``keep`` (a table whole in memory) it gives the tables the first
    complete pass read, so no column is converted twice."""

    def fresh() -> Iterator[UserTable]:
        for table in chunks():
            yield read_inputs(table, x_cols, drop_missing)

    if not keep:
        return fresh
    kept: list[UserTable] = []
    complete = False

    def again() -> Iterator[UserTable]:
        nonlocal complete
        if complete:
            yield from kept
            return
        kept.clear()  # an unfinished earlier pass starts over
        for read in fresh():
            kept.append(read)
            yield read
        complete = True

    return again
