"""The steps of :func:`tnpx.predict`, shared by the function and the chunked ``tnpx predict``.

1. :func:`plan_prediction`: from the context (read whole: it is small) fit the unit map and
   hold the context in the model's units (a :class:`Plan`).
2. :func:`predict_block`: one block of targets in, its rows of the result out, every value
   checked: a target beyond the model's safe input range, or a prediction that is not
   finite, fails naming its row and column (:mod:`tnpx.apply.predict_checks`); nothing
   non-finite is ever returned.
3. :func:`stream_prediction`: the targets a chunk of rows at a time
   (:mod:`tnpx.apply.table_chunks`), so memory is bounded by the chunk; the warnings about
   dropped rows and far targets count over all chunks and are given once, at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..likelihoods import model_family, read_exposure
from ..units import UnitMap
from ..user_files import read_table, warn_user
from ..user_table import Dropped, UserTable
from .coordinate_units import in_model_units, units_of
from .family_columns import (
    add_normal_quantiles,
    check_quantiles,
    family_arrays,
    family_frame,
    interval_probs,
    result_stats,
    support_output_map,
)
from .model_columns import model_columns
from .predict_checks import check_finite_result, check_model_range, check_units, no_targets
from .predict_missing import masked_outputs, read_context
from .predict_values import can_stream, predict_arrays, prediction_frame
from .table_chunks import Reads, open_chunked, read_chunks
from .training_range import OutsideTraining, TrainingRange
from .unit_choice import ExtrapolationLimits, FarTargets, fit_units, needs_targets

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

    from ..models import NeuralProcess

DEFAULT_DOMAIN = (-2.0, 2.0)
SCALINGS = ("auto", "stored", "context")  # Options.scaling


@dataclass(frozen=True)
class Options:
    """What :func:`tnpx.predict` takes besides the model and the tables (documented there)."""

    x_cols: object = None
    y_cols: object = None
    scale_inputs: bool = True
    standardise_outputs: bool = True
    input_scale: object = None
    output_scale: object = None
    domain: object = None
    level: float = 0.95
    chunk_size: int = 16384
    drop_missing: bool = False
    allow_extrapolation: bool = False
    limits: ExtrapolationLimits | None = None  # the model's (extrapolation_limits); None: default
    scaling: str = "auto"  # auto: a checkpoint's stored normalisation if any | stored | context
    stored: tuple | None = None  # the checkpoint's (UnitMap, x_columns, y_columns) (resolve)
    units: dict | None = None  # the checkpoint's {input column: unit} (coordinate_units)
    trained: TrainingRange | None = None  # where it was trained (checked with stored maps)
    quantiles: tuple = ()  # a column <y>_q<p> per p (tnpx.apply.family_columns)
    exposure: str | None = None  # the checkpoint's exposure column: context and targets need it

    def __post_init__(self):
        object.__setattr__(self, "quantiles", check_quantiles(self.quantiles))
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {self.scaling!r}")
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1), got {self.level}")
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size}")


@dataclass
class Plan:
    """One prediction's model, unit map and context in the model's units (``xc [n_ctx,
    dim_x]``, ``yc [n_ctx, dim_y]``, 0.0 at a missing output; a count model's exposures
    ``exposure_c [n_ctx]``, never mapped); ``observed [n_ctx, dim_y]``:
    False at the missing outputs (None: none missing); ``far`` counts the far targets over the
    blocks."""

    net: NeuralProcess
    units: UnitMap
    record: dict
    x_cols: list
    y_cols: list
    xc: np.ndarray
    yc: np.ndarray
    far: FarTargets
    options: Options
    observed: np.ndarray | None = None
    shown: list | None = None  # the result's columns in the user's order (model_columns)
    outside: OutsideTraining | None = None  # values past the training range (training_range)
    exposure_c: np.ndarray | None = None  # [n_ctx]: the context's exposures (options.exposure)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the model computes in (its inputs are cast to it)."""
        return self.net.dtype or torch.get_default_dtype()


# -- the steps ---------------------------------------------------------------------------------
def uses_stored(o: Options) -> bool:
    """Whether a prediction maps with the checkpoint's stored normalisation: it has one, and
    neither ``scaling="context"`` nor a hand-set map (``input_scale``, ``output_scale``,
    ``domain``, scaling switched off) asks for the tables' own.

    Raises:
        ValueError: ``scaling="stored"`` for a model that stores none.
    """
    if o.scaling == "stored" and o.stored is None:
        raise ValueError(
            "scaling='stored': the model stores no normalisation (only a model trained on "
            "your data with tnpx train does); use scaling='auto' or 'context'"
        )
    by_hand = (
        o.input_scale is not None
        or o.output_scale is not None
        or o.domain is not None
        or not (o.scale_inputs and o.standardise_outputs)
    )
    return o.stored is not None and o.scaling != "context" and not by_hand


def stored_record(stored: tuple) -> dict:
    """``result.attrs["tnpx"]`` for a prediction with a stored normalisation."""
    units, x_names, y_names = stored
    return {
        "scaling": "stored",
        "domain": None,
        "input_ranges": None,
        "input_loc_scale": {c: [float(units.x.loc[i]), float(units.x.scale[i])]
                            for i, c in enumerate(x_names)},
        "output_mean_std": {c: [float(units.y.loc[i]), float(units.y.scale[i])]
                            for i, c in enumerate(y_names)},
    }  # fmt: skip


def plan_prediction(
    net: NeuralProcess,
    recorded: tuple[float, float] | None,
    why: str,
    context: UserTable,
    target_extremes,
    options: Options,
) -> Plan:
    """Fit the unit map to the ``context`` (read whole, once: :func:`~tnpx.apply.
    predict_missing.read_context`) and check it: ``recorded`` is the model's training domain
    (``why`` it is unknown where None); ``target_extremes()`` gives the targets' extreme rows
    ``[k, dim_x]``, called only where the map needs them."""
    o = options
    ctx, x_cols, y_cols, observed = context.source, context.x_cols, context.y_cols, context.observed
    dropped = Dropped(ctx.name)
    context.log_dropped(dropped)  # none dropped without drop_missing
    dropped.warn()
    xc, yc = context.x, context.y  # a missing output is NaN in yc (observed: False there)
    if len(xc) == 0:
        note = ""
        if o.standardise_outputs and o.output_scale is None:
            note = "; outputs are in the model's units (mean 0, scale 1): pass output_scale"
        warn_user(f"{ctx.name} has no rows: the prediction is the model's prior{note}")
    if o.scale_inputs and o.domain is None and recorded is None and not uses_stored(o):
        warn_user(
            f"the model's training input domain is unknown ({why}): assuming "
            f"{list(DEFAULT_DOMAIN)}; pass domain=(low, high) (--domain) to set it"
        )
    if uses_stored(o):
        units, record = o.stored[0], stored_record(o.stored)
    else:
        box = None
        if o.scale_inputs:
            box = o.domain if o.domain is not None else recorded or DEFAULT_DOMAIN
        xt = target_extremes() if needs_targets(xc, box, o.input_scale) else xc[:0]
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked, and named
            units, record = fit_units(
                xc, yc, xt, x_cols, y_cols, box, o.input_scale, o.standardise_outputs,
                o.output_scale,
            )  # fmt: skip
        family_map = support_output_map(net, yc)  # counts, 0/1, rain: not standardised
        if family_map is not None and o.standardise_outputs and o.output_scale is None:
            units = UnitMap(units.x, family_map)
            record["output_mean_std"] = {
                c: [float(family_map.loc[j]), float(family_map.scale[j])]
                for j, c in enumerate(y_cols)
            }
            record["output_family"] = model_family(net)  # loc, scale by its rule, not moments
    with np.errstate(over="ignore", invalid="ignore"):
        check_units(units, x_cols, y_cols, ctx.name)
        xc_model, yc_model = units.inputs(xc), units.outputs(yc)
    limits = replace(o.limits or ExtrapolationLimits(), allow=o.allow_extrapolation)
    far = FarTargets(xc, x_cols, limits)
    outside = None
    if o.trained is not None and uses_stored(o):  # context and targets against training's
        outside = OutsideTraining(o.trained, x_cols, o.allow_extrapolation)
        outside.add(ctx, context.positions, xc)
    yc_model = masked_outputs(yc_model, observed)
    plan = Plan(
        net, units, record, x_cols, y_cols, xc_model, yc_model, far, o, observed, outside=outside
    )
    in_model = np.hstack([xc_model, yc_model])
    cols = [*x_cols, *y_cols]
    check_model_range(ctx, context.positions, context.values(), in_model, cols, plan.dtype)
    return plan


def predict_block(plan: Plan, targets: UserTable) -> pd.DataFrame:
    """The result rows of one block of ``targets`` (read once: their inputs ``x [n, dim_x]``).
    Every value checked (see the module)."""
    table, positions, xt = targets.source, targets.positions, targets.x
    plan.far.add(xt)
    if plan.outside is not None:
        plan.outside.add(table, positions, xt)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked for, and named
        xt_model = plan.units.inputs(xt)
        check_model_range(table, positions, xt, xt_model, plan.x_cols, plan.dtype)
        frame = _result_rows(plan, targets.inputs(), xt_model, _exposures(plan, targets))
    check_finite_result(table, positions, frame, len(plan.x_cols))
    return frame if plan.shown is None else frame[plan.shown]


def _exposures(plan: Plan, table: UserTable) -> np.ndarray | None:
    """``[n_kept]``: the exposures of ``table``'s kept rows, each checked (a
    :class:`DataError` naming a missing column, or the row); None for a model without one."""
    column = plan.options.exposure
    if column is None:
        return None
    why = "the model's exposure: it was trained with one"
    return read_exposure(table.source, column, table.positions, named_by=why)


def _result_rows(
    plan: Plan, inputs: pd.DataFrame, xt_model: np.ndarray, exposure_t: np.ndarray | None = None
) -> pd.DataFrame:
    """The result columns at targets ``xt_model [n, dim_x]`` (model units; a count model's
    exposures ``exposure_t [n]``) in the user's: a Gaussian model's mean, std and Gaussian
    interval as always (and its quantiles), another family's columns by its distribution
    (:mod:`tnpx.apply.family_columns`)."""
    o, masked = plan.options, {} if plan.observed is None else {"observed": plan.observed}
    if model_family(plan.net) == "gaussian":
        mean, std = predict_arrays(plan.net, plan.xc, plan.yc, xt_model, o.chunk_size, **masked)
        mean, std = plan.units.mean_to_user(mean), plan.units.std_to_user(std)
        frame = prediction_frame(inputs, plan.y_cols, mean, std, o.level)
        return add_normal_quantiles(frame, plan.y_cols, mean, std, o.quantiles)
    probs = (*interval_probs(o.level), *o.quantiles)
    arrays = family_arrays(
        plan.net, plan.xc, plan.yc, xt_model, probs, o.chunk_size, **masked,
        exposure_c=plan.exposure_c, exposure_t=exposure_t,  # None: a model without exposures
    )  # fmt: skip
    return family_frame(inputs, plan.y_cols, arrays, plan.units.y, plan.net, o.quantiles)


def stream_prediction(
    net: NeuralProcess,
    recorded: tuple[float, float] | None,
    why: str,
    context,
    targets,
    options: Options,
    rows: int | None,
) -> tuple[Plan, Iterator[pd.DataFrame]]:
    """The plan and the result, a block per ``rows`` target rows (all at once where None; a
    model that cannot stream, :func:`can_stream`, always takes all). The warnings about the
    targets are given, and a table without targets fails, when the blocks are exhausted."""
    rows = rows if can_stream(net) else None
    ctx = read_table(context, "context")
    head, chunks = open_chunked(targets, "targets", rows)
    columns = model_columns(
        ctx, head, options.x_cols, options.y_cols, options.stored, net.dim_x, net.dim_y
    )  # by name where the model knows its columns' names
    x_cols, y_cols = columns.x, columns.y
    units = options.units  # dates in a time input: numbers in the stored unit
    ctx, chunks = in_model_units(ctx, units, x_cols), units_of(chunks, units, x_cols)
    context = read_context(ctx, x_cols, y_cols, net, options.drop_missing)
    # each chunk of targets read once; a table whole in memory (rows None) is kept for the
    # second pass, a file read in chunks is read again (memory stays bounded by a chunk)
    reads = read_chunks(chunks, x_cols, options.drop_missing, keep=rows is None)

    def extremes() -> np.ndarray:
        return target_extremes(reads, options.drop_missing, head.name)

    plan = plan_prediction(net, recorded, why, context, extremes, options)
    plan.exposure_c = _exposures(plan, context)
    if options.exposure is not None:
        plan.record["exposure"] = options.exposure  # the column the counts are predicted for
    plan.shown = columns.result_order(result_stats(net, options.quantiles))
    return plan, _blocks(plan, reads, head.name)


def _blocks(plan: Plan, reads: Reads, name: str) -> Iterator[pd.DataFrame]:
    dropped = Dropped(name)
    n = 0
    for targets in reads():
        if plan.options.drop_missing:
            targets.log_dropped(dropped)
        if len(targets.x):
            n += len(targets.x)
            yield predict_block(plan, targets)
    dropped.warn()
    if n == 0:
        raise no_targets(name, dropped.rows)
    plan.far.warn()
    if plan.outside is not None:
        plan.outside.warn()


def target_extremes(reads: Reads, drop_missing: bool, name: str) -> np.ndarray:
    """``[2, dim_x]``: the targets' per-column minimum and maximum, in one pass over the
    chunks read (the prediction pass gives the warnings about them)."""
    lo = hi = None
    dropped = Dropped(name)
    for targets in reads():
        if drop_missing:
            targets.log_dropped(dropped)
        if len(targets.x):
            x = targets.x
            lo = x.min(0) if lo is None else np.minimum(lo, x.min(0))
            hi = x.max(0) if hi is None else np.maximum(hi, x.max(0))
    if lo is None:
        raise no_targets(name, dropped.rows)
    return np.stack([lo, hi])
