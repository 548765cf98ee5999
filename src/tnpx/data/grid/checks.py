"""Checks of the ``grid`` source's data against its options, each a
:class:`~tnpx.user_files.DataError` of one line naming the file, the variable or dim, and what
to do, or one warning.

One job: refusing grids a model would learn wrong from without a word (a coordinate that is not
sorted, a window dim that is not an input), checking the windows the scan found
(:mod:`tnpx.data.grid.windows`), and saying when the held-out periods lie outside the training
period along an input (the model must extrapolate in time).
"""

from __future__ import annotations

import numpy as np

from ...user_files import DataError, warn_user
from .config import GridConfig
from .files import GridData
from .windows import Scan, Windows


def window_shape(data: GridData, window) -> str:
    """``time=3 × lat=4 × lon=5``: a window in words."""
    return " × ".join(f"{d}={w}" for d, w in zip(data.dims, window))


def check_sorted(data: GridData) -> None:
    """Every dim's coordinate strictly increasing or strictly decreasing: a window is that many
    consecutive grid points, so one across a jump (a longitude relabelled to -180..180 without
    sorting) would join cells far apart."""
    for dim in data.dims:
        values = data.coords[dim]
        step = np.diff(values)
        if len(step) == 0 or (step > 0).all() or (step < 0).all():
            continue
        rising = (step > 0).sum() >= (step < 0).sum()
        at = int(np.flatnonzero(step <= 0 if rising else step >= 0)[0])
        raise DataError(
            f"{data.name}: coordinate {dim!r} is not sorted: it jumps from {values[at]:g} to "
            f"{values[at + 1]:g} at index {at + 1}, so windows would join cells that are not "
            f"neighbours; sort it (dataset.sortby({dim!r})) and save the file again"
        )


def check_window_inputs(data: GridData, window: tuple[int, ...], x: list[str]) -> None:
    """A dim a window spans (length > 1) must be an input, or the model sees several cells
    at the same inputs with different outputs and cannot tell them apart."""
    for dim, w in zip(data.dims, window):
        if w > 1 and dim not in x:
            raise DataError(
                f"{data.name}: the window spans {w} {dim} points but x leaves {dim!r} out "
                f"(x: {list(x)}), so a task holds {w} cells at the same inputs that the model "
                f"cannot tell apart; add {dim!r} to x or set its window to 1"
            )


def is_time(data: GridData, dim: str) -> bool:
    """Whether ``dim`` is time: its name, or coordinates that are dates or durations."""
    values = np.asarray(data.labels[dim])
    dated = values.dtype.kind in "mM" or (len(values) and hasattr(values[0], "calendar"))
    return dim.lower() == "time" or bool(dated)


def warn_time_split(data: GridData, c: GridConfig, x: list[str]) -> None:
    """Held-out periods after the training one along an input time dim: the model must
    extrapolate in time there. One warning, not an error."""
    if c.val_select or c.test_select or not (c.val_fraction or c.test_fraction):
        return
    dim = c.split_dim or ("time" if "time" in data.dims else data.dims[0])
    if dim in x and is_time(data, dim):
        warn_user(
            f"{data.name}: the val/test periods lie outside the training period along {dim!r}: "
            f"the model must extrapolate in time; consider leaving time out of x (x: "
            f"{[d for d in x if d != dim]})"
        )


def check_given(normalisation: dict, x: list[str], y: list[str]) -> None:
    """Given maps (TE-4's, a checkpoint's) must be for these columns, in this order."""
    for side, columns in (("x", x), ("y", y)):
        given = list(normalisation[side]["columns"])
        if given != columns:
            raise ValueError(f"grid: the normalisation's {side} columns {given} are not {columns}")


def check_clear(data: GridData, windows: dict[str, Windows], window) -> None:
    """Training windows must fit beside the ``val_select`` / ``test_select`` boxes."""
    if len(windows["train"]) == 0 and not windows["train"].excluded:
        raise DataError(
            f"{data.name}: no {window_shape(data, window)} window of the train split lies "
            "clear of val_select and test_select; make them smaller"
        )


def check_windows(data: GridData, found: Scan, window, min_valid: float) -> None:
    """A split without a window to draw is an error; one warning counts the windows left out
    for missing cells and the missing cells (masked in the windows drawn)."""
    shape = window_shape(data, window)
    outputs = " or ".join(map(repr, [*data.y, *data.statics]))
    share = f"{min_valid:.0%}"
    for split, listed in found.windows.items():
        if len(listed) == 0 and min_valid >= 1:
            raise DataError(
                f"{data.name}: no {shape} window of the {split} split is free of missing values "
                f"of {outputs}; lower min_valid (now 1.0) to draw windows with missing cells"
            )
        if len(listed) == 0:
            raise DataError(
                f"{data.name}: no {shape} window of the {split} split has {share} of its cells "
                f"valid (values of {outputs} present); lower min_valid (now {min_valid:g})"
            )
    excluded = {s: w.excluded for s, w in found.windows.items() if w.excluded}
    if not excluded and not found.missing:
        return
    total = sum(len(w) + w.excluded for w in found.windows.values())
    counts = ", ".join(f"{s} {n}" for s, n in excluded.items())
    rule = "hold a missing value" if min_valid >= 1 else f"have under {share} of their cells valid"
    if excluded:
        dropped = (
            f"{sum(excluded.values())} of {total} {shape} windows {rule} of {outputs} and are "
            f"never drawn ({counts})"
        )
    else:
        dropped = f"none of the {total} {shape} windows has under {share} of its cells valid"
    cells = f"{found.missing} of {found.cells} cells miss a value of {outputs}"
    if min_valid < 1:
        cells += " (masked in the windows drawn: never context, never a target)"
    warn_user(f"{data.name}: {dropped}; {cells}; min_valid (now {min_valid:g}) sets the share")


def support_check(data: GridData, likelihood):
    """A check of one block of outputs (``check(r0, values [n_y, rows, ...])``: rows from
    ``r0`` of the first dim) against the family's support (:func:`tnpx.likelihoods.
    check_support`): the first bad cell named by its coordinates and the variable."""
    from ...likelihoods import check_support

    def check(r0: int, values: np.ndarray) -> None:
        flat = values.reshape(len(values), -1).T  # [cells, n_y]
        cell = cell_text(data, r0, values.shape[1:])
        check_support(likelihood, flat, data.y, where=data.name, row_text=cell)

    return check


def exposure_check(data: GridData, name: str):
    """A check of one block of outputs (as :func:`support_check`'s) that every cell whose
    outputs are all present has an exposure (``data.exposure``, the variable ``name``) that is
    a finite number > 0 (:func:`tnpx.likelihoods.check_exposure`): the first bad cell named by
    its coordinates. A cell with no output may lack one (it is never a point)."""
    from ...likelihoods import check_exposure

    def check(r0: int, values: np.ndarray) -> None:
        exposure = block_of(data.exposure, data.dims, r0, values.shape[1:]).reshape(-1)
        present = np.flatnonzero(np.isfinite(values).all(0).reshape(-1))
        cell = cell_text(data, r0, values.shape[1:])
        check_exposure(exposure[present], repr(name), data.name, lambda i: cell(present[i]))

    return check


def block_of(field: tuple, dims: tuple[str, ...], r0: int, shape: tuple[int, ...]) -> np.ndarray:
    """A field ``(own dims, values)`` on some of ``dims`` on the block of rows from ``r0`` of
    the first dim (``shape``: the block's), broadcast to ``shape``."""
    own, values = field
    if dims[0] in own:  # then own's first dim (own keeps dims' order)
        values = values[r0 : r0 + shape[0]]
    at = [values.shape[own.index(d)] if d in own else 1 for d in dims]
    return np.broadcast_to(values.reshape(at), shape)


def cell_text(data: GridData, r0: int, shape: tuple[int, ...]):
    """``text(i)``: the ``i``-th cell of a block of ``shape`` from row ``r0`` of the first dim,
    named by its coordinates (``cell time=..., lat=...``)."""

    def text(i: int) -> str:
        at = np.unravel_index(int(i), shape)
        where = [f"{d}={data.coords[d][k + (r0 if n == 0 else 0)]:g}"
                 for n, (d, k) in enumerate(zip(data.dims, at))]  # fmt: skip
        return f"cell {', '.join(where)}"

    return text


def block_checks(data: GridData, c: GridConfig):
    """The checks the scan applies to each block of outputs (a non-Gaussian family's support,
    a count model's exposures: :mod:`tnpx.data.grid.checks`), as one; None where none."""
    checks = [] if c.likelihood is None else [support_check(data, c.likelihood)]
    if data.exposure is not None:
        checks.append(exposure_check(data, c.exposure))
    if not checks:
        return None

    def check(r0: int, values) -> None:
        for one in checks:
            one(r0, values)

    return check
