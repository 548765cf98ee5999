"""Reading a ``table`` source's table into its splits (:mod:`tnpx.data.table`): the file or
DataFrame read, its columns and values checked (:mod:`tnpx.data.table.checks`), its rows
numbered by task and sorted, too-small tasks skipped with one warning, the tasks split
(:mod:`tnpx.data.table.splits`) and every column normalised with the training tasks' rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from ...likelihoods import check_support, family_of, output_scaling, read_exposure
from ...user_files import DataError, Table, as_list, read_table, require_columns, warn_user
from ...user_table import numeric_rows
from ..base import SPLITS
from .checks import _check_duplicates, _check_missing, _check_trained, _check_varies
from .splits import split_tasks

if TYPE_CHECKING:
    from .config import TableConfig

PARQUET_SUFFIXES = {".parquet", ".pq"}
SHOWN = 5  # task keys a warning names


@dataclass
class TaskSplit:
    """The tasks of one split, their rows contiguous and in task order: task ``i``'s points
    are rows ``offsets[i]:offsets[i + 1]`` of ``x [rows, dim_x]`` and ``y [rows, dim_y]``
    (normalised, float32; 0.0 at a missing output); ``sizes [n_tasks]``; ``keys``: each
    task's key; ``observed [rows, dim_y]`` (bool, True = observed; None: every output is);
    ``exposure [rows, 1]``: each row's exposure as the table has it (float64; None: no
    ``exposure`` option)."""

    x: torch.Tensor
    y: torch.Tensor
    offsets: torch.Tensor
    sizes: torch.Tensor
    keys: list
    observed: torch.Tensor | None = None
    exposure: torch.Tensor | None = None

    @property
    def n_tasks(self) -> int:
        return len(self.keys)


def read_source(source, role: str = "table") -> Table:
    """The table at ``source`` (a CSV, Parquet or NetCDF file, a DataFrame named in messages
    as the ``role`` DataFrame, or a :class:`Table` a source built on this one prepared)."""
    if isinstance(source, Table):
        return source
    if isinstance(source, (str, Path)) and Path(source).suffix.lower() in PARQUET_SUFFIXES:
        return _read_parquet(Path(source))
    return read_table(source, role)


def _read_parquet(path: Path) -> Table:
    """The Parquet file at ``path`` (``.parquet`` or ``.pq``), read with pandas' engine (the
    ``parquet`` extra's pyarrow). Every failure is a one-line :class:`DataError` naming it."""
    import pandas as pd

    from ...extras import MissingExtraError, require

    if not path.is_file():
        raise DataError(f"{path}: {'is a folder, not a file' if path.is_dir() else 'no such file'}")
    try:
        frame = pd.read_parquet(path)
    except ImportError as err:  # no engine: name the extra that brings one
        try:
            require("pyarrow", "parquet", "reading Parquet files")
        except MissingExtraError as missing:
            raise DataError(f"{path}: {missing}; or save the table as CSV") from None
        text = str(err).strip().splitlines()
        raise DataError(
            f"{path}: cannot read the Parquet file ({text[0] if text else err!r})"
        ) from None
    except Exception as err:  # any engine's failure: report it against the file
        text = str(err).strip().splitlines()
        raise DataError(
            f"{path}: cannot read the Parquet file ({text[0] if text else type(err).__name__})"
        ) from None
    return Table(frame, str(path), from_file=True)


def load_tasks(
    table: Table, task_cols: list, x_cols: list, y_cols: list, c: TableConfig
) -> tuple[dict[str, TaskSplit], list[float], list[float], list[list[float]]]:
    """Check ``table``, split its tasks and normalise: each split's tasks, the ``loc`` and
    ``scale`` per input then output column (fitted on the training tasks), and each input's
    ``[min, max]`` over the training tasks' rows (none where there are none)."""
    split_cols = [] if c.split_column is None else [c.split_column]
    named = {"task": task_cols, "x": x_cols, "y": y_cols, "split_column": split_cols}
    require_options(table, {**named, "exposure": as_list(c.exposure)})
    if len(table.frame) == 0:
        raise DataError(f"{table.name}: the table has no rows")
    code, keys = _task_codes(table, task_cols)
    show = _key_text(task_cols)
    missing_y = _check_missing(table, x_cols, y_cols, code, keys, show)  # [rows, dim_y] | None
    values = _numbers(table, x_cols, y_cols, missing_y)  # [rows, dim_x + dim_y], NaN: missing
    if c.likelihood is not None:  # every row, before a task is split off or skipped
        check_support(c.likelihood, values[:, len(x_cols) :], y_cols, where=table.name,
                      row_text=table.where)  # fmt: skip
    exposure = _exposures(table, c.exposure)  # [rows, 1] | None: as they are, never scaled
    x = values[:, : len(x_cols)]
    _check_varies(table, y_cols, values[:, len(x_cols) :])
    order = np.lexsort([*x.T[::-1], code])  # by task, then by inputs
    _check_duplicates(table, x_cols, code, x, order, keys, show, values[:, len(x_cols) :])
    sizes = np.bincount(code, minlength=len(keys))
    kept = _kept_tasks(table, sizes, keys, show, c.min_ctx)
    split = np.full(len(keys), -1)  # -1: skipped
    split[kept] = split_tasks(table, keys, code, kept, show, c)
    row_split = split[code[order]]
    train_rows = order[row_split == SPLITS["train"]]
    if missing_y is not None:
        _check_trained(table, y_cols, values[train_rows, len(x_cols) :])
    loc, scale = _normalisation(values[train_rows], c.normalise, c.likelihood, len(x_cols))
    scaled = ((values - loc) / scale).astype(np.float32)
    if missing_y is not None:
        scaled[:, len(x_cols) :][missing_y] = 0.0  # a value, never NaN: the mask says missing
    parts = {}
    for name, index in SPLITS.items():
        tasks = np.flatnonzero(split == index)  # in key order, as rows are
        rows = order[row_split == index]
        part_sizes = torch.from_numpy(sizes[tasks].astype(np.int64))
        missing = None if missing_y is None else missing_y[rows]
        parts[name] = TaskSplit(
            x=torch.from_numpy(np.ascontiguousarray(scaled[rows, : len(x_cols)])),
            y=torch.from_numpy(np.ascontiguousarray(scaled[rows, len(x_cols) :])),
            offsets=torch.cumsum(part_sizes, 0) - part_sizes,
            sizes=part_sizes,
            keys=[keys[i] for i in tasks],
            observed=None if missing is None or not missing.any() else torch.from_numpy(~missing),
            exposure=None if exposure is None else torch.from_numpy(exposure[rows]),
        )
    train_x = values[train_rows, : len(x_cols)]
    spans = np.stack([train_x.min(0), train_x.max(0)], 1).tolist() if len(train_x) else []
    return parts, loc.tolist(), scale.tolist(), spans


def _numbers(table: Table, x_cols: list, y_cols: list, missing_y: np.ndarray | None) -> np.ndarray:
    """The inputs then outputs ``[rows, dim_x + dim_y]`` as float64, every value checked
    (numbers, finite); NaN where ``missing_y [rows, dim_y]`` marks a missing output."""
    cols = [*x_cols, *y_cols]
    if missing_y is None:
        return numeric_rows(table, cols).to_numpy()
    frame = table.frame[cols].copy()
    for j, col in enumerate(y_cols):  # a placeholder, so the observed values are checked
        frame[col] = frame[col].where(~missing_y[:, j], 0)
    values = numeric_rows(Table(frame, table.name, table.from_file, table.offset), cols)
    values = values.to_numpy(copy=True)
    values[:, len(x_cols) :][missing_y] = np.nan
    return values


def _exposures(table: Table, column: str | None) -> np.ndarray | None:
    """The ``exposure`` column's values ``[rows, 1]`` (float64, each checked a finite number
    > 0: :func:`tnpx.likelihoods.read_exposure`); None where there is none."""
    return None if column is None else read_exposure(table, column)[:, None]


def require_options(table: Table, named: dict[str, list]) -> None:
    """A :class:`DataError` for the first column an option of ``named`` (``{option:
    columns}``) names that ``table`` lacks."""
    for option, cols in named.items():
        require_columns(table, cols, named_by=option)


def _task_codes(table: Table, task_cols: list) -> tuple[np.ndarray, list]:
    """Each row's task number ``[rows]`` (tasks numbered in the order of their keys) and the
    keys: a value for one task column, a tuple of values for several."""
    import pandas as pd

    code = None
    for col in task_cols:
        column = table.frame[col]
        try:
            part, uniques = pd.factorize(column, sort=True)
        except TypeError:  # values that do not sort together (numbers and text): as text
            part, uniques = pd.factorize(column.astype(str), sort=True)
        if (part < 0).any():
            pos = int(np.argmax(part < 0))
            raise DataError(f"{table.name}, {table.where(pos)}, column {col!r}: missing task id")
        if code is None:
            code = part.astype(np.int64)
        else:  # numbered again after each column, so the combined number never overflows
            code = np.unique(code * len(uniques) + part, return_inverse=True)[1].reshape(-1)
    _, first = np.unique(code, return_index=True)
    columns = [table.frame[col].to_numpy()[first].tolist() for col in task_cols]
    keys = columns[0] if len(task_cols) == 1 else list(zip(*columns))
    return code, keys


def _key_text(task_cols: list):
    """A function writing a task's key as the user wrote it: ``curve='a'``, ``plate=1, well=3``."""

    def show(key) -> str:
        values = key if len(task_cols) > 1 else (key,)
        return ", ".join(f"{col}={v!r}" for col, v in zip(task_cols, values))

    return show


def _kept_tasks(table: Table, sizes: np.ndarray, keys: list, show, min_ctx: int) -> np.ndarray:
    """The tasks with at least ``min_ctx + 1`` points; one warning counts and names the rest."""
    small = sizes < min_ctx + 1
    if small.any():
        names = [show(keys[i]) for i in np.flatnonzero(small)[:SHOWN]]
        more = int(small.sum()) - len(names)
        warn_user(
            f"{table.name}: skipped {int(small.sum())} of {len(keys)} tasks with fewer than "
            f"{min_ctx + 1} points (min_ctx={min_ctx} context points and one target): "
            f"{'; '.join(names)}{f' and {more} more' if more else ''}"
        )
    return np.flatnonzero(~small)


def _normalisation(
    train: np.ndarray, normalise: bool, likelihood=None, dim_x: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``loc`` and ``scale`` ``[dim_x + dim_y]``: the mean and standard deviation of the
    training rows ``train [rows, dim_x + dim_y]`` (a column constant there keeps scale 1), of
    each column's observed values where it has missing ones (NaN); the outputs (after the
    first ``dim_x`` columns) by the non-Gaussian ``likelihood``'s rule where one is given
    (:func:`tnpx.likelihoods.output_scaling`)."""
    width = train.shape[1]
    if not normalise:
        return np.zeros(width), np.ones(width)
    loc, scale = train.mean(0), train.std(0)
    for j in np.flatnonzero(np.isnan(loc)):  # only these: complete columns stay bit-identical
        seen = train[~np.isnan(train[:, j]), j]
        loc[j], scale[j] = seen.mean(), seen.std()
    if likelihood is not None and family_of(likelihood) != "gaussian":
        loc[dim_x:], scale[dim_x:] = output_scaling(likelihood, loc[dim_x:], scale[dim_x:])
    return loc, np.where(scale > 0, scale, 1.0)
