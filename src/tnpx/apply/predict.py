"""Prediction on a user's own data: tables in, predictions in the same units out.

``predict(model, context, targets)`` takes a model (or a checkpoint path) and two tables
(pandas DataFrames or CSV files): the *context*, rows of observed inputs and outputs, and the
*targets*, rows of inputs to predict at. It returns one row per target with the predictive
mean, standard deviation and a central interval of every output, in the user's units.

Scaling. A model is trained on tasks whose inputs lie in a fixed box, the *training domain*
(``[-2, 2]`` for the KR and TE GP data), and whose outputs have mean about 0 and scale about 1.
The same model given inputs in metres or years and outputs in kelvin sees functions it never
met in training. So, by default:

- inputs: per input column, ``x_model = (x - loc) / scale`` is the affine map taking the
  *context's* range ``[min, max]`` onto the training domain. The context alone, not the
  targets, fixes it: the context then looks as it did in training (spread over the domain),
  and the prediction at a target depends on the context and that target only, never on which
  other targets are asked for (so adding targets, or streaming them in chunks, changes
  nothing). Targets outside the context's range map outside the domain; targets more than one
  context-range width outside it get a warning, since NPs extrapolate poorly. A column where
  the context has fewer than two distinct values (one point, a constant column, no context)
  uses the range of context and targets together instead.
- outputs: ``y_model = (y - mean) / std``, the context's mean and (population) standard
  deviation per output column; a standard deviation that is zero or negligible against the
  mean (one point, a constant column) is replaced by 1, with a warning. Predicted means map
  back as ``mean * std + mean_c``; predicted standard deviations scale by ``std`` only.
  An empty context (the model's prior) uses mean 0 and scale 1 unless given.

The training domain comes from the experiment config a trained checkpoint records: its data
sampler's ``input_domain`` (the GP ``domain`` of the ``kr`` layout, the ``ctx_range`` of the
``uniform`` layout or of sawtooth data, plus any training ``shift``); a model object or a
checkpoint without that record falls back to ``[-2, 2]`` with a warning.
``scale_inputs=False`` / ``standardise_outputs=False`` switch either map off (values go to the
model unchanged); ``input_scale``, ``output_scale`` and ``domain`` set them by hand. The maps
used are recorded in ``result.attrs["tnpx"]``.

Stored normalisation. A checkpoint trained with ``tnpx train`` on a user's data (a ``table``
source, say) stores the affine maps its data were normalised with, fitted on the training
tasks only (``(value - loc) / scale`` per input and output column). ``predict`` then maps
with those instead of the context's range and moments, so absolute inputs keep their meaning
(a growth curve's day 0 is day 0) and the context need not span anything. Its column names
are stored too: the user's columns are matched to them by name, in any order, and a column it
does not know is refused (:mod:`tnpx.apply.model_columns`); a time input it stores in hours
since 1970-01-01 takes dates (:mod:`tnpx.apply.coordinate_units`). ``scaling="context"``,
or any hand-set map (``input_scale``, ``output_scale``, ``domain``, ``scale_inputs=False``,
``standardise_outputs=False``), uses the maps described above instead; the zoo's models
store none and always use them. A stored normalisation that cannot be read is refused in one
line, as is a recorded training experiment that cannot be read (never a guessed domain).

Extrapolation. A target's *distance* is how far it lies outside the context's input range, in
widths of that range (the largest over input columns). A zoo model's card records how far its
calibration was measured to hold on held-out tasks of its prior (``safe_range``:
:mod:`tnpx.evaluation.extrapolation`): targets beyond that distance get one warning, and targets
beyond its hard limit (where the measurement found it no longer calibrated, or stopped) are refused
with a :class:`DataError` unless ``allow_extrapolation=True``. Other models warn beyond one
width and refuse nothing (:func:`extrapolation_limits`).

A model trained on your data also knows where it was trained: its checkpoint stores each input
column's training range (the region and the period, in your units) and how far outside it the
model was measured to stay calibrated on its own validation tasks
(:mod:`tnpx.training.range_limits`). With the stored normalisation, the context's and the
targets' inputs are checked against it (:mod:`tnpx.apply.training_range`): a value past the
measured warn distance (in widths of the training range) gives one warning naming the column,
the training range and how far; a value past the hard limit is refused with a
:class:`DataError` naming the row, unless ``allow_extrapolation=True``. Either most often
means a value in another unit (time in days where the model was trained in hours), or another
region or period. Without measured limits the defaults are to warn past 0.1 widths and refuse
past 1; a checkpoint that stores no range (saved before tnpx recorded it) is not checked.

Safety. In the model's units every context value and target input must lie within
``+-max_abs_input(dtype)`` (:mod:`tnpx.input_checks`: 1e9 for float32 models, 1e77 for float64),
where every model's arithmetic stays finite; a value beyond it, or a prediction that is not
finite, raises :class:`DataError` naming its row and column: nothing non-finite is returned.
With the default scaling that means a target more than about 2.5e8 context-range widths
away from the context.

The maps are a :class:`tnpx.units.UnitMap` (the same object the BoTorch adapter
:class:`tnpx.bo.NPSurrogate` uses), chosen from the tables by :mod:`tnpx.apply.unit_choice`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..user_files import DataError, read_table  # noqa: F401 (part of this module's API)
from .predict_steps import DEFAULT_DOMAIN, Options, stream_prediction  # noqa: F401 (API)
from .predict_values import (  # noqa: F401 (can_stream ... prediction_frame: this module's API)
    can_stream,
    predict_arrays,
    prediction_frame,
)
from .training_range import TrainingRange, read_training_range
from .unit_choice import ExtrapolationLimits

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

    from ..config import ExperimentConfig
    from ..models import NeuralProcess


# -- the model and its training domain ---------------------------------------------------------
class Resolved(NamedTuple):
    """A model to predict with and what its checkpoint records about its data: the training
    domain (None where unknown, ``why`` it is), and the stored normalisation of a model trained
    on a user's data (``(UnitMap, x_columns, y_columns)``, :func:`tnpx.checkpoint.stored_units`;
    None for a prior-trained model) with its inputs' units (``{column: unit}``,
    :func:`tnpx.checkpoint.stored_input_units`; None where it records none)."""

    net: NeuralProcess
    domain: tuple[float, float] | None
    why: str
    stored: tuple | None = None
    units: dict | None = None
    trained: TrainingRange | None = None  # where it was trained (:mod:`.training_range`)
    exposure: str | None = None  # a count model's exposure column (stored_exposure)


def resolve(model) -> Resolved:
    """:class:`Resolved` for a model object, a checkpoint path or a pretrained model's name.
    A checkpoint is read once: the model, the experiment that gives the domain and the
    stored normalisation all come from its record.

    Raises:
        CheckpointError: the path is not a readable tnpx checkpoint (nor a shipped name), or
            its recorded experiment or normalisation is there but cannot be read.
    """
    from ..models import NeuralProcess

    if isinstance(model, NeuralProcess):
        return Resolved(model, None, "a model object carries no record of its training data")
    if not isinstance(model, (str, Path)):
        raise TypeError(f"model: expected a NeuralProcess or a checkpoint path, got {type(model)}")
    from ..checkpoint import (
        CheckpointError,
        experiment_from_record,
        model_from_record,
        read_checkpoint,
        stored_exposure,
        stored_input_units,
        stored_units,
    )
    from ..zoo import checkpoint_file

    path = checkpoint_file(model)
    record = read_checkpoint(path)
    net = model_from_record(record, path).eval()
    stored = stored_units(record, path)
    units = stored_input_units(record, path) if stored is not None else None
    trained = read_training_range(record, path) if stored is not None else None
    exposure = stored_exposure(record, path)
    try:
        experiment = experiment_from_record(record)
    except ValueError as err:  # recorded by another tnpx version, say: never guess a domain
        raise CheckpointError(
            f"{path}: its recorded training experiment cannot be read ({err}); predict with "
            "the tnpx that trained it, or re-save the model with tnpx.save"
        ) from None
    if experiment is None:
        why = f"{path} records no training experiment"
        return Resolved(net, None, why, stored, units, trained, exposure)
    domain = training_domain(experiment)
    why = f"{path}'s data sampler {experiment.data.get('name')!r} has no domain"
    return Resolved(net, domain, why, stored, units, trained, exposure)


def refuse_exposure(resolved: Resolved, path: str) -> None:
    """A ``ValueError`` (one line) where ``resolved`` was trained with an exposure column and
    ``path`` (``NPRegressor``, ``ContextStream``) takes no exposures: its predictions would be
    for exposure 1, which the user did not ask for."""
    if resolved.exposure is not None:
        raise ValueError(
            f"{path} takes no exposure, and the model was trained with the exposure column "
            f"{resolved.exposure!r}; use tnpx.predict (tnpx predict) with that column in the "
            "context and the targets"
        )


def resolve_model(model) -> tuple[NeuralProcess, tuple[float, float] | None, str]:
    """``(model, training domain or None, why the domain is unknown)``: :func:`resolve`
    without the stored normalisation."""
    return tuple(resolve(model)[:3])


def extrapolation_limits(model) -> ExtrapolationLimits:
    """How far beyond its context ``model`` (an object, a checkpoint path or a pretrained
    name) is trusted: a zoo model's card records its measured safe range (targets beyond it
    warn) and hard limit (targets beyond it are refused); any other model warns beyond one
    context-range width and has no limit (module docstring, "Extrapolation")."""
    from ..models import NeuralProcess
    from ..zoo import card_of_checkpoint, checkpoint_file

    if isinstance(model, NeuralProcess):
        return ExtrapolationLimits()
    card = card_of_checkpoint(checkpoint_file(model))
    measured = (card or {}).get("safe_range")
    if not measured:
        return ExtrapolationLimits()
    return ExtrapolationLimits(
        warn_at=measured["widths"],
        refuse_at=measured["hard_limit"],
        model=card["name"],
    )


def training_domain(experiment: ExperimentConfig) -> tuple[float, float] | None:
    """The box the training context inputs were drawn from, per the recorded config (the
    same box on every input axis): the sampler's ``input_domain``, None for one without."""
    from ..data import SAMPLERS, build_sampler
    from ..data.base import states_input_domain

    name = experiment.data.get("name")
    # Only samplers that state a domain are built: building an image, ERA5 or Kolmogorov
    # sampler would load its data set just to answer None.
    if name not in SAMPLERS or not states_input_domain(SAMPLERS[name][0]):
        return None
    return build_sampler(name, 1, 0, **experiment.data_options()).input_domain


def predict(
    model,
    context,
    targets,
    *,
    x_cols=None,
    y_cols=None,
    scale_inputs: bool = True,
    standardise_outputs: bool = True,
    input_scale=None,
    output_scale=None,
    domain=None,
    level: float = 0.95,
    chunk_size: int = 16384,
    drop_missing: bool = False,
    allow_extrapolation: bool = False,
    scaling: str = "auto",
    quantiles=None,
) -> pd.DataFrame:
    """Predict the outputs at ``targets`` given ``context``, in the user's units.

    Args:
        model: a :class:`~tnpx.NeuralProcess`, the path of a checkpoint (whose recorded
            experiment gives the training domain) or a pretrained model's name
            (:func:`tnpx.list_pretrained`).
        context: a DataFrame or CSV path with input and output columns (may have no rows:
            the prediction is then the model's prior). A row may miss some of its outputs
            (NaN, an empty cell) where the model reads missing outputs (built with
            ``missing_outputs=True``): they are masked, and each output is standardised by
            its observed values (:mod:`tnpx.apply.predict_missing`).
        targets: a DataFrame or CSV path with the input columns. For a count model trained
            with an exposure column (its checkpoint names it), the context and the targets
            both need that column: the context is read as rates per unit exposure and each
            target's counts are predicted at its exposure (docs/site/likelihoods.md).
        x_cols, y_cols: input and output column names. For a checkpoint that stores its
            columns' names (trained on your data) they are matched to those by name, in any
            order (default: the model's names); for any other model they go to it in the
            order given (default: every column of ``targets`` is an input and every other
            column of ``context`` an output).
        scale_inputs: map inputs affinely, per column, from the context's range onto the
            model's training domain (see the module docstring); False passes them unchanged.
        standardise_outputs: standardise outputs by the context's mean and std and map the
            predictions back; False passes them unchanged.
        input_scale: ``(low, high)`` (one pair, or one per input column): the range in the
            user's units to map onto the training domain, instead of the context's range.
        output_scale: ``(mean, std)`` (one pair, or one per output column) to standardise
            with, instead of the context's.
        domain: ``(low, high)``: the model's training input domain, instead of the one the
            checkpoint records (or ``[-2, 2]`` where it records none).
        level: the probability of the central interval ``<y>_lower``..``<y>_upper``.
        chunk_size: targets decoded per chunk (the model's memory is bounded by a chunk).
        drop_missing: drop rows with a missing value (with a warning) instead of failing.
        allow_extrapolation: predict at targets beyond the model's hard limit (a zoo model's
            card: :func:`extrapolation_limits`), and at context or targets beyond the hard
            limit of a model trained on your data (its training range), instead of failing;
            they still warn.
        scaling: ``"auto"``: a checkpoint trained on your data maps with the normalisation it
            stores, any other model with maps fitted to the context (module docstring);
            ``"context"``: the context's maps always; ``"stored"``: the stored one, or fail.
        quantiles: probabilities strictly inside (0, 1), e.g. ``[0.1, 0.5, 0.9]``: a column
            ``<y>_q<p>`` (``rain_q0.9``) per output and probability, the predictive quantile.

    Returns:
        A DataFrame, one row per target in order (index of ``targets``): the input columns,
        then ``<y>_mean``, ``<y>_std``, ``<y>_lower``, ``<y>_upper`` per output column, in
        the user's order (``x_cols`` / ``y_cols``, else the tables'; a date given for a time
        input comes back in the model's unit, hours since 1970-01-01), then any quantile
        columns, then a family's own (``<y>_p_dry``, ``<y>_p_zero``). For a Gaussian model
        the interval is that of the Gaussian with the predicted mean and std (for latent NPs,
        whose marginal is a mixture, the moment-matched Gaussian); for another likelihood
        family it lies between the family's quantiles, inside its support, and a Bernoulli's
        ``<y>_mean`` is ``P(y = 1)`` (:mod:`tnpx.apply.family_columns`). ``attrs["tnpx"]`` records
        the input ranges, domain and output ``(mean, std)`` used. Every value is finite.
        The DataFrame holds the whole result (and the targets are read whole): for target
        files too long for memory, ``tnpx predict --out`` reads, predicts and writes them a
        chunk at a time.

    Raises:
        DataError: a missing, unreadable or malformed file, a missing column (or, for a
            model that stores its columns' names, one it does not know), a value that
            is not a number, a missing value (a missing output only for a model that does not
            read them, or in every output of a row), or a column count the model does not take; a
            value that in the model's units is beyond the range its arithmetic stays finite
            in (:func:`tnpx.input_checks.max_abs_input`: 1e9 for a float32 model), or a
            prediction that is not finite (each names the row and column); a target beyond a
            zoo model's hard limit, or a context or target input beyond the hard limit of
            the training range a model trained on your data stores, without
            ``allow_extrapolation``.
        CheckpointError: ``model`` is a path but not a readable tnpx checkpoint.
    """
    import pandas as pd

    resolved = resolve(model)
    options = Options(
        x_cols, y_cols, scale_inputs, standardise_outputs, input_scale, output_scale, domain,
        level, chunk_size, drop_missing, allow_extrapolation, extrapolation_limits(model),
        scaling, resolved.stored, resolved.units, resolved.trained, quantiles, resolved.exposure,
    )  # fmt: skip
    net, recorded, why = resolved[:3]
    plan, blocks = stream_prediction(net, recorded, why, context, targets, options, rows=None)
    parts = list(blocks)
    result = parts[0] if len(parts) == 1 else pd.concat(parts)
    result.attrs["tnpx"] = plan.record
    return result
