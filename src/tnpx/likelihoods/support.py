"""Whether data fits a family's support: :func:`check_support` names the first value that does
not (row and column) in one line, before a model is trained on it or scored against it;
:func:`check_exposure` does the same for a count model's exposure column."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..user_files import DataError, Table, require_columns
from ..user_table import numeric_rows
from .counts import EXPOSURE_FAMILIES
from .options import family_of, parse_likelihood

# family -> (test of a value, what the values must be)
_RULES = {
    "bernoulli": (lambda y: (y == 0) | (y == 1), "0 or 1 (a yes/no outcome)"),
    "bernoulli-gamma": (lambda y: y >= 0, ">= 0 (an amount: rain cannot be negative)"),
    "poisson": (lambda y: (y >= 0) & (y == np.floor(y)), "a count (an integer >= 0)"),
    "negative-binomial": (lambda y: (y >= 0) & (y == np.floor(y)), "a count (an integer >= 0)"),
    "beta": (lambda y: (y > 0) & (y < 1), "a fraction strictly inside (0, 1)"),
    "beta-spikes": (lambda y: (y >= 0) & (y <= 1), "a fraction in [0, 1]"),
}


def check_support(
    likelihood: str | Mapping,
    y,
    names: Sequence[str],
    rows: Sequence | None = None,
    where: str = "the data",
    row_text: Callable[[int], str] | None = None,
) -> None:
    """A :class:`~tnpx.DataError` naming the first row and column of ``y [n_rows, n_outputs]``
    (array or tensor; NaN = missing, not checked) outside the support of the family the
    ``likelihood`` option names, or a family that does not fit ``n_outputs``. ``names``: the
    output columns' names; ``rows``: the rows' labels (default: their positions, from 0);
    ``row_text``: instead, the words naming row ``i`` (a source's ``Table.where``: ``data
    row 12``). Nothing is changed or dropped."""
    family, options = parse_likelihood(likelihood)
    values = np.asarray(y.detach().cpu() if hasattr(y, "detach") else y, dtype=np.float64)
    values = values.reshape(len(values), -1)
    if len(names) != values.shape[1]:
        raise ValueError(f"names: {len(names)} for {values.shape[1]} output columns")
    if family == "lowrank-gaussian" and values.shape[1] < 2:
        raise DataError(
            f"{where}: likelihood lowrank-gaussian correlates several outputs, but there is one "
            f"({names[0]}); use gaussian, or give two or more output columns"
        )
    key = "beta-spikes" if family == "beta" and options.get("spikes") else family
    if key not in _RULES:
        return
    test, must = _RULES[key]
    why = f"which likelihood {family} needs; fix the value or choose another likelihood"
    first_outside(values, test, must, why, names, rows, where, row_text)


def check_exposure_option(exposure: str | None, likelihood, source: str) -> None:
    """A ``ValueError`` (one line) where a data source's option ``exposure`` is given for a
    model whose ``likelihood`` option is not a count family (None: the Gaussian default): only a
    count's rate is multiplied by an exposure."""
    if exposure is None:
        return
    family = None if likelihood is None else family_of(likelihood)
    if family not in EXPOSURE_FAMILIES:
        got = "a gaussian one" if family is None else f"likelihood {family}"
        raise ValueError(
            f"{source}: exposure ({exposure!r}) is taken only by a model with likelihood "
            f"{' or '.join(EXPOSURE_FAMILIES)} (a count's rate times it), not {got}; set "
            "model.likelihood to one of them, or remove exposure"
        )


def check_exposure(
    exposure,
    name: str,
    where: str = "the data",
    row_text: Callable[[int], str] | None = None,
) -> None:
    """A :class:`~tnpx.DataError` naming the first row of ``exposure [n_rows]`` (the column
    ``name``) that is not a finite number > 0: a count's rate is multiplied by it, so a zero
    or negative exposure has no count law (NaN is refused too, never taken as missing)."""
    values = np.asarray(exposure, dtype=np.float64).reshape(-1, 1)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(values) & (values > 0)
    why = "as an exposure needs (a count's rate is multiplied by it); fix or remove that row"
    first_outside(values, ok, "a finite number > 0", why, [name], None, where, row_text)


def read_exposure(
    table: Table, column: str, positions: np.ndarray | None = None, named_by: str = "exposure"
) -> np.ndarray:
    """The exposure ``column`` of ``table`` as float64 ``[rows]`` (the rows at ``positions``
    only, where given), each value checked a finite number > 0 by :func:`check_exposure`: a
    :class:`~tnpx.DataError` naming the row and the column, or the column if ``table`` lacks
    it (``named_by``: what asks for it). A missing value is refused like a 0, never dropped."""
    require_columns(table, [column], named_by=named_by)
    missing = table.frame[column].isna().to_numpy()
    frame = table.frame[[column]].where(~missing[:, None], 1.0)  # the others checked numbers
    values = numeric_rows(Table(frame, table.name, table.from_file, table.offset), [column])
    values = values.to_numpy(copy=True)[:, 0]
    values[missing] = np.nan  # refused below, naming the row
    at = np.arange(len(values)) if positions is None else np.asarray(positions)
    check_exposure(values[at], repr(column), table.name, lambda i: table.where(int(at[i])))
    return values[at]


def first_outside(
    values: np.ndarray,
    test,
    must: str,
    why: str,
    names: Sequence[str],
    rows: Sequence | None = None,
    where: str = "the data",
    row_text: Callable[[int], str] | None = None,
) -> None:
    """A :class:`~tnpx.DataError` naming the first row and column of ``values [n_rows,
    n_columns]`` where ``test`` (a function of the values, or its result ``[n_rows,
    n_columns]`` bool) fails: ``<where>: <row>, column <name> = <value> is not <must>, <why>``.
    A NaN fails only where ``test`` is an array that says so (a function's NaN is missing)."""
    if callable(test):
        with np.errstate(invalid="ignore"):
            bad = ~test(values) & ~np.isnan(values)
    else:
        bad = ~test
    if bad.any():
        i, j = np.argwhere(bad)[0]
        row = row_text(int(i)) if row_text else f"row {rows[i] if rows is not None else i}"
        raise DataError(
            f"{where}: {row}, column {names[j]} = {values[i, j]:g} is not {must}, {why} "
            f"({int(bad.sum())} such value(s))"
        )
