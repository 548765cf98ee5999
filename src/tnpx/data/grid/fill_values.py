"""Fill values nobody declared, found in the ``grid`` source's start-up pass, and the
``missing_value:`` option that declares them.

One job: telling a number that stands for "no data" (land filled with -999, netCDF's default
9.96921e36) from the data. A fill value is a constant that many cells hold exactly and that
lies far outside the rest of the variable. :class:`FillValues` keeps, per variable, its lowest
and highest values, how many cells hold each and the next value inward, and a bounded
subsample of the values (at most about :data:`SAMPLE` per variable however large the data).
:meth:`FillValues.check` refuses an extreme held by at least :data:`MIN_CELLS` cells (and
0.01 % of them) that lies more than :data:`FAR` interquartile ranges from the median of the
other values and either stands apart from them (the next value inward as far away again) or
is a usual sentinel (:data:`SENTINELS`). A physical field's extremes are single cells, near
the bulk (zero rain, a capped fraction), or continuous with it (ERA5 caps snow depth at 10 m);
a fill is none of these. Declared values become missing (NaN) as they are read
(:func:`declared`).
"""

from __future__ import annotations

import numbers

import numpy as np

from ...user_files import DataError

SAMPLE = 2**20  # values kept per variable for the median and spread of the rest
MIN_CELLS = 5  # an extreme held by fewer cells is an outlier, not a fill value
FAR = 20.0  # interquartile ranges from the median of the rest
# the usual "no data" numbers: flagged far from the rest even with values in between (a
# regridded land mask blends them into the coast)
_NUMBERS = "-99 -999 999 -9999 9999 -99999 -32767 -32768 32767 65535 9.96921e36 1e20 1e30"
SENTINELS = np.array([float(v) for v in _NUMBERS.split()] + [-9.96921e36, -1e20, -1e30])


def declared(missing_value, variables: list[str]) -> dict[str, np.ndarray]:
    """The ``missing_value`` option (a number for every variable, or variable -> a number or a
    list of them) as variable -> float64 values; a ``ValueError`` for anything else."""
    if missing_value is None:
        return {}
    if isinstance(missing_value, dict):
        unknown = sorted(set(map(str, missing_value)) - set(variables))
        if unknown:
            raise ValueError(
                f"grid: missing_value names {unknown}, which are not among y or static "
                f"({', '.join(variables)})"
            )
        given = {str(k): v for k, v in missing_value.items()}
    else:
        given = {var: missing_value for var in variables}
    out = {}
    for var, values in given.items():
        values = values if isinstance(values, (list, tuple)) else [values]
        if not values or not all(_is_number(v) for v in values):
            raise ValueError(
                f"grid: missing_value must be a number, or map variables to numbers, got "
                f"{missing_value!r}"
            )
        out[var] = np.asarray(values, dtype=np.float64)
    return out


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def as_missing(values: np.ndarray, fills: np.ndarray | None) -> np.ndarray:
    """``values`` with the cells equal to one of ``fills`` (None: none) set to NaN: a new
    array (the input, perhaps a view of a user's Dataset, is never written)."""
    if fills is None or len(fills) == 0:
        return values
    hit = np.isin(values, fills) | np.isin(values, fills.astype(np.float32))
    return np.where(hit, np.nan, values) if hit.any() else values


class _Extreme:
    """One end of a variable: its most extreme value, how many cells hold it, and the next
    value inward (the gap between them: a fill stands apart, a physical cap does not)."""

    def __init__(self, sign: float):
        self.sign = sign  # +1: the low end, -1: the high end (values compared as sign * v)
        self.value, self.next, self.count = np.inf, np.inf, 0  # in sign * value

    def add(self, values: np.ndarray) -> None:
        v = self.sign * values
        first = v.min()
        inward = v[v > first]
        second = inward.min() if inward.size else np.inf
        count = int(np.count_nonzero(v == first))
        if first == self.value:
            self.count += count
        elif first < self.value:
            self.value, self.count, second = first, count, min(second, self.value)
        else:
            second = first
        self.next = min(self.next, second)

    def found(self) -> tuple[float, float, int]:
        """``(value, next value inward, cells holding it)`` in the data's sign."""
        return self.sign * self.value, self.sign * self.next, self.count


class FillValues:
    """Each variable's two ends (:class:`_Extreme`) and a subsample of its values, gathered
    block by block."""

    def __init__(self, names: list[str], n_blocks: int):
        self.names = names
        self.quota = max(1024, SAMPLE // max(1, n_blocks))  # values kept per block
        self.ends = [(_Extreme(1.0), _Extreme(-1.0)) for _ in names]
        self.samples: list[list[np.ndarray]] = [[] for _ in names]
        self.cells = [0] * len(names)

    def add(self, j: int, values: np.ndarray) -> None:
        """The values ``[...]`` (any shape) of variable ``j`` in a block not seen before."""
        values = values.ravel()
        values = values[np.isfinite(values)].astype(np.float64)
        if values.size == 0:
            return
        self.cells[j] += values.size
        for end in self.ends[j]:
            end.add(values)
        step = max(1, values.size // self.quota)
        self.samples[j].append(values[::step])

    def check(self, name: str) -> None:
        """A :class:`~tnpx.user_files.DataError` naming the first variable with an
        undeclared fill value: an end held by many cells, far from the median of the rest
        (:data:`FAR` interquartile ranges), and apart from it (as far again) or a usual
        sentinel (:data:`SENTINELS`)."""
        for j, var in enumerate(self.names):
            if not self.samples[j]:
                continue
            sample = np.concatenate(self.samples[j])
            for end in self.ends[j]:
                value, inward, count = end.found()
                if count < max(MIN_CELLS, 1e-4 * self.cells[j]):
                    continue
                rest = sample[sample != value]
                if rest.size < 2:
                    continue
                q25, median, q75 = np.percentile(rest, [25, 50, 75])
                spread = (q75 - q25) or rest.std()
                if spread == 0 or abs(value - median) <= FAR * spread:
                    continue
                sentinel = np.isclose(value, SENTINELS, rtol=1e-6, atol=0).any()
                if sentinel or abs(value - inward) > FAR * spread:
                    raise DataError(
                        f"{name}: variable {var!r} holds {value:g} in {count} cells, far outside "
                        f"its other values (median {median:.4g}, interquartile range "
                        f"{q75 - q25:.3g}): an undeclared fill value? Declare it in the data "
                        f"config with missing_value: {value:g} (or missing_value: "
                        f"{{{var}: {value:g}}}) and those cells become missing"
                    )
