"""How the ``grid`` source holds out whole windows: each split's :class:`Region` of cells.

One job: turning ``split_dim`` with ``val_fraction`` / ``test_fraction`` (stretches of one dim:
training first, then validation, then test) or the ``val_select`` / ``test_select`` boxes
(coordinates, both ends included) into index ranges. A held-out split's windows lie inside its
stretch or box; with boxes, training windows touch neither box; so no two splits' windows share
a cell. :mod:`tnpx.data.grid.windows` lists each region's complete windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...user_files import DataError
from .config import GridConfig
from .files import GridData

Box = tuple[tuple[int, ...], tuple[int, ...]]  # cells [lo, hi) per dim


@dataclass
class Region:
    """The cells ``[lo, hi)`` per dim a split's windows lie in, less the boxes of cells
    (``exclude``: other splits' boxes) that they must not touch."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]
    exclude: list[Box] = field(default_factory=list)

    def room(self, window: tuple[int, ...]) -> tuple[int, ...]:
        """Origins per dim: ``hi - lo - window + 1``."""
        return tuple(h - lo - w + 1 for lo, h, w in zip(self.lo, self.hi, window))

    def allowed(self, rows: np.ndarray, window: tuple[int, ...]) -> np.ndarray | None:
        """Which origins (first-dim origins ``rows``, every origin of the other dims) start a
        window that touches no excluded box: a mask broadcastable to ``[len(rows),
        *room[1:]]``; None when nothing is excluded."""
        if not self.exclude:
            return None
        axes = [rows] + [lo + np.arange(r) for lo, r in zip(self.lo[1:], self.room(window)[1:])]
        keep = np.ones((1,) * len(axes), dtype=bool)
        for box_lo, box_hi in self.exclude:
            touches = True
            for d, (origin, w) in enumerate(zip(axes, window)):
                hit = (origin > box_lo[d] - w) & (origin < box_hi[d])
                touches = touches & hit.reshape([-1 if k == d else 1 for k in range(len(axes))])
            keep = keep & ~touches
        return keep

    def cells(self, r0: int, r1: int, sizes: tuple[int, ...]) -> np.ndarray:
        """Which cells of first-dim rows ``[r0, r1)`` (and every cell of the other dims, of
        ``sizes``) belong to the region: a mask broadcastable to the block."""
        n_dims = len(self.lo)

        def inside(lo, hi, d: int, start: int, stop: int) -> np.ndarray:
            at = np.arange(start, stop)
            return ((at >= lo) & (at < hi)).reshape([-1 if k == d else 1 for k in range(n_dims)])

        ends = [(r0, r1)] + [(0, size) for size in sizes[1:]]
        mask = np.ones((1,) * n_dims, dtype=bool)
        for d, (start, stop) in enumerate(ends):
            mask = mask & inside(self.lo[d], self.hi[d], d, start, stop)
        for box_lo, box_hi in self.exclude:
            hit = np.ones((1,) * n_dims, dtype=bool)
            for d, (start, stop) in enumerate(ends):
                hit = hit & inside(box_lo[d], box_hi[d], d, start, stop)
            mask = mask & ~hit
        return mask


def split_regions(data: GridData, c: GridConfig, window: tuple[int, ...]) -> dict[str, Region]:
    """Each split's cells: stretches of ``split_dim``, or ``val_select``/``test_select`` boxes."""
    whole = (tuple(0 for _ in data.dims), tuple(data.sizes))
    boxes = {}
    if c.val_select or c.test_select:
        for split in ("val", "test"):
            box = getattr(c, f"{split}_select")
            if box:
                cut = data.positions(box, f"{split}_select")
                lo = tuple(cut.get(d, (0, n))[0] for d, n in zip(data.dims, data.sizes))
                hi = tuple(cut.get(d, (0, n))[1] for d, n in zip(data.dims, data.sizes))
                boxes[split] = (lo, hi)
        if len(boxes) == 2 and all(
            lo_a < hi_b and lo_b < hi_a
            for lo_a, hi_a, lo_b, hi_b in zip(*boxes["val"], *boxes["test"])
        ):
            raise DataError(f"{data.name}: val_select and test_select overlap")
        regions = {"train": Region(*whole, exclude=list(boxes.values()))}
        regions.update({s: Region(*box) for s, box in boxes.items()})
    else:
        regions = _period(data, c, whole)
    for split, region in regions.items():
        for dim, n, w in zip(data.dims, region.room(window), window):
            if n < 1:
                raise DataError(
                    f"{data.name}: the {split} split holds {n + w - 1} {dim} points of "
                    f"{', '.join(map(repr, data.y))}; a window needs {w} ({_why_split(c)})"
                )
    return regions


def _period(data: GridData, c: GridConfig, whole) -> dict[str, Region]:
    """Training, validation and test stretches of ``split_dim``, in that order."""
    dim = c.split_dim or ("time" if "time" in data.dims else data.dims[0])
    if dim not in data.dims:
        raise DataError(f"{data.name}: split_dim {dim!r} is not a dim of {data.y}")
    d, n = data.dims.index(dim), data.sizes[data.dims.index(dim)]
    counts = {s: math.floor(n * getattr(c, f"{s}_fraction") + 0.5) for s in ("val", "test")}
    ends = {"train": n - counts["val"] - counts["test"], "val": n - counts["test"], "test": n}
    regions, start = {}, 0
    for split, end in ends.items():
        if split == "train" or getattr(c, f"{split}_fraction") > 0:
            lo, hi = list(whole[0]), list(whole[1])
            lo[d], hi[d] = start, end
            regions[split] = Region(tuple(lo), tuple(hi))
        start = end
    return regions


def _why_split(c: GridConfig) -> str:
    if c.val_select or c.test_select:
        return "widen val_select / test_select, or shorten the window"
    return "change val_fraction / test_fraction, select or the window"


def why_empty(c: GridConfig) -> str:
    if c.val_select or c.test_select:
        return "give val_select / test_select"
    return "its fraction is 0"
