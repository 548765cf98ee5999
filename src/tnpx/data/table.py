"""A user's long table of many tasks as a task source: one row per point, task-id columns say
which task a point belongs to, input columns ``x`` and output columns ``y``.

    data: {name: table, path: growth.csv, task: curve, x: [day], y: [od]}

The table is read once (CSV, Parquet, or from Python a pandas DataFrame:
:meth:`TableSampler.from_frame`), checked, sorted by task and split **by task**: whole tasks
are held out for validation and test, never points inside them, chosen by a hash of each
task's key, by time (the latest tasks are test) or by region (whole regions held out):
``split_by``, see :mod:`tnpx.data.table_splits`. Inputs and outputs are
normalised per column with the mean and standard deviation of the training tasks' rows only,
one affine map for every task and split, so an input keeps its meaning (day 0 is day 0 in
every task). Each batch draws tasks of one split, shuffles each task's points and splits them
into context and target by a random fraction; tasks of different sizes are padded to the
batch's largest and marked by ``mask_c`` / ``mask_t``.

A missing output value (an empty cell or NaN) in a row whose other outputs are observed is
masked, not dropped with its row: batches carry ``mask_yc`` / ``mask_yt`` (True = observed;
the value itself is 0.0), scores leave it out, and a model reads it only if it can
(``missing_outputs: true`` for the transformer NPs; :attr:`TableSampler.missing_outputs`
says whether a table has any). Each column's normalisation uses its observed values.

Bad data is a :class:`~tnpx.data.user_files.DataError` of one line naming the file, the column and,
where it applies, the task (:mod:`tnpx.data.table_checks`): a missing input value, a row
without any output value, or an output without any value (in the training tasks) among them.
Tasks too small to split are skipped with one warning that counts and names them; nothing
else is dropped.

    >>> import numpy as np, pandas as pd
    >>> from tnpx.data import batch_at
    >>> from tnpx.data.table import TableSampler
    >>> t = np.tile(np.arange(10.0), 20)
    >>> frame = pd.DataFrame({"curve": np.repeat(np.arange(20), 10), "t": t, "v": np.sin(t)})
    >>> sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["v"], batch_size=4)
    >>> batch_at(sampler, step=0, split="val").xc.shape[0]
    4
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import torch

from ..batch import Batch
from .base import SPLITS, TaskSampler, uniform
from .table_checks import (
    _check_duplicates,
    _check_missing,
    _check_options,
    _check_trained,
    _check_varies,
)
from .table_splits import split_tasks
from .user_files import DataError, Table, column_names, numeric_rows, read_table, warn_user

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

PARQUET_SUFFIXES = {".parquet", ".pq"}
SHOWN = 5  # task keys a warning names


@dataclass
class TaskDraws:
    """How each task's points become context and targets, and how many tasks are held out:
    the options the ``table`` source and those built on it (``stations``) share."""

    min_ctx: int = 1
    max_ctx: int | None = None
    ctx_fraction: list[float] = field(default_factory=lambda: [0.1, 0.9])
    max_tgt: int | None = None
    val_fraction: float = 0.1
    test_fraction: float = 0.1
    split_seed: int = 0
    normalise: bool = True


@dataclass
class TableConfig(TaskDraws):
    """Where the table is, which columns are what, and how tasks are split.

    ``path``: a CSV or Parquet file (relative to the working folder). ``task``: the task-id
    column(s); ``x``/``y``: the input and output columns. Each task's context is a fraction
    ``U(ctx_fraction)`` of its points, clipped to ``[min_ctx, n - 1]`` and to ``max_ctx``; the
    rest are targets, at most ``max_tgt``. ``val_fraction``/``test_fraction`` of the tasks
    (rounded) are held out, chosen by ``split_by``: ``task`` (a hash of each task's key and
    ``split_seed``, so a task's split depends neither on the sampler's seed nor on the order
    of rows), ``time`` (the latest tasks by ``split_column``) or ``region`` (whole regions of
    ``split_column``: those in ``val_regions``/``test_regions``, or hashed with the fractions
    counting regions); see :mod:`tnpx.data.table_splits`. A missing ``y`` value is masked
    where the row has another output (module docstring); any other missing value is an error.
    """

    path: str | None = None
    task: str | list[str] | None = None
    x: str | list[str] = field(default_factory=list)
    y: str | list[str] = field(default_factory=list)
    split_by: str = "task"
    split_column: str | None = None
    val_regions: list | None = None
    test_regions: list | None = None


@dataclass
class TaskSplit:
    """The tasks of one split, their rows contiguous and in task order: task ``i``'s points
    are rows ``offsets[i]:offsets[i + 1]`` of ``x [rows, dim_x]`` and ``y [rows, dim_y]``
    (normalised, float32; 0.0 at a missing output); ``sizes [n_tasks]``; ``keys``: each
    task's key; ``observed [rows, dim_y]`` (bool, True = observed; None: every output is)."""

    x: torch.Tensor
    y: torch.Tensor
    offsets: torch.Tensor
    sizes: torch.Tensor
    keys: list
    observed: torch.Tensor | None = None

    @property
    def n_tasks(self) -> int:
        return len(self.keys)


class TableSampler(TaskSampler):
    """Batches of tasks from a long table; see :class:`TableConfig` and the module docstring.

    A batch's ``info["task"]`` ``[batch]`` holds each task's index into
    :meth:`task_keys` of its split; its ``mask_yc`` / ``mask_yt`` mark missing outputs (None
    where a batch has none).
    """

    splits_tasks: ClassVar[bool] = True
    source: ClassVar[str] = "table"  # the sampler's name in messages

    def __init__(
        self,
        config: TableConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
        frame: pd.DataFrame | Table | None = None,
    ):
        # table_config: what the table machinery reads (a source built on it keeps its own
        # config as .config)
        self.config = self.table_config = config = config or TableConfig()
        columns = _check_options(config, frame is not None, self.source)
        self.task_cols, self.x_cols, self.y_cols = columns
        self.dim_x, self.dim_y = len(self.x_cols), len(self.y_cols)
        self.batch_size, self.seed = batch_size, seed
        table = _read(frame if frame is not None else config.path)
        columns = (self.task_cols, self.x_cols, self.y_cols)
        self._splits, self._loc, self._scale = _load(table, *columns, config)

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, batch_size: int = 16, seed: int = 0, **options
    ) -> TableSampler:
        """A sampler of the tasks in a pandas DataFrame; ``options`` as :class:`TableConfig`'s
        (``task``, ``x``, ``y``, ...; not ``path``)."""
        if "path" in options:
            raise ValueError("from_frame reads the DataFrame given; path is not an option here")
        return cls(TableConfig(**options), batch_size, seed, frame=frame)

    @property
    def normalisation(self) -> dict:
        """The affine maps applied to every split, fitted on the training tasks' rows:
        ``value_model = (value - loc) / scale`` per column, as plain lists (storable)."""
        dx = self.dim_x
        return {
            "x": {"columns": list(self.x_cols), "loc": self._loc[:dx], "scale": self._scale[:dx]},
            "y": {"columns": list(self.y_cols), "loc": self._loc[dx:], "scale": self._scale[dx:]},
        }

    @property
    def missing_outputs(self) -> bool:
        """Whether some output value of the table's tasks is missing (masked in batches; a
        model must read them: ``missing_outputs: true``)."""
        return any(part.observed is not None for part in self._splits.values())

    def task_keys(self, split: str = "train") -> list:
        """The keys of ``split``'s tasks in the order ``info["task"]`` indexes them: a value
        for one task column, a tuple for several (none where the split is empty)."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
        return list(self._splits[split].keys)

    def _part(self, split: str) -> TaskSplit:
        """The tasks of ``split``, which must hold some (a batch cannot be empty)."""
        self.task_keys(split)  # checks the name
        part = self._splits[split]
        if part.n_tasks == 0:
            c = self.table_config
            lists = c.split_by == "region" and (c.val_regions or c.test_regions)
            why = f"{split}_regions is empty" if lists else f"{split}_fraction is 0"
            raise ValueError(f"{self.source}: the {split} split has no tasks ({why})")
        return part

    def sample(
        self, generator: torch.Generator, batch_size: int | None = None, split: str = "train"
    ) -> Batch:
        """One batch of ``split``'s tasks drawn with ``generator`` only: ``xc [batch, n_ctx,
        dim_x]`` etc., padded to the batch's largest context and target set, ``mask_c [batch,
        n_ctx]`` / ``mask_t [batch, n_tgt]`` marking real points and ``mask_yc [batch, n_ctx,
        dim_y]`` / ``mask_yt [batch, n_tgt, dim_y]`` observed outputs (None where all are)."""
        part, g = self._part(split), generator
        b = batch_size or self.batch_size
        tasks = _pick_tasks(g, part.n_tasks, b)
        sizes = part.sizes[tasks]
        n_ctx, n_tgt = self._counts(g, sizes)
        # Every point of the chosen tasks: its task in the batch and a random rank within the
        # task; rank < n_ctx is context, the next n_tgt are targets.
        seg = torch.repeat_interleave(torch.arange(b), sizes)
        rank = torch.arange(len(seg)) - (torch.cumsum(sizes, 0) - sizes)[seg]
        rows = part.offsets[tasks][seg] + rank
        # Integer keys (task << 40 | random bits): one stable sort shuffles within each task
        # exactly, tasks staying in place.
        noise = torch.randint(2**40, (len(seg),), generator=g)
        rows = rows[((seg << 40) | noise).argsort(stable=True)]
        is_ctx = rank < n_ctx[seg]
        is_tgt = ~is_ctx & (rank < (n_ctx + n_tgt)[seg])
        xc, yc, mask_c, mask_yc = _scatter(part, rows[is_ctx], seg[is_ctx], rank[is_ctx], n_ctx)
        tgt_slot = rank[is_tgt] - n_ctx[seg[is_tgt]]
        xt, yt, mask_t, mask_yt = _scatter(part, rows[is_tgt], seg[is_tgt], tgt_slot, n_tgt)
        return Batch(xc, yc, xt, yt, mask_c, {"task": tasks}, mask_t, mask_yc, mask_yt)

    def _counts(self, g: torch.Generator, sizes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Context and target counts ``[batch]`` of tasks of ``sizes [batch]`` points."""
        c = self.table_config
        lo, hi = c.ctx_fraction
        fraction = uniform(g, (len(sizes),), lo, hi)
        n_ctx = (fraction * sizes).round().long().clamp_min(c.min_ctx)
        n_ctx = torch.minimum(n_ctx, sizes - 1)  # at least one target
        if c.max_ctx is not None:
            n_ctx = n_ctx.clamp_max(c.max_ctx)
        n_tgt = sizes - n_ctx
        if c.max_tgt is not None:
            n_tgt = n_tgt.clamp_max(c.max_tgt)
        return n_ctx, n_tgt


# -- sampling ----------------------------------------------------------------------------------
def _pick_tasks(g: torch.Generator, n_tasks: int, b: int) -> torch.Tensor:
    """``[b]`` task indices: distinct while ``b <= n_tasks``, else every task before a repeat."""
    rounds = -(-b // n_tasks)
    return torch.cat([torch.randperm(n_tasks, generator=g) for _ in range(rounds)])[:b]


def _scatter(
    part: TaskSplit, rows: torch.Tensor, task: torch.Tensor, slot: torch.Tensor, n: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Rows ``rows [m]`` of ``part`` placed at ``(task, slot)`` of padded ``x [batch, max(n),
    dim_x]``, ``y [batch, max(n), dim_y]``, the mask ``[batch, max(n)]`` of the ``n [batch]``
    real slots per task (None where every slot is real) and the observed outputs ``[batch,
    max(n), dim_y]`` (True at padding; None where every output is observed)."""
    b, width = len(n), int(n.max())
    x = part.x.new_zeros(b, width, part.x.shape[1])
    y = part.y.new_zeros(b, width, part.y.shape[1])
    x[task, slot] = part.x[rows]
    y[task, slot] = part.y[rows]
    mask = torch.arange(width) < n[:, None]
    observed = None
    if part.observed is not None:
        observed = torch.ones(b, width, part.y.shape[1], dtype=torch.bool)
        observed[task, slot] = part.observed[rows]
        observed = None if bool(observed.all()) else observed
    return x, y, None if bool(mask.all()) else mask, observed


# -- reading and checking ----------------------------------------------------------------------
def _read(source, role: str = "table") -> Table:
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

    from ..extras import MissingExtraError, require

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


def _load(
    table: Table, task_cols: list, x_cols: list, y_cols: list, c: TableConfig
) -> tuple[dict[str, TaskSplit], list[float], list[float]]:
    """Check ``table``, split its tasks and normalise: each split's tasks, and the ``loc`` and
    ``scale`` per input then output column (fitted on the training tasks)."""
    split_cols = [] if c.split_column is None else [c.split_column]
    _require(table, {"task": task_cols, "x": x_cols, "y": y_cols, "split_column": split_cols})
    if len(table.frame) == 0:
        raise DataError(f"{table.name}: the table has no rows")
    code, keys = _task_codes(table, task_cols)
    show = _key_text(task_cols)
    missing_y = _check_missing(table, x_cols, y_cols, code, keys, show)  # [rows, dim_y] | None
    values = _numbers(table, x_cols, y_cols, missing_y)  # [rows, dim_x + dim_y], NaN: missing
    x = values[:, : len(x_cols)]
    _check_varies(table, y_cols, values[:, len(x_cols) :])
    order = np.lexsort([*x.T[::-1], code])  # by task, then by inputs
    _check_duplicates(table, x_cols, code, x, order, keys, show)
    sizes = np.bincount(code, minlength=len(keys))
    kept = _kept_tasks(table, sizes, keys, show, c.min_ctx)
    split = np.full(len(keys), -1)  # -1: skipped
    split[kept] = split_tasks(table, keys, code, kept, show, c)
    row_split = split[code[order]]
    train_rows = order[row_split == SPLITS["train"]]
    if missing_y is not None:
        _check_trained(table, y_cols, values[train_rows, len(x_cols) :])
    loc, scale = _normalisation(values[train_rows], c.normalise)
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
        )
    return parts, loc.tolist(), scale.tolist()


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


def _require(table: Table, named: dict[str, list]) -> None:
    for option, cols in named.items():
        for col in cols:
            if col not in table.frame.columns:
                raise DataError(
                    f"{table.name}: no column {col!r} (named by {option}); its columns are "
                    f"{column_names(table.frame.columns)}"
                )


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


def _normalisation(train: np.ndarray, normalise: bool) -> tuple[np.ndarray, np.ndarray]:
    """``loc`` and ``scale`` ``[dim_x + dim_y]``: the mean and standard deviation of the
    training rows ``train [rows, dim_x + dim_y]`` (a column constant there keeps scale 1), of
    each column's observed values where it has missing ones (NaN)."""
    width = train.shape[1]
    if not normalise:
        return np.zeros(width), np.ones(width)
    loc, scale = train.mean(0), train.std(0)
    for j in np.flatnonzero(np.isnan(loc)):  # only these: complete columns stay bit-identical
        seen = train[~np.isnan(train[:, j]), j]
        loc[j], scale[j] = seen.mean(), seen.std()
    return loc, np.where(scale > 0, scale, 1.0)
