"""A count model's exposure variable for the ``grid`` source (:class:`~tnpx.data.grid.files.
GridData`'s ``exposure``), read as a static input is."""

from __future__ import annotations

from ...user_files import DataError


def read_exposure(datasets, var: str, labels, dims, joined: int, name: str, statics) -> tuple:
    """``(dims, float64 values)`` of the variable ``var`` on the outputs' grid, read from the
    first file by ``statics`` (the static inputs' reader); never a fill value: a count's rate
    is multiplied by it. One varying along the dim several files are joined along is refused."""
    if len(datasets) > 1 and dims[joined] in datasets[0][var].dims:
        raise DataError(
            f"{name}: exposure {var!r} varies along {dims[joined]!r}, the dim the files are "
            "joined along; give it on the other dims, or pass the files opened as one Dataset"
        )
    return statics([var], None, datasets[0], labels, dims, name, "exposure")[var]
