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

Bad data is a :class:`~tnpx.tables.DataError` of one line naming the file, the column and,
where it applies, the task. Tasks too small to split are skipped with one warning that
counts and names them; nothing else is dropped.

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
from ..tables import DataError, Table, column_names, numeric_rows, read_table, warn_user
from .base import SPLITS, TaskSampler, uniform
from .table_splits import SPLIT_BY, split_tasks

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
    counting regions); see :mod:`tnpx.data.table_splits`.
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
    (normalised, float32); ``sizes [n_tasks]``; ``keys``: each task's key."""

    x: torch.Tensor
    y: torch.Tensor
    offsets: torch.Tensor
    sizes: torch.Tensor
    keys: list

    @property
    def n_tasks(self) -> int:
        return len(self.keys)


class TableSampler(TaskSampler):
    """Batches of tasks from a long table; see :class:`TableConfig` and the module docstring.

    A batch's ``info["task"]`` ``[batch]`` holds each task's index into
    :meth:`task_keys` of its split.
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
        n_ctx]`` / ``mask_t [batch, n_tgt]`` marking real points (None where all are)."""
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
        xc, yc, mask_c = _scatter(part, rows[is_ctx], seg[is_ctx], rank[is_ctx], n_ctx)
        tgt_slot = rank[is_tgt] - n_ctx[seg[is_tgt]]
        xt, yt, mask_t = _scatter(part, rows[is_tgt], seg[is_tgt], tgt_slot, n_tgt)
        return Batch(xc, yc, xt, yt, mask_c, {"task": tasks}, mask_t)

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
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Rows ``rows [m]`` of ``part`` placed at ``(task, slot)`` of padded ``x [batch, max(n),
    dim_x]``, ``y [batch, max(n), dim_y]``, and the mask ``[batch, max(n)]`` of the ``n
    [batch]`` real slots per task (None where every slot is real)."""
    b, width = len(n), int(n.max())
    x = part.x.new_zeros(b, width, part.x.shape[1])
    y = part.y.new_zeros(b, width, part.y.shape[1])
    x[task, slot] = part.x[rows]
    y[task, slot] = part.y[rows]
    mask = torch.arange(width) < n[:, None]
    return x, y, None if bool(mask.all()) else mask


# -- options -----------------------------------------------------------------------------------
def _as_list(cols) -> list:
    return [cols] if isinstance(cols, str) else list(cols or [])


def _check_options(
    c: TableConfig, has_frame: bool, source: str = "table"
) -> tuple[list, list, list]:
    """The task, input and output columns; a ``ValueError`` for an option out of range."""
    if c.path is None and not has_frame:
        raise ValueError(
            f"data sampler {source!r} needs path: a CSV or Parquet file, one row a point"
        )
    task, x, y = _as_list(c.task), _as_list(c.x), _as_list(c.y)
    for option, cols in (("task", task), ("x", x), ("y", y)):
        if not cols:
            raise ValueError(f"{source}: name the {option} column(s) ({option}: [COLUMN, ...])")
    named = [*task, *x, *y]
    twice = sorted({str(col) for col in named if named.count(col) > 1})
    if twice:
        raise ValueError(f"{source}: column(s) {twice} named more than once among task, x and y")
    if c.min_ctx < 1:
        raise ValueError(
            f"{source}: min_ctx must be >= 1 (a task needs a context), got {c.min_ctx}"
        )
    if c.max_ctx is not None and c.max_ctx < c.min_ctx:
        raise ValueError(f"{source}: max_ctx={c.max_ctx} is below min_ctx={c.min_ctx}")
    if c.max_tgt is not None and c.max_tgt < 1:
        raise ValueError(f"{source}: max_tgt must be >= 1 (or null: no cap), got {c.max_tgt}")
    if len(c.ctx_fraction) != 2 or not 0 <= c.ctx_fraction[0] <= c.ctx_fraction[1] <= 1:
        raise ValueError(
            f"{source}: ctx_fraction must be [low, high], 0 <= low <= high <= 1, "
            f"got {c.ctx_fraction}"
        )
    if not 0 < c.val_fraction < 1:  # training validates on it
        raise ValueError(f"{source}: val_fraction must lie in (0, 1), got {c.val_fraction}")
    if not 0 <= c.test_fraction < 1 or c.val_fraction + c.test_fraction >= 1:
        raise ValueError(
            f"{source}: test_fraction must lie in [0, 1) and leave training tasks "
            f"(val_fraction + test_fraction < 1), got {c.test_fraction}"
        )
    _check_split_options(c, source)
    return task, x, y


def _check_split_options(c: TableConfig, source: str) -> None:
    """``split_by`` and the options that go with it."""
    if c.split_by not in SPLIT_BY:
        raise ValueError(
            f"{source}: split_by must be one of {', '.join(SPLIT_BY)}, got {c.split_by!r}"
        )
    if c.split_by == "task" and c.split_column is not None:
        raise ValueError(f"{source}: split_column is for split_by time or region, not task")
    if c.split_by == "time" and c.split_column is None:
        raise ValueError(f"{source}: split_by time needs split_column: the column of each time")
    if c.split_by == "region" and c.split_column is None:
        raise ValueError(f"{source}: split_by region needs split_column: the column of regions")
    lists = {"val": c.val_regions, "test": c.test_regions}
    if all(v is None for v in lists.values()):
        return
    if c.split_by != "region":
        raise ValueError(f"{source}: val_regions/test_regions are for split_by region")
    if not c.val_regions:  # training validates on held-out tasks
        raise ValueError(f"{source}: name the regions held out for validation (val_regions)")
    both = sorted({str(r) for r in c.val_regions} & {str(r) for r in c.test_regions or []})
    if both:
        raise ValueError(f"{source}: region(s) {both} named in both val_regions and test_regions")


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
    import pandas as pd

    if not path.is_file():
        raise DataError(f"{path}: {'is a folder, not a file' if path.is_dir() else 'no such file'}")
    try:
        frame = pd.read_parquet(path)
    except ImportError:
        raise DataError(
            f"{path}: reading Parquet files needs pyarrow (pip install pyarrow); or save the "
            "table as CSV"
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
    _check_missing(table, x_cols, y_cols, code, keys, show)
    values = numeric_rows(table, [*x_cols, *y_cols]).to_numpy()  # [rows, dim_x + dim_y]
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
    loc, scale = _normalisation(values[train_rows], c.normalise)
    scaled = ((values - loc) / scale).astype(np.float32)
    parts = {}
    for name, index in SPLITS.items():
        tasks = np.flatnonzero(split == index)  # in key order, as rows are
        rows = order[row_split == index]
        part_sizes = torch.from_numpy(sizes[tasks].astype(np.int64))
        parts[name] = TaskSplit(
            x=torch.from_numpy(np.ascontiguousarray(scaled[rows, : len(x_cols)])),
            y=torch.from_numpy(np.ascontiguousarray(scaled[rows, len(x_cols) :])),
            offsets=torch.cumsum(part_sizes, 0) - part_sizes,
            sizes=part_sizes,
            keys=[keys[i] for i in tasks],
        )
    return parts, loc.tolist(), scale.tolist()


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


def _check_missing(table, x_cols, y_cols, code, keys, show) -> None:
    """A missing input or output value is an error (the table source does not mask yet)."""
    for col in [*x_cols, *y_cols]:
        missing = table.frame[col].isna().to_numpy()
        if not missing.any():
            continue
        if missing.all() and col in y_cols:
            raise DataError(f"{table.name}, column {col!r}: every value is missing")
        pos = int(np.argmax(missing))
        n_tasks = len(np.unique(code[missing]))
        raise DataError(
            f"{table.name}, column {col!r}: {int(missing.sum())} missing value(s) in {n_tasks} "
            f"task(s), the first in task {show(keys[code[pos]])} ({table.where(pos)}); missing "
            "values are not supported yet: fill them in or remove those rows"
        )


def _check_varies(table: Table, y_cols: list, y: np.ndarray) -> None:
    """An output column with one value throughout leaves nothing to learn."""
    for j, col in enumerate(y_cols):
        if (y[:, j] == y[0, j]).all():
            raise DataError(
                f"{table.name}, column {col!r}: every value is {y[0, j]:g}; an output that "
                "never changes cannot be learnt"
            )


def _check_duplicates(table, x_cols, code, x, order, keys, show) -> None:
    """Two rows of one task at the same inputs: an error (context and target would share a
    point). ``order`` sorts the rows by task, then inputs."""
    xs, cs = x[order], code[order]
    same = (cs[1:] == cs[:-1]) & (xs[1:] == xs[:-1]).all(1)
    if not same.any():
        return
    first = int(order[1:][same].min())
    at = ", ".join(f"{col}={v:g}" for col, v in zip(x_cols, x[first]))
    raise DataError(
        f"{table.name}: {int(same.sum())} row(s) repeat the inputs {column_names(x_cols)} of "
        f"another row of their task, the first in task {show(keys[code[first]])} "
        f"({table.where(first)}: {at}); average repeated measurements, or add the column that "
        "tells them apart to task"
    )


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
    training rows ``train [rows, dim_x + dim_y]`` (a column constant there keeps scale 1)."""
    width = train.shape[1]
    if not normalise:
        return np.zeros(width), np.ones(width)
    loc, scale = train.mean(0), train.std(0)
    return loc, np.where(scale > 0, scale, 1.0)
