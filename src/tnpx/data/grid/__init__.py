"""Gridded data as a task source: a task is a window cut from an xarray Dataset (NetCDF files,
a Zarr store, or a Dataset in memory), its points drawn as context and targets.

    data: {name: grid, path: t2m.nc, y: [t2m], window: {lat: 15, lon: 15, time: 5}}

Any variable and dimension names: the outputs ``y`` share their dims, every dim gets a window
length, and a window is that many consecutive grid points of each dim. The inputs are the dims'
coordinates (times as hours since 1970-01-01, :mod:`tnpx.data.grid.files`) and any static
inputs (elevation on (lat, lon), say). Whole windows are held out for validation and test: the
last stretches of one dim (a period) or boxes of coordinates (regions, periods), and no window
of one split shares a cell with a window of another. Inputs and outputs are normalised with
the mean and standard deviation of the training split alone, one affine map per column for
every split, so an input keeps its meaning; training stores it in the checkpoint
(:attr:`GridSampler.normalisation`) and ``tnpx predict`` / ``tnpx eval`` map with it.

Data larger than ``memory_limit_mb`` stays on disk (``load: auto``): a batch reads just its
windows from the file, and the one pass at start-up (windows, statistics, fill values) reads a
block at a time (:mod:`tnpx.data.grid.windows`). A cell missing a value (NaN, or a value
declared by ``missing_value:``) of an output or static input is masked: never context, never a
target (:mod:`tnpx.data.grid.masking`); a window is drawn while at least ``min_valid`` of its
cells are valid, and one warning counts the windows and cells left out. Bad data (an
undeclared fill value, an unsorted coordinate, a window dim that is not an input) raises a
:class:`~tnpx.user_files.DataError` of one line naming the file and the variable
(:mod:`tnpx.data.grid.checks`).

The TE-4 temperature sampler (:mod:`tnpx.data.era5`) is this source with TE-4's layout and its
region statistics.

    >>> import numpy as np, xarray as xr
    >>> from tnpx.data import batch_at
    >>> t = np.arange(60.0)
    >>> data = xr.Dataset({"v": (("time", "x"), np.sin(t[:, None] + np.arange(12.0)))},
    ...                   coords={"time": t, "x": np.arange(12.0)})
    >>> sampler = GridSampler.from_dataset(data, y=["v"], window={"time": 5, "x": 4})
    >>> batch = batch_at(sampler, step=0, split="val")
    >>> batch.xc.shape[-1], batch.xc.shape[1] + batch.xt.shape[1]
    (2, 20)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

import torch

from ...batch import Batch
from ...input_checks import check_option
from ...likelihoods import check_exposure_option
from ...user_files import DataError, as_list
from ..base import CONTEXT_SIZE_RULES, SPLITS, TaskSampler, context_size
from .checks import (
    block_checks,
    check_clear,
    check_given,
    check_sorted,
    check_window_inputs,
    check_windows,
    warn_time_split,
)
from .config import GridConfig
from .files import GridData, open_grid
from .fill_values import declared
from .masking import masked_order
from .splits import split_regions, why_empty
from .windows import Windows, scan

if TYPE_CHECKING:  # pragma: no cover
    import xarray


class GridSampler(TaskSampler):
    """Batches of windows of a grid; see :class:`GridConfig` and the module docstring.

    ``Batch.info["origin"]`` ``[batch, len(x)]`` holds the coordinates (inputs' units) of each
    window's first grid point, in the order of the dim inputs; ``info["origin_index"]``
    ``[batch, n_dims]`` its grid indices in the data's dim order (every dim, inputs or not:
    what evaluation clusters by and plots date by). ``normalisation``: fixed maps
    (in :attr:`normalisation`'s form) used instead of fitting them.
    """

    splits_tasks: ClassVar[bool] = True
    centres_outputs_by_default: ClassVar[bool] = True  # measured: tnpx.config.source_defaults

    def __init__(
        self,
        config: GridConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
        dataset: xarray.Dataset | None = None,
        normalisation: dict | None = None,
    ):
        self.config = c = config or GridConfig()
        self.y, self.static = as_list(c.y), as_list(c.static)
        self.n_points, self.min_ctx, self.max_ctx = _check_options(c, self.y, dataset is not None)
        self.batch_size, self.seed = batch_size, seed
        fills = declared(c.missing_value, [*self.y, *self.static])
        self.data = data = open_grid(
            c.path if dataset is None else dataset,
            self.y,
            self.static,
            c.select,
            c.static_path,
            fills,
            c.exposure,
        )
        self.window = _window(data, c.window)
        self.x = _inputs(data, c.x, self.window)
        check_sorted(data)
        check_window_inputs(data, self.window, self.x)
        self.dim_x, self.dim_y = len(self.x) + len(self.static), len(self.y)
        regions = split_regions(data, c, self.window)
        if c.load == "memory" or (c.load == "auto" and data.nbytes <= c.memory_limit_mb * 2**20):
            data.load()
        # a window is drawn with at least ceil(N min_valid) valid cells, and never fewer than
        # two (one context point, one target)
        least = max(2, math.ceil(self.n_points * c.min_valid - 1e-9))
        check = block_checks(data, c)
        found = scan(data, self.window, regions, regions["train"], self.n_points - least, check)
        found.fills.check(data.name)
        self._windows, moments = found.windows, found.moments
        check_clear(data, self._windows, self.window)
        if normalisation is None:
            moments.check(data)
            normalisation = moments.normalisation(data, self.x, c.normalise, c.likelihood)
            # each input's unit, so that prediction can take dates (tnpx.apply.coordinate_units)
            normalisation["x"]["units"] = [data.units.get(v, "") for v in [*self.x, *self.static]]
        else:  # given maps (TE-4's, a checkpoint's) need no training data, only its columns
            check_given(normalisation, [*self.x, *self.static], self.y)
        if c.exposure is not None:  # tnpx.predict asks context and targets for it
            normalisation = {**normalisation, "exposure": {"column": c.exposure}}
        self._normalisation = normalisation
        as64 = {"dtype": torch.float64}
        self._loc = {k: torch.tensor(normalisation[k]["loc"], **as64) for k in "xy"}
        self._scale = {k: torch.tensor(normalisation[k]["scale"], **as64) for k in "xy"}
        self._coords = {d: torch.from_numpy(v) for d, v in data.coords.items()}
        self._statics = {s: torch.from_numpy(v) for s, (_, v) in data.statics.items()}
        check_windows(data, found, self.window, c.min_valid)
        warn_time_split(data, c, self.x)

    @classmethod
    def from_dataset(
        cls,
        dataset: xarray.Dataset,
        batch_size: int = 16,
        seed: int = 0,
        normalisation: dict | None = None,
        **options,
    ) -> GridSampler:
        """A sampler over an ``xarray.Dataset``; ``options`` as :class:`GridConfig`'s (not
        ``path``)."""
        if "path" in options:
            raise ValueError("from_dataset reads the Dataset given; path is not an option here")
        return cls(GridConfig(**options), batch_size, seed, dataset, normalisation)

    @property
    def normalisation(self) -> dict:
        """The affine maps of every split, ``value_model = (value - loc) / scale`` per input
        column (``x``, then the static inputs) and per output, as plain lists (storable);
        with the option ``exposure``, ``exposure: {column: <variable>}`` (never mapped)."""
        return self._normalisation

    def windows(self, split: str = "train") -> Windows:
        """The windows ``split`` draws from (``len``: how many)."""
        check_option("split", split, tuple(SPLITS))
        if split not in self._windows:
            raise ValueError(f"grid: the {split} split has no windows ({why_empty(self.config)})")
        return self._windows[split]

    def standardise(
        self, x: torch.Tensor | None = None, y: torch.Tensor | None = None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Inputs ``[..., dim_x]`` / outputs ``[..., dim_y]`` in the data's units to model units."""
        x = None if x is None else (x - self._loc["x"].to(x)) / self._scale["x"].to(x)
        y = None if y is None else (y - self._loc["y"].to(y)) / self._scale["y"].to(y)
        return x, y

    def to_physical(
        self, x: torch.Tensor | None = None, y: torch.Tensor | None = None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Undo :meth:`standardise` (float64)."""
        x = None if x is None else x.double() * self._scale["x"] + self._loc["x"]
        y = None if y is None else y.double() * self._scale["y"] + self._loc["y"]
        return x, y

    def _window_index(self, origin: torch.Tensor) -> list[torch.Tensor]:
        """Per dim, the grid index of every point ``[b, *window]`` of the windows starting at
        ``origin [b, n_dims]``."""
        b, dims = origin.shape[0], self.data.dims
        shape = (b, *self.window)
        index = []
        for d, w in enumerate(self.window):
            view = [b] + [1] * len(dims)
            view[d + 1] = w
            index.append((origin[:, d : d + 1] + torch.arange(w)).view(view).expand(shape))
        return index

    def window_points(self, origin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs ``[b, N, dim_x]`` and outputs ``[b, N, dim_y]`` (float64, the data's units)
        of the windows starting at ``origin [b, n_dims]``, points in the data's dim order."""
        b, dims = origin.shape[0], self.data.dims
        index = self._window_index(origin)
        columns = [self._coords[d][index[dims.index(d)]] for d in self.x]
        for name, (own, _) in self.data.statics.items():
            columns.append(self._statics[name][tuple(index[dims.index(d)] for d in own)])
        x = torch.stack(columns, -1).reshape(b, -1, self.dim_x)
        blocks = [self.data.read(o, self.window) for o in origin.tolist()]  # [n_y, *window]
        y = torch.stack([torch.from_numpy(block) for block in blocks]).movedim(1, -1)
        return x, y.reshape(b, -1, self.dim_y).double()

    def window_exposures(self, origin: torch.Tensor) -> torch.Tensor:
        """A count model's exposures ``[b, N]`` (float64, as the data has them) of the windows
        starting at ``origin [b, n_dims]``, points as :meth:`window_points` orders them."""
        own, values = self.data.exposure
        index = self._window_index(origin)
        at = tuple(index[self.data.dims.index(d)] for d in own)
        return torch.from_numpy(values)[at].reshape(origin.shape[0], -1)

    def sample(
        self, generator: torch.Generator, batch_size: int | None = None, split: str = "train"
    ) -> Batch:
        """One batch of ``split``'s windows drawn with ``generator`` only: ``xc [batch, n_ctx,
        dim_x]``, ``yc [batch, n_ctx, dim_y]``, ``xt [batch, N - n_ctx, dim_x]``, ``yt``; each
        task is one window, its points shuffled, the first ``n_ctx`` context. Where a drawn
        window has missing cells, ``mask_c [batch, n_ctx]`` and ``mask_t [batch, N - n_ctx]``
        are False at them (outputs 0.0, inputs the cell's coordinates, a missing static input
        0.0): never context, never a target
        (:func:`~tnpx.data.grid.masking.masked_order`); else both are None."""
        windows, g = self.windows(split), generator
        b = batch_size or self.batch_size
        n_ctx = context_size(g, self.min_ctx, self.max_ctx, self.config.ctx_size)
        origin = windows.draw(g, b)
        x, y = self.window_points(origin)
        rand = torch.rand(b, self.n_points, generator=g)
        missing = ~(torch.isfinite(x).all(-1) & torch.isfinite(y).all(-1))  # [b, N]
        masks = {}
        if missing.any():
            order, masks["mask_c"], masks["mask_t"] = masked_order(rand, missing, n_ctx)
        else:  # the complete-field rule, bit for bit
            order = rand.argsort(dim=1)
        order = order[..., None]
        x = x.gather(1, order.expand(-1, -1, self.dim_x))
        x, y = self.standardise(x, y.gather(1, order.expand(-1, -1, self.dim_y)))
        x, y = x.float(), y.float()
        if masks:  # a missing cell keeps its coordinates (a map still places it); 0.0 else
            real = torch.cat([masks["mask_c"], masks["mask_t"]], 1)[..., None]
            x, y = torch.nan_to_num(x, nan=0.0), y.masked_fill(~real, 0.0)
        dims = self.data.dims
        first = [self._coords[d][origin[:, dims.index(d)]] for d in self.x]
        info = {"origin": torch.stack(first, -1), "origin_index": origin}
        if self.data.exposure is not None:  # a count model's (tnpx.models.exposure)
            exposure = self.window_exposures(origin).gather(1, order[..., 0])[..., None]
            if masks:  # a missing cell is never a point: 1, the padding convention
                exposure = exposure.masked_fill(~real, 1.0)
            info["exposure_c"], info["exposure_t"] = exposure[:, :n_ctx], exposure[:, n_ctx:]
        return Batch(x[:, :n_ctx], y[:, :n_ctx], x[:, n_ctx:], y[:, n_ctx:], info=info, **masks)


def context_range(n_points: int, min_frac: float, max_frac: float) -> tuple[int, int]:
    """``(min_ctx, max_ctx)``: ``ceil(N min_frac)`` and ``floor(N max_frac)`` for a window of
    ``N = n_points``, at least one context point and one target."""
    if not 0 < min_frac <= max_frac < 1:
        raise ValueError(f"need 0 < min_ctx_frac <= max_ctx_frac < 1, got {min_frac}, {max_frac}")
    min_ctx = max(1, math.ceil(n_points * min_frac - 1e-9))
    max_ctx = min(n_points - 1, math.floor(n_points * max_frac + 1e-9))
    if min_ctx > max_ctx:
        raise ValueError(
            f"a window of {n_points} points leaves no context size between {min_frac} N and "
            f"{max_frac} N (with >= 1 target)"
        )
    return min_ctx, max_ctx


# -- options -----------------------------------------------------------------------------------
def _check_options(c: GridConfig, y: list, has_dataset: bool) -> tuple[int, int, int]:
    """``(N, min_ctx, max_ctx)``; a ``ValueError`` for an option out of range."""
    if c.path is None and not has_dataset:
        raise ValueError("data sampler 'grid' needs path: a NetCDF file, files or Zarr store")
    if not y:
        raise ValueError("grid: name the output variable(s) (y: [VARIABLE, ...])")
    check_exposure_option(c.exposure, c.likelihood, "grid")
    if c.exposure is not None and c.exposure in [*y, *as_list(c.static)]:
        raise ValueError(f"grid: exposure {c.exposure!r} is named among y or static too; one")
    sizes = dict(c.window or {})
    if not sizes or not all(isinstance(n, int) and n >= 1 for n in sizes.values()):
        raise ValueError(f"grid: window must map each dim to a positive length, got {sizes!r}")
    check_option("load", c.load, ("auto", "memory", "lazy"))
    check_option("ctx_size", c.ctx_size, CONTEXT_SIZE_RULES)
    if c.split_dim is not None and (c.val_select or c.test_select):
        raise ValueError("grid: split_dim cuts stretches; val_select/test_select give boxes: one")
    if not 0 <= c.val_fraction < 1 or not 0 <= c.test_fraction < 1:
        raise ValueError("grid: val_fraction and test_fraction must lie in [0, 1)")
    if c.val_fraction + c.test_fraction >= 1:
        raise ValueError("grid: val_fraction + test_fraction must leave training data (< 1)")
    if not 0 < c.min_valid <= 1:
        raise ValueError(
            f"grid: min_valid (a share of a window's cells) must lie in (0, 1], got {c.min_valid}"
        )
    n_points = math.prod(sizes.values())
    return (n_points, *context_range(n_points, c.min_ctx_frac, c.max_ctx_frac))


def _window(data: GridData, window: dict[str, int]) -> tuple[int, ...]:
    """Window lengths in the data's dim order, each checked against the data."""
    outputs = ", ".join(map(repr, data.y))
    for dim in window:
        if dim not in data.dims:
            raise DataError(
                f"{data.name}: window names dim {dim!r}, which {outputs} do not have; their "
                f"dims are ({', '.join(data.dims)})"
            )
    unnamed = [d for d in data.dims if d not in window]
    if unnamed:
        raise DataError(
            f"{data.name}: window must name every dim of {outputs}; missing {unnamed} (a dim "
            "a task does not span takes length 1)"
        )
    for dim, n in zip(data.dims, data.sizes):
        if window[dim] > n:
            raise DataError(
                f"{data.name}: window {dim}={window[dim]} is longer than the {n} {dim} points "
                f"of {outputs}"
            )
    return tuple(window[d] for d in data.dims)


def _inputs(data: GridData, x: list[str] | None, window: tuple[int, ...]) -> list[str]:
    """The dims that are inputs, in input order. Default: the dims a window spans more than
    one point of, in the data's order with ``time`` last. A dim of window length 1 is constant
    within a task, so as an input it only tells the model *when* (or where) the task lies: with
    a held-out period that is a value outside the training range. On the iris maps (one year per
    task) leaving time out scored LL -0.90 against a per-window GP's -3.98 on the held-out
    period (coverage 0.91); name it in ``x`` to have it anyway."""
    if x is None:
        spanned = [d for d, w in zip(data.dims, window) if w > 1]  # some: a window has N >= 2
        return [d for d in spanned if d != "time"] + ["time"] * ("time" in spanned)
    for dim in x:
        if dim not in data.dims or x.count(dim) > 1:
            raise DataError(
                f"{data.name}: x must name dims of {data.y} at most once each, got {x} (dims: "
                f"{', '.join(data.dims)})"
            )
    return list(x)


__all__ = [
    "GridConfig",
    "GridSampler",
    "context_range",
]
