"""Allowed ranges of the models' integer hyper-parameters: sizes and counts.

The rule is generic, so a newly registered model is covered without listing its options: an
integer option named ``dim_*`` or ``n_*`` (or one of :data:`OTHER_SIZES`) must be >= 1,
except the counts in :data:`ZERO_ALLOWED` and the fields a model's ``Hyper`` declares with
:func:`zero_allowed`, where 0 is a meaningful model. Without it ``n_heads=0`` built and trained
a model with no attention at all.
"""

from __future__ import annotations

import dataclasses
import typing

# Counts for which 0 is a meaningful model: an MLP's hidden layers (0: a linear map),
# TNP-ND's target self-attention blocks (0: lowrank marginals independent of other targets),
# a fitted GP's Adam steps (0: its initial hyper-parameters), FAVOR+'s redraw interval
# (0: fixed features, the paper's).
ZERO_ALLOWED = frozenset(
    {
        "n_embed_hidden",
        "n_decoder_hidden",
        "n_encoder_hidden",
        "n_cov_hidden",
        "n_cov_layers",
        "n_iterations",
        "redraw_every",
    }
)
# Sizes not named dim_* / n_*.
OTHER_SIZES = frozenset({"chunk_elements", "kernel_size", "rank", "grid_points"})

# Small sizes for models built in milliseconds (the test suite's; benchmarks/input_bound.py's
# "small" row): pass ``options_taken(name, SMALL_SIZES)`` (tnpx.models.registry), which keeps the
# options a model has. For smoke runs, not for models to use.
SMALL_SIZES = {
    "dim_model": 32,
    "n_layers": 2,
    "n_heads": 2,
    "dim_head": 8,
    "dim_ff": 32,
    "n_pseudo": 4,
    "n_features": 8,
    "points_per_unit": 16,  # convcnp grid density
    "kernel_size": 5,  # convcnp
    "dim_latent": 16,  # latent NPs
    "rank": 4,  # tnp-nd covariance rank
    "n_iterations": 20,  # fitted GP baselines (gp, mt-gp): Adam steps per call, not a size
}


def zero_allowed(default: int | None):
    """A ``Hyper`` field for a count where 0 is a meaningful model beyond :data:`ZERO_ALLOWED`
    (CANP's ``n_layers``: no self-attention blocks, the cross-attention remains):
    ``n_layers: int = zero_allowed(2)``."""
    return dataclasses.field(default=default, metadata={"zero_allowed": True})


def _takes_int(hint) -> bool:
    return hint is int or int in typing.get_args(hint)


def size_minimum(hyper: type, key: str) -> int | None:
    """The least value integer option ``key`` of a model's ``Hyper`` dataclass may take (None:
    not a size or count, e.g. ``feature_seed``, or not an integer option). A ``Hyper`` marks
    its own extra zero-allowed counts with :func:`zero_allowed`."""
    field = {f.name: f for f in dataclasses.fields(hyper)}.get(key)
    if field is None or not _takes_int(typing.get_type_hints(hyper)[key]):
        return None
    if key in ZERO_ALLOWED or field.metadata.get("zero_allowed", False):
        return 0
    if key.startswith(("dim_", "n_")) or key in OTHER_SIZES:
        return 1
    return None


def size_minima(hyper: type) -> dict[str, int]:
    """``{option: least value}`` for every size or count a model's ``Hyper`` takes."""
    minima = {f.name: size_minimum(hyper, f.name) for f in dataclasses.fields(hyper)}
    return {k: low for k, low in minima.items() if low is not None}


def size_problem(hyper: type, options: dict, where: str = "model") -> str | None:
    """A message for the first option of ``options`` below its least value in ``hyper`` (a
    model's ``Hyper`` dataclass), else None. Values of the wrong type are left to the type
    check; None is "default" where allowed."""
    minima = size_minima(hyper)
    for key, value in options.items():
        if key not in minima or value is None or not isinstance(value, int):
            continue
        if isinstance(value, bool) or value < minima[key]:
            return f"{where}.{key} = {value!r}: must be an integer >= {minima[key]}"
    return None
