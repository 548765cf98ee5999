"""The cells of a gridded field at one time step, as points: their coordinates and values.

One job: reading a :class:`~tnpx.data.grid.files.GridData` at one time step as a list of cells
(row-major over the spatial ``dims`` in their given order), either every cell (one block
read) or only chosen ones. A lazily indexed grid reads chosen cells through xarray's
vectorised indexing (``Variable[indexers]`` with index arrays on a shared ``points`` dim), so
a draw of ``N`` cells of a field that does not fit in memory never reads the whole field; a
backend that takes only outer indexing (netCDF4) reads the chosen cells' rows x columns.
Used by the ``stations`` source's grid context (:mod:`tnpx.data.stations.grid`) and by
:func:`tnpx.apply.grid_context.grid_context_rows`.
"""

from __future__ import annotations

import numpy as np

from .files import GridData


def cell_coords(data: GridData, dims: list[str]) -> np.ndarray:
    """``[n_cells, len(dims)]`` float64: each cell's coordinates, row-major over ``dims``."""
    mesh = np.meshgrid(*[data.coords[d] for d in dims], indexing="ij")
    return np.stack([m.ravel() for m in mesh], -1)


def read_cells(
    data: GridData, time: str, dims: list[str], step: int, cells: np.ndarray | None = None
) -> np.ndarray:
    """``[n, n_y]`` float64: every variable at time index ``step`` of dim ``time``, at the
    flat cell indices ``cells [n]`` (:func:`cell_coords`'s order), or at every cell (None).
    Any other dim holds one point (the caller checks)."""
    if cells is None:
        starts = [step if d == time else 0 for d in data.dims]
        lengths = [1 if d == time else n for d, n in zip(data.dims, data.sizes)]
        block = data.read(starts, lengths)  # [n_y, *lengths]
        space = [1 + data.dims.index(d) for d in dims]
        rest = [1 + i for i, d in enumerate(data.dims) if d not in dims]  # one point each
        return block.transpose(0, *space, *rest).reshape(len(data.y), -1).T.astype(np.float64)
    sizes = dict(zip(data.dims, data.sizes))
    where = dict(zip(dims, np.unravel_index(cells, [sizes[d] for d in dims])))
    index = [where.get(d, np.full(len(cells), step if d == time else 0)) for d in data.dims]
    return _points(data, index).T.astype(np.float64)


def _points(data: GridData, index: list[np.ndarray]) -> np.ndarray:
    """``[n_y, n]``: the values at the points whose position along each dim is ``index[d]``
    ``[n]`` (the joined dim's across the files, each part reading its own points)."""
    import xarray as xr

    j, n = data.joined, len(index[0])
    out = None
    for part in data.parts:
        inside = (index[j] >= part.start) & (index[j] < part.start + part.length)
        if not inside.any():
            continue
        local = [np.asarray(ix[inside], dtype=np.int64) for ix in index]
        local[j] = local[j] - part.start
        if isinstance(part.arrays, np.ndarray):
            values = part.arrays[(slice(None), *local)]
        else:
            points = tuple(xr.Variable("points", ix) for ix in local)
            values = np.stack([np.asarray(v[points].values) for v in part.arrays])
        if out is None:
            out = np.empty((len(data.y), n), dtype=values.dtype)
        out[:, inside] = values
    return out
