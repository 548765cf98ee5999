"""A user's long table of many tasks as a task source: one row per point, task-id columns say
which task a point belongs to, input columns ``x`` and output columns ``y``.

    data: {name: table, path: growth.csv, task: curve, x: [day], y: [od]}

The table is read once (CSV, Parquet, or from Python a pandas DataFrame:
:meth:`TableSampler.from_frame`), checked, sorted by task and split **by task**: whole tasks
are held out for validation and test, never points inside them, chosen by a hash of each
task's key, by time (the latest tasks are test) or by region (whole regions held out):
``split_by``, see :mod:`tnpx.data.table.splits`. Inputs and outputs are
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

Bad data is a :class:`~tnpx.user_files.DataError` of one line naming the file, the column and,
where it applies, the task (:mod:`tnpx.data.table.checks`): a missing input value, a row
without any output value, or an output without any value (in the training tasks) among them.
Tasks too small to split are skipped with one warning that counts and names them; nothing
else is dropped.

This module draws the batches; the options are :mod:`tnpx.data.table.config`, and reading the
table into its normalised splits is :mod:`tnpx.data.table.reading`.

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

from typing import TYPE_CHECKING, ClassVar

import torch

from ...batch import Batch
from ..base import SPLITS, TaskSampler, uniform
from .checks import _check_options
from .config import TableConfig
from .reading import TaskSplit, load_tasks, read_source

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

    from ...user_files import Table


class TableSampler(TaskSampler):
    """Batches of tasks from a long table; see :class:`TableConfig` and the module docstring.

    A batch's ``info["task"]`` ``[batch]`` holds each task's index into
    :meth:`task_keys` of its split; its ``mask_yc`` / ``mask_yt`` mark missing outputs (None
    where a batch has none). With the option ``exposure``, ``info["exposure_c"]`` ``[batch,
    n_ctx, 1]`` and ``info["exposure_t"]`` ``[batch, n_tgt, 1]`` hold each point's exposure
    (float64, as in the table; 1 at padding).
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
        table = read_source(frame if frame is not None else config.path)
        columns = (self.task_cols, self.x_cols, self.y_cols)
        self._splits, self._loc, self._scale, self._spans = load_tasks(table, *columns, config)

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
        ``value_model = (value - loc) / scale`` per column, as plain lists (storable); per
        input column its ``range`` ``[low, high]`` over the training tasks' rows; with the
        option ``exposure``, ``exposure: {column: <name>}`` (never mapped)."""
        dx = self.dim_x
        stored = {
            "x": {
                "columns": list(self.x_cols),
                "loc": self._loc[:dx],
                "scale": self._scale[:dx],
                "range": self._spans,
            },  # fmt: skip
            "y": {"columns": list(self.y_cols), "loc": self._loc[dx:], "scale": self._scale[dx:]},
        }
        if self.table_config.exposure is not None:  # tnpx.predict asks context and targets for it
            stored["exposure"] = {"column": self.table_config.exposure}
        return stored

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
        ctx = (rows[is_ctx], seg[is_ctx], rank[is_ctx], n_ctx)
        xc, yc, mask_c, mask_yc = _scatter(part, *ctx)
        tgt = (rows[is_tgt], seg[is_tgt], rank[is_tgt] - n_ctx[seg[is_tgt]], n_tgt)
        xt, yt, mask_t, mask_yt = _scatter(part, *tgt)
        info = {"task": tasks}
        if part.exposure is not None:  # a count model's exposures (tnpx.models.exposure)
            info["exposure_c"], info["exposure_t"] = _exposure(part, *ctx), _exposure(part, *tgt)
        return Batch(xc, yc, xt, yt, mask_c, info, mask_t, mask_yc, mask_yt)

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


def _exposure(
    part: TaskSplit, rows: torch.Tensor, task: torch.Tensor, slot: torch.Tensor, n: torch.Tensor
) -> torch.Tensor:
    """The exposures of rows ``rows [m]`` placed as :func:`_scatter` places them, ``[batch,
    max(n), 1]``; 1 at padding (a valid exposure that the masks leave out)."""
    out = part.exposure.new_ones(len(n), int(n.max()), 1)
    out[task, slot] = part.exposure[rows]
    return out


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


__all__ = [
    "TableConfig",
    "TableSampler",
]
