"""How :func:`tnpx.predict` chooses its :class:`~tnpx.units.UnitMap` from a user's tables.

Inputs: each column's *context* range (or ``input_scale``) onto the training domain; where the
context has fewer than two distinct values in a column, the range of context and targets
together. Outputs: the context's mean and population std (or ``output_scale``). What each
choice means is in :mod:`tnpx.apply.predict`'s docstring; the maps themselves are :mod:`tnpx.units`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..units import Affine, UnitMap, box_pairs, no_spread, range_onto_box, standardising
from ..user_files import DataError, column_names, warn_user


def reference_ranges(xc: np.ndarray, xt: np.ndarray, x_cols: list) -> np.ndarray:
    """``[dim_x, 2]``: per input column, the context's ``[min, max]``; where the context has
    fewer than two distinct values, that of context and targets together (with a warning).
    Only the targets' extremes matter: ``xt`` may be every target or just the rows of their
    per-column minimum and maximum (chunked prediction)."""
    both = np.concatenate([xc, xt])
    ranges = np.stack([both.min(0), both.max(0)], 1)
    if len(xc):
        from_context = np.stack([xc.min(0), xc.max(0)], 1)
        wide = from_context[:, 1] > from_context[:, 0]
        ranges[wide] = from_context[wide]
        narrow = [c for c, w in zip(x_cols, wide) if not w]
        if narrow:
            warn_user(
                f"the context has one distinct value in input column(s) {column_names(narrow)}: "
                "scaling them by the range of context and targets together"
            )
    return ranges


def needs_targets(xc: np.ndarray, domain, input_scale) -> bool:
    """Whether :func:`fit_units` reads the targets: inputs are scaled by the data's range
    (``domain`` given, no ``input_scale``) and the context has fewer than two distinct values
    in some column. ``xc [n_ctx, dim_x]``."""
    if domain is None or input_scale is not None:
        return False
    return len(xc) == 0 or bool((xc.min(0) == xc.max(0)).any())


def given_input_ranges(input_scale, dim_x: int) -> np.ndarray:
    """``input_scale`` as ``[dim_x, 2]`` ranges, each ``low < high``."""
    ranges = box_pairs(input_scale, dim_x, "input_scale")
    if (ranges[:, 1] <= ranges[:, 0]).any():
        raise ValueError(
            f"input_scale: each pair must be (low, high), low < high, got {input_scale!r}"
        )
    return ranges


def fit_input_map(
    xc: np.ndarray, xt: np.ndarray, x_cols: list, domain, input_scale=None
) -> tuple[Affine, np.ndarray]:
    """The map taking each input column's reference range (``input_scale`` if given, else
    :func:`reference_ranges`) affinely onto ``domain``; returns it and the ranges used.
    ``xc [n_ctx, dim_x]``, ``xt [n_tgt, dim_x]``."""
    dim_x = xc.shape[1]
    given = input_scale is not None
    ranges = given_input_ranges(input_scale, dim_x) if given else reference_ranges(xc, xt, x_cols)
    box = box_pairs(domain, dim_x, "domain")
    width = ranges[:, 1] - ranges[:, 0]
    centre = ranges.mean(1)
    # All points share one value: shift it to the domain's centre, unit scale.
    width = np.where(width > 0, width, box[:, 1] - box[:, 0])
    ranges = np.stack([centre - width / 2, centre + width / 2], 1)
    return range_onto_box(ranges, box), ranges


def fit_output_map(yc: np.ndarray, y_cols: list, output_scale=None) -> Affine:
    """``(y - mean) / std`` with the context's mean and population std per output column
    (``output_scale``'s ``(mean, std)`` pairs if given); a column without spread keeps scale 1
    (:func:`tnpx.units.standardising`), with a warning. ``yc [n_ctx, dim_y]``."""
    dim_y = yc.shape[1]
    if output_scale is not None:
        pairs = box_pairs(output_scale, dim_y, "output_scale")
        if (pairs[:, 1] <= 0).any():
            raise ValueError(
                f"output_scale: each pair must be (mean, std), std > 0, got {output_scale!r}"
            )
        return Affine(pairs[:, 0], pairs[:, 1])
    if np.isnan(yc).any():  # missing outputs (predict_missing): each column its observed values
        return _observed_output_map(yc, y_cols)
    flat = no_spread(yc) if len(yc) else np.zeros(dim_y, dtype=bool)
    if flat.any():
        warn_user(
            f"output column(s) {column_names([c for c, f in zip(y_cols, flat) if f])} have no "
            f"spread in the context ({len(yc)} "
            "point(s)): standardising them with scale 1 (their units); pass "
            "output_scale=(mean, std) to choose"
        )
    return standardising(yc)


def _observed_output_map(yc: np.ndarray, y_cols: list) -> Affine:
    """:func:`fit_output_map` of a context with missing outputs (NaN in ``yc [n_ctx, dim_y]``):
    each column's mean and std over its observed values alone.

    Raises:
        DataError: a column without any observed value (nothing to standardise it by).
    """
    columns = [yc[~np.isnan(yc[:, j]), j : j + 1] for j in range(yc.shape[1])]
    empty = [c for c, values in zip(y_cols, columns) if len(values) == 0]
    if empty:
        raise DataError(
            f"output column(s) {column_names(empty)} have no value in the context (every row "
            "misses them): nothing to standardise them by; pass output_scale=(mean, std) "
            "(--output-scale) for each output"
        )
    maps = [fit_output_map(values, [c]) for c, values in zip(y_cols, columns)]
    return Affine(np.concatenate([m.loc for m in maps]), np.concatenate([m.scale for m in maps]))


def fit_units(
    xc: np.ndarray,
    yc: np.ndarray,
    xt: np.ndarray,
    x_cols: list,
    y_cols: list,
    domain,
    input_scale,
    standardise_outputs: bool,
    output_scale,
) -> tuple[UnitMap, dict]:
    """The unit map of one prediction and a record of it for ``result.attrs``: the input map
    is the identity where ``domain`` is None (no input scaling), the output map where not
    standardising or for an empty context without ``output_scale``."""
    record: dict = {"domain": None, "input_ranges": None, "output_mean_std": None}
    x_map, y_map = Affine.identity(xc.shape[1]), Affine.identity(yc.shape[1])
    if domain is not None:
        x_map, ranges = fit_input_map(xc, xt, x_cols, domain, input_scale)
        record["domain"] = box_pairs(domain, xc.shape[1], "domain").tolist()
        record["input_ranges"] = dict(zip(x_cols, ranges.tolist()))
    if standardise_outputs and (len(yc) or output_scale is not None):
        y_map = fit_output_map(yc, y_cols, output_scale)
        record["output_mean_std"] = {
            c: [float(y_map.loc[j]), float(y_map.scale[j])] for j, c in enumerate(y_cols)
        }
    return UnitMap(x_map, y_map), record


@dataclass(frozen=True)
class ExtrapolationLimits:
    """How far beyond the context's input range (in context-range widths) a model is trusted.

    ``warn_at``: targets further out get one warning (a zoo model's measured safe range, else
    one width); ``refuse_at``: targets further out are refused unless ``allow`` (a zoo model's
    hard limit: beyond it its calibration was never measured to hold; None: no limit).
    ``model`` names the zoo model whose card gave the numbers (None: the default), for the
    messages."""

    warn_at: float = 1.0
    refuse_at: float | None = None
    allow: bool = False
    model: str | None = None


def target_distance(xc: np.ndarray, xt: np.ndarray) -> np.ndarray:
    """``[n_tgt]``: each target's distance outside the context's input range, in widths of
    that range (the largest over input columns; 0 inside). ``xc [n_ctx, dim_x]``, ``xt [n_tgt,
    dim_x]``; a column in which the context has no spread counts nothing."""
    if len(xc) == 0:
        return np.zeros(len(xt))
    widths = widths_outside(xc.min(0), xc.max(0), xt)
    return widths.max(1) if widths.shape[1] else np.zeros(len(xt))


def widths_outside(lo: np.ndarray, hi: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``[n, dim_x]``: how far each value of ``x [n, dim_x]`` lies outside ``[lo, hi]``
    (``[dim_x]`` each), in widths ``hi - lo`` of its column (0 inside, and in a column
    without width)."""
    width = hi - lo
    spread = width > 0
    outside = np.maximum(lo - x, x - hi).clip(min=0)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(spread, outside / np.where(spread, width, 1.0), 0.0)


class FarTargets:
    """Targets beyond ``limits.warn_at`` context-range widths outside the context's range,
    counted over any number of chunks of targets (:meth:`add`), with one warning for all
    (:meth:`warn`); a target beyond ``limits.refuse_at`` fails at once (:meth:`add`)."""

    def __init__(self, xc: np.ndarray, x_cols: list, limits: ExtrapolationLimits | None = None):
        """``xc [n_ctx, dim_x]``: the context's inputs (fewer than two: nothing is far)."""
        self.x_cols, self.n_far, self.n = x_cols, 0, 0
        self.limits = limits or ExtrapolationLimits()
        self.xc = xc if len(xc) >= 2 else None
        self.lo, self.hi = (xc.min(0), xc.max(0)) if len(xc) >= 2 else (None, None)
        self.far_cols = np.zeros(len(x_cols), dtype=bool)

    def add(self, xt: np.ndarray) -> None:
        """Count the far targets among ``xt [n, dim_x]``.

        Raises:
            DataError: a target lies beyond ``limits.refuse_at`` and ``limits.allow`` is off.
        """
        self.n += len(xt)
        if self.xc is None or not len(xt):
            return
        distance = target_distance(self.xc, xt)
        lim = self.limits
        if lim.refuse_at is not None and not lim.allow and (distance > lim.refuse_at).any():
            i = int(np.argmax(distance))
            raise DataError(
                f"targets: {int((distance > lim.refuse_at).sum())} of this block's {len(xt)} "
                f"targets lie beyond {lim.refuse_at:g} context-range widths outside the "
                f"context's inputs (the furthest, {self._point(xt[i])}, {distance[i]:.3g} "
                f"widths; context range {self._spans()}): beyond {lim.model}'s hard limit, "
                "where its card shows no calibration; pass allow_extrapolation=True "
                "(--allow-extrapolation) to predict there anyway"
            )
        far = distance > lim.warn_at
        self.n_far += int(far.sum())
        width = self.hi - self.lo
        beyond = (xt < self.lo - lim.warn_at * width) | (xt > self.hi + lim.warn_at * width)
        self.far_cols |= (beyond & (width > 0)).any(0)

    def _point(self, x: np.ndarray) -> str:
        return ", ".join(f"{c}={v:.4g}" for c, v in zip(self.x_cols, x)) or "a target"

    def _spans(self) -> str:
        return ", ".join(
            f"{c!r} [{self.lo[i]:.4g}, {self.hi[i]:.4g}]" for i, c in enumerate(self.x_cols)
        )

    def warn(self) -> None:
        if not self.n_far:
            return
        cols = [c for c, f in zip(self.x_cols, self.far_cols) if f]
        lim = self.limits
        where = (
            "outside the context's input range"
            if lim.warn_at == 0
            else f"more than {lim.warn_at:g} context-range width(s) outside the context's inputs"
        )
        trust = (
            "neural processes extrapolate poorly there"
            if lim.model is None
            else f"{lim.model}'s calibration was measured to hold only "
            + ("inside the context's range" if lim.warn_at == 0 else f"to {lim.warn_at:g} widths")
            + " (its card's safe range)"
        )
        warn_user(
            f"{self.n_far} of {self.n} targets lie {where} (in {column_names(cols)}; context "
            f"range {self._spans()}); {trust}"
        )
