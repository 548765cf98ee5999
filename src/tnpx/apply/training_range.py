"""Whether a prediction's inputs lie where a model trained on a user's data was trained.

A checkpoint trained with ``tnpx train`` on a user's data stores, per input column, the range
its training tasks covered (``record["normalisation"]["x"]["range"]``: ``[low, high]`` in the
data's units, the region and the period) and how far outside it the model was measured to stay
calibrated (``record["normalisation"]["x"]["limits"]``, :mod:`tnpx.training.range_limits`). A
value's *distance* is how far it lies outside its column's training range, in widths
``high - low`` of that range (0 inside; a column without width counts nothing).
:func:`tnpx.predict` checks the context and the targets alike:

- past ``warn_at`` widths: one warning for the whole prediction, naming each such column,
  its training range and the furthest distance;
- past ``refuse_at`` widths: a :class:`~tnpx.user_files.DataError` naming the table, row,
  column and value, unless ``allow_extrapolation=True`` (then it is in the warning).

Both most often mean a value in another unit (time in days where the model was trained in
hours: thousands of widths away) or another region or period than training's. A checkpoint
that records a range but no measured limits uses :data:`DEFAULT_WARN_AT` and
:data:`DEFAULT_REFUSE_AT`; one without a range (older checkpoints, the zoo's prior-trained
models) is not checked, as before. Only a prediction that maps with the stored normalisation is
checked: under ``scaling="context"`` or a hand-set map the model never sees absolute inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..user_files import DataError, Table, warn_user
from .unit_choice import widths_outside

# Without a measurement (no validation split, a checkpoint saved before the limits were
# measured): warn past a tenth of the training range (the held-out year, 0.29 widths
# past 42 training months, already lost its calibration: coverage 0.73), refuse past a whole
# width (nothing like it was ever seen; a wrong unit or region is usually many widths off).
DEFAULT_WARN_AT = 0.1
DEFAULT_REFUSE_AT = 1.0


@dataclass(frozen=True)
class TrainingRange:
    """Where a model was trained, per input column (``[dim_x]`` arrays in the data's units):
    ``low``, ``high``; the distances (in training-range widths) past which a value warns
    (``warn_at``) and is refused (``refuse_at``); ``measured_on``: what the limits were
    measured on (None: the defaults); ``units``: each column's unit where stored, else None."""

    columns: list
    low: np.ndarray
    high: np.ndarray
    warn_at: np.ndarray
    refuse_at: np.ndarray
    measured_on: str | None = None
    units: list | None = None

    def span(self, j: int) -> str:
        """Column ``j``'s training range as text, with its unit where known."""
        unit = self.units[j] if self.units else None
        return f"[{self.low[j]:.6g}, {self.high[j]:.6g}]" + (f" {unit}" if unit else "")


def read_training_range(record: dict, source) -> TrainingRange | None:
    """The :class:`TrainingRange` a checkpoint's ``record`` stores, None where it stores no
    range (then nothing is checked). ``source`` names the checkpoint in messages.

    Raises:
        CheckpointError: a range or limits are there but cannot be read (one line).
    """
    from ..checkpoint import CheckpointError

    part = (record.get("normalisation") or {}).get("x") or {}
    if not part.get("range"):
        return None
    try:
        dim = record["model"]["dim_x"]
        spans = np.asarray(part["range"], dtype=np.float64)
        if spans.shape != (dim, 2) or not np.isfinite(spans).all():
            raise ValueError(f"range: expected {dim} finite [low, high] pairs")
        limits = part.get("limits") or {}
        warn = _per_column(limits.get("warn_at", DEFAULT_WARN_AT), dim, "warn_at")
        refuse = _per_column(limits.get("refuse_at", DEFAULT_REFUSE_AT), dim, "refuse_at")
        units = part.get("units")
        units = list(units) if isinstance(units, (list, tuple)) and len(units) == dim else None
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(
            f"{source}: its stored training range cannot be read ({err}); retrain or re-save it"
        ) from None
    return TrainingRange(
        list(part.get("columns", [])), spans[:, 0], spans[:, 1], warn, refuse,
        limits.get("measured_on"), units,
    )  # fmt: skip


def _per_column(value, dim: int, name: str) -> np.ndarray:
    """A limit stored as one number or one per column, as ``[dim]``."""
    limit = np.broadcast_to(np.asarray(value, dtype=np.float64), (dim,)).copy()
    if not (limit >= 0).all():
        raise ValueError(f"{name}: expected distances >= 0")
    return limit


class OutsideTraining:
    """The context's and targets' values past the training range, counted over any number of
    tables and blocks (:meth:`add`), with one warning for all (:meth:`warn`); a value past
    ``refuse_at`` fails at once unless ``allow``."""

    def __init__(self, trained: TrainingRange, x_cols: list, allow: bool, model: str = "the model"):
        self.trained, self.x_cols, self.allow, self.model = trained, list(x_cols), allow, model
        self.furthest = np.zeros(len(trained.low))  # [dim_x], the furthest distance seen
        self.counts: dict[str, list[int]] = {}  # table name -> [rows past warn_at, rows]

    def add(self, table: Table, positions: np.ndarray, x: np.ndarray) -> None:
        """Check ``x [n, dim_x]`` (the inputs of ``table``'s rows ``positions``, the user's units).

        Raises:
            DataError: a value lies past its column's ``refuse_at`` and ``allow`` is off.
        """
        t = self.trained
        counts = self.counts.setdefault(table.name, [0, 0])
        counts[1] += len(x)
        if not len(x):
            return
        distance = widths_outside(t.low, t.high, x)  # [n, dim_x]
        refused = distance > t.refuse_at
        if refused.any() and not self.allow:
            row, j = np.argwhere(refused)[np.argmax(distance[refused])]
            raise DataError(
                f"{table.name}, {table.where(int(positions[row]))}, column "
                f"{self.x_cols[j]!r}: {x[row, j]:.6g} lies {distance[row, j]:.3g} widths "
                f"outside the range {self.model} was trained on, {t.span(j)} "
                f"({int(refused.any(1).sum())} of {len(x)} rows lie past its limit of "
                f"{t.refuse_at[j]:g} widths, {self._basis()}){_unit_hint(x[row, j], t, j)}: "
                f"{_CAUSE}; pass "
                "allow_extrapolation=True (--allow-extrapolation) to predict there anyway"
            )
        counts[0] += int((distance > t.warn_at).any(1).sum())
        self.furthest = np.maximum(self.furthest, distance.max(0))

    def _basis(self) -> str:
        measured = self.trained.measured_on
        return f"measured on {measured}" if measured else "a default: no measurement is stored"

    def warn(self) -> None:
        """One warning for every value past ``warn_at`` so far (none if there is none)."""
        t = self.trained
        past = self.furthest > t.warn_at
        if not past.any():
            return
        rows = "; ".join(f"{k} of {n} rows of {name}" for name, (k, n) in self.counts.items() if k)
        cols = ", ".join(
            f"{self.x_cols[j]!r} up to {self.furthest[j]:.3g} widths outside {t.span(j)}"
            for j in np.flatnonzero(past)
        )
        warn_user(
            f"{rows} lie outside the region and period {self.model} was trained on (past "
            f"{_limits(t.warn_at[past])} training-range widths, "
            f"{self._basis()}): {cols}; the prediction there is extrapolation and may be "
            f"confidently wrong. {_CAUSE[0].upper() + _CAUSE[1:]}"
        )


_CAUSE = (
    "the likely cause is a value in another unit (days for hours, say) or another region or "
    "period than the model was trained on"
)


# Factors between common units (days and hours, hours and minutes, km and m, ...).
UNIT_FACTORS = (24.0, 60.0, 1000.0, 3600.0)


def _unit_hint(value: float, t: TrainingRange, j: int) -> str:
    """A note where ``value`` times or divided by a common unit factor lies in column ``j``'s
    training range (days for hours: times 24), else nothing."""
    for k in UNIT_FACTORS:
        for factor, text in ((k, f"times {k:g}"), (1 / k, f"divided by {k:g}")):
            if t.low[j] <= value * factor <= t.high[j]:
                return f"; {text} it would lie inside"
    return ""


def _limits(values: np.ndarray) -> str:
    unique = np.unique(values)
    return f"{unique[0]:g}" if len(unique) == 1 else "/".join(f"{v:g}" for v in values)
