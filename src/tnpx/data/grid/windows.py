"""Where the ``grid`` source's windows may start, and its training statistics: one pass over
the data, a chunk of the first dim at a time, so memory stays bounded however large the data.

One job: :func:`scan` reads the outputs in blocks of about :data:`SCAN_BYTES` and returns a
:class:`Scan`: for each split's :class:`Region`, the :class:`Windows` it draws from (the
origins of its windows that hold at most ``max_missing`` missing cells, packed one bit each, or
none at all when every window qualifies), the :class:`Moments` of the training cells that the
normalisation is fitted on, the count of missing cells, and each variable's extremes for the
fill-value check (:mod:`tnpx.data.grid.fill_values`).

A cell is missing when an output or a static input is missing (NaN) there. Windows are listed in
row-major order of their origins, so :meth:`Windows.draw` picks the ``k``-th listed one for
``k ~ U{0, ..., n - 1}`` (the TE-4 sampler's rule, kept exactly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ...likelihoods import family_of, output_scaling
from ...user_files import DataError
from ..field_arrays import mean_std
from .files import GridData
from .fill_values import FillValues
from .splits import Region

SCAN_BYTES = 16 * 2**20  # outputs read per block of the scan (its masks take a few times more)


class Windows:
    """The origins a split draws from: every origin of the box ``[start, start + room)`` per
    dim, or (``bits``) those set in a row-major mask packed per first-dim row, ``before[i]``
    counting the set bits of the rows before row ``i``. ``excluded``: the windows of the split
    left out for too many missing cells."""

    def __init__(self, start, room, bits=None, before=None, excluded: int = 0):
        self.start = torch.as_tensor(start, dtype=torch.long)
        self.room = tuple(int(r) for r in room)
        self.bits, self.before, self.excluded = bits, before, excluded
        self.total = int(before[-1]) if bits is not None else math.prod(self.room)

    def __len__(self) -> int:
        return self.total

    def draw(self, g: torch.Generator, b: int) -> torch.Tensor:
        """``[b, n_dims]`` window origins (indices into the data), uniform over the windows."""
        if self.bits is None:  # each dim on its own, in dim order
            drawn = [torch.randint(r, (b,), generator=g) for r in self.room]
            return torch.stack(drawn, -1) + self.start
        k = torch.randint(self.total, (b,), generator=g).numpy()
        rows = np.searchsorted(self.before, k, side="right") - 1
        rest = math.prod(self.room[1:])
        origins = []
        for row, j in zip(rows, k - self.before[rows]):
            flat = np.flatnonzero(np.unpackbits(self.bits[row], count=rest))[j]
            origins.append([row, *np.unravel_index(flat, self.room[1:])])
        return torch.tensor(np.array(origins, dtype=np.int64).reshape(b, -1)) + self.start


class _Listing:
    """The windows of one region with few enough missing cells, gathered block by block."""

    def __init__(self, region: Region, window: tuple[int, ...]):
        self.region, self.window = region, window
        self.room = region.room(window)
        self.bits, self.counts, self.possible = [], [], 0

    def add(self, r0: int, complete: np.ndarray) -> None:
        """``complete [m, ...]``: whether the windows of the origins of rows ``r0 .. r0 + m -
        1`` (and every origin of the other dims) have few enough missing cells."""
        rows = np.arange(r0, r0 + len(complete))
        take = (rows >= self.region.lo[0]) & (rows < self.region.lo[0] + self.room[0])
        if not take.any():
            return
        inner = tuple(slice(lo, lo + r) for lo, r in zip(self.region.lo[1:], self.room[1:]))
        ok = complete[take][(slice(None), *inner)]
        rule = self.region.allowed(rows[take], self.window)
        if rule is None:
            self.possible += ok.size
        else:
            ok = ok & rule
            self.possible += int(np.broadcast_to(rule, ok.shape).sum())
        flat = ok.reshape(len(ok), -1)
        full = bool(flat.all())  # the usual case: no bits kept until a window is missing
        self.bits.append(len(flat) if full else np.packbits(flat, axis=1))
        self.counts.append(np.full(len(flat), flat.shape[1]) if full else flat.sum(1))

    def windows(self) -> Windows:
        counts = np.concatenate(self.counts) if self.counts else np.zeros(0, np.int64)
        total = int(counts.sum())
        if total == math.prod(self.room):
            return Windows(self.region.lo, self.room)
        rest = math.prod(self.room[1:])
        blocks = [
            np.packbits(np.ones((b, rest), bool), axis=1) if isinstance(b, int) else b
            for b in self.bits
        ]
        bits = np.concatenate(blocks) if blocks else np.zeros((0, 0), np.uint8)
        before = np.concatenate([[0], np.cumsum(counts)])
        return Windows(self.region.lo, self.room, bits, before, self.possible - total)


@dataclass
class Moments:
    """Sums over the training cells: per dim, how many usable cells (every output and static
    input present) each coordinate has; the same per static input cell; per output, its count
    of present values, and the count, mean, sum of squared deviations, min and max over the
    usable cells (merged block by block, Chan et al.)."""

    coords: list[np.ndarray]
    statics: dict[str, np.ndarray]
    present: np.ndarray
    n: float = 0.0
    mean: np.ndarray | None = None
    m2: np.ndarray | None = None
    low: np.ndarray | None = None
    high: np.ndarray | None = None

    def add(self, r0: int, usable: np.ndarray, values: np.ndarray, data: GridData) -> None:
        """Rows from ``r0`` of the block: ``usable [rows, ...]`` training cells, ``values
        [n_y, rows, ...]``."""
        rows = usable.shape[0]
        axes = range(usable.ndim)
        for d in axes:
            counts = usable.sum(tuple(k for k in axes if k != d))
            (self.coords[d][r0 : r0 + rows] if d == 0 else self.coords[d])[:] += counts
        for name, (own, _) in data.statics.items():
            at = [data.dims.index(d) for d in own]
            counts = usable.sum(tuple(k for k in axes if k not in at))
            (self.statics[name][r0 : r0 + rows] if 0 in at else self.statics[name])[:] += counts
        n_b = int(usable.sum())
        if n_b == 0:
            return
        flat = values.reshape(len(values), -1)  # [n_y, cells] in the data's dtype
        v = flat if n_b == flat.shape[1] else np.compress(usable.ravel(), flat, axis=1)
        mean_b = v.mean(1, dtype=np.float64)
        m2_b = np.empty(len(v))
        for j, row in enumerate(v):  # one float64 copy at a time
            deviation = row.astype(np.float64)
            deviation -= mean_b[j]
            m2_b[j] = np.square(deviation, out=deviation).sum()
        low, high = v.min(1).astype(np.float64), v.max(1).astype(np.float64)
        if self.mean is None:
            self.n, self.mean, self.m2, self.low, self.high = float(n_b), mean_b, m2_b, low, high
            return
        n = self.n + n_b
        delta = mean_b - self.mean
        self.mean = self.mean + delta * n_b / n
        self.m2 = self.m2 + m2_b + delta**2 * self.n * n_b / n
        self.n = n
        self.low, self.high = np.minimum(self.low, low), np.maximum(self.high, high)

    def check(self, data: GridData) -> None:
        """An output all missing or constant on the training cells leaves nothing to learn."""
        for j, var in enumerate(data.y):
            if self.present[j] == 0:
                raise DataError(f"{data.name}: variable {var!r} is all missing in the train split")
        if self.mean is None:
            raise DataError(
                f"{data.name}: no cell of the train split has every output and static input present"
            )
        for j, var in enumerate(data.y):
            if self.low[j] == self.high[j]:
                raise DataError(
                    f"{data.name}: variable {var!r} is {self.low[j]:g} throughout the train "
                    "split; an output that never changes cannot be learnt"
                )

    def normalisation(self, data: GridData, x: list[str], normalise: bool, likelihood=None) -> dict:
        """Per input column (the dims ``x``, then the static inputs) and per output, ``loc``
        and ``scale``: the mean and std over the usable training cells, each counting once
        (``normalise``; the outputs by a non-Gaussian ``likelihood``'s rule,
        :func:`tnpx.likelihoods.output_scaling`), else 0 and 1; per input column its
        ``range`` ``[low, high]`` over those cells (the region and period trained on); in
        ``GridSampler.normalisation``'s form."""
        columns = [*x, *data.statics]
        x_loc, x_scale = [0.0] * len(columns), [1.0] * len(columns)
        y_loc, y_scale = [0.0] * len(data.y), [1.0] * len(data.y)
        pairs = [(data.coords[d], self.coords[data.dims.index(d)]) for d in x]
        pairs += [(v, self.statics[s]) for s, (_, v) in data.statics.items()]
        spans = [[float(v[n > 0].min()), float(v[n > 0].max())] for v, n in pairs]
        if normalise:
            fitted = [mean_std(v[n > 0], n[n > 0]) for v, n in pairs]  # a missing value: 0
            x_loc, x_scale = [m for m, _ in fitted], [s for _, s in fitted]
            y_loc, y_scale = self.mean.tolist(), np.sqrt(self.m2 / self.n).tolist()
            if likelihood is not None and family_of(likelihood) != "gaussian":
                fitted_y = output_scaling(likelihood, self.mean, np.sqrt(self.m2 / self.n))
                y_loc, y_scale = (part.tolist() for part in fitted_y)
        return {
            "x": {"columns": columns, "loc": x_loc, "scale": x_scale, "range": spans},
            "y": {"columns": list(data.y), "loc": y_loc, "scale": y_scale},
        }


@dataclass
class Scan:
    """What :func:`scan` finds: each split's windows, the training moments, how many cells of
    the data are missing (``missing`` of ``cells``), and the variables' extremes."""

    windows: dict[str, Windows]
    moments: Moments
    missing: int
    cells: int
    fills: FillValues


def scan(
    data: GridData,
    window: tuple[int, ...],
    regions: dict[str, Region],
    fit: Region,
    max_missing: int = 0,
    check=None,
) -> Scan:
    """One pass over ``data``: each region's windows with at most ``max_missing`` missing
    cells, the moments of the cells of ``fit`` (the training region), the missing cells and
    the variables' extremes; ``check(r0, values)`` (if given) sees every block's outputs
    (:func:`~tnpx.data.grid.checks.support_check`)."""
    sizes, n0, w0 = data.sizes, data.sizes[0], window[0]
    row_bytes = max(1, math.prod(sizes[1:]) * len(data.y) * data.itemsize)
    step = max(1, SCAN_BYTES // row_bytes)
    listings = {name: _Listing(region, window) for name, region in regions.items()}
    moments = Moments(
        coords=[np.zeros(n, np.int64) for n in sizes],
        statics={s: np.zeros(v.shape, np.int64) for s, (_, v) in data.statics.items()},
        present=np.zeros(len(data.y), np.int64),
    )
    fills = FillValues([*data.y, *data.statics], math.ceil(n0 / step))
    for j, (_, values) in enumerate(data.statics.values()):
        fills.add(len(data.y) + j, values)
    missing = 0
    for r0 in range(0, n0, step):
        r1 = min(n0, r0 + step + w0 - 1)  # and the rows the last windows of the block reach
        values = data.read((r0, *[0] * (len(sizes) - 1)), (r1 - r0, *sizes[1:]))
        finite = np.isfinite(values)
        usable = finite.all(0) & _statics_present(data, r0, r1)
        absent = _missing_in_windows(usable, window)
        complete = absent == 0 if max_missing == 0 else absent <= max_missing
        for listing in listings.values():
            listing.add(r0, complete[:step])
        s = min(step, n0 - r0)  # the block's own rows (not the next block's)
        own = np.broadcast_to(usable[:s], (s, *sizes[1:]))
        missing += own.size - int(np.count_nonzero(own))
        for j in range(len(data.y)):
            fills.add(j, values[j, :s])
        if check is not None:
            check(r0, values[:, :s])
        cells = fit.cells(r0, r0 + s, sizes)
        moments.present += (finite[:, :s] & cells).reshape(len(data.y), -1).sum(1)
        moments.add(r0, usable[:s] & cells, values[:, :s], data)
    found = {name: listing.windows() for name, listing in listings.items()}
    return Scan(found, moments, missing, math.prod(sizes), fills)


def _statics_present(data: GridData, r0: int, r1: int) -> np.ndarray:
    """Cells of rows ``[r0, r1)`` where every static input is present (broadcastable)."""
    ok = np.ones((1,) * len(data.dims), dtype=bool)
    for own, values in data.statics.values():
        present = np.isfinite(values)
        if data.dims[0] in own:
            present = present[r0:r1]
        shape = [present.shape[own.index(d)] if d in own else 1 for d in data.dims]
        ok = ok & present.reshape(shape)
    return ok


def _missing_in_windows(ok: np.ndarray, window: tuple[int, ...]) -> np.ndarray:
    """``[n_0 - w_0 + 1, ...]`` int32: how many cells of the window starting at each origin
    ``ok`` does not hold in (sliding sums of prefix counts, one axis at a time)."""
    out = (~ok).astype(np.int32)
    for axis, w in enumerate(window):
        at = (slice(None),) * axis
        shape = list(out.shape)
        shape[axis] += 1
        before = np.zeros(shape, np.int32)  # before[i]: the count over the cells before i
        np.cumsum(out, axis=axis, dtype=np.int32, out=before[(*at, slice(1, None))])
        ahead = before[(*at, slice(w, None))]  # empty where the block is shorter than w
        out = ahead - before[(*at, slice(0, max(shape[axis] - w, 0)))]
    return out
