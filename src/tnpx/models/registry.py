"""The model registry: model names to their classes, named presets of their options, and
building a model by name.

A model module registers its class with the decorator :func:`register`; ``presets/`` names
sets of a model's options with :func:`register_preset`. The registry reads a model class only
through its class attributes (``name``, ``Hyper``, ``missing_outputs_support``), so it imports
nothing of ``base.py``: the base class imports it, to name the models that read missing
outputs in its refusals.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from .sizes import size_problem

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

REGISTRY: dict[str, Any] = {}  # model name -> its NeuralProcess subclass
PRESETS: dict[str, dict[str, dict]] = {}  # model name -> preset name -> hyper-parameters


def register(name: str):
    """Class decorator: register a model under ``name`` (lower case, hyphenated)."""

    def wrap(cls):
        if name in REGISTRY:
            raise ValueError(f"model name {name!r} registered twice")
        cls.name = name
        REGISTRY[name] = cls
        return cls

    return wrap


def register_preset(model: str, preset: str, **hyper) -> None:
    """Name a set of hyper-parameters of ``model`` (e.g. a paper's ablation), usable as
    ``build_model(model, preset=preset)`` or ``model.preset`` in a config."""
    PRESETS.setdefault(model, {})[preset] = hyper


def list_models() -> list[str]:
    """Names of all registered models, sorted."""
    return sorted(REGISTRY)


def missing_outputs_models() -> list[str]:
    """The registered models that read missing outputs when built with
    ``missing_outputs=True``."""
    return [n for n in list_models() if REGISTRY[n].missing_outputs_support() == "option"]


def missing_outputs_refusal(model: Any) -> str:
    """Why ``model`` (a ``NeuralProcess``) does not read missing output values, and what to
    do (a clause)."""
    models = ", ".join(missing_outputs_models())
    if model.missing_outputs_support() == "option":
        return (
            f"{model.name} was built without missing_outputs: set model.missing_outputs=true "
            f"(build_model(..., missing_outputs=True); models that take it: {models})"
        )
    return (
        f"{model.name} cannot read them: use a model that can, with missing_outputs=true ({models})"
    )


def hyper_names(cls: type) -> list[str]:
    """The hyper-parameter names model class ``cls`` takes."""
    return [f.name for f in fields(cls.Hyper)]


def options_taken(name: str, options: dict) -> dict:
    """The entries of ``options`` that registered model ``name`` takes as hyper-parameters
    (e.g. shared sizes applied to models that have different sets of options)."""
    valid = set(hyper_names(REGISTRY[name]))
    return {k: v for k, v in options.items() if k in valid}


def resolve_hyper(name: str, preset: str | None = None, **overrides) -> DataclassInstance:
    """The ``Hyper`` that ``build_model(name, preset=preset, **overrides)`` builds with: the
    preset's options, then ``overrides`` on top, resolved by the class (e.g. ``dim_head=None``
    becomes ``dim_model // n_heads``). A name, preset or option the model does not take is a
    ``ValueError`` saying which ones it does."""
    if name not in REGISTRY:
        raise ValueError(f"unknown model {name!r}; registered: {', '.join(list_models())}")
    cls = REGISTRY[name]
    if preset is not None:
        presets = PRESETS.get(name, {})
        if preset not in presets:
            raise ValueError(
                f"model {name!r} has no preset {preset!r}; presets: "
                f"{', '.join(sorted(presets)) or 'none'}"
            )
        overrides = {**presets[preset], **overrides}
    valid = hyper_names(cls)
    unknown = sorted(set(overrides) - set(valid))
    if unknown:
        raise ValueError(f"model {name!r} does not take {unknown}; it takes: {', '.join(valid)}")
    problem = size_problem(cls.Hyper, overrides, where=name)
    if problem:
        raise ValueError(problem)
    return cls.Hyper(**overrides)


def build_model(
    name: str, dim_x: int = 1, dim_y: int = 1, preset: str | None = None, **overrides
) -> Any:
    """Build the registered model ``name`` for ``dim_x`` inputs and ``dim_y`` outputs: a
    :class:`~tnpx.models.base.NeuralProcess`.

    ``preset`` names a set of hyper-parameters registered for the model (``PRESETS``, e.g.
    ``te-pt-tnp``'s ``no-input-adjustment`` ablation); ``overrides`` set hyper-parameters
    (``dim_model``, ``n_layers``, ...) on top. A name the model does not take is a
    ``ValueError`` listing the ones it does.

    Example:
        >>> import tnpx
        >>> model = tnpx.build_model("tnp", dim_x=1, dim_y=1, dim_model=64)
    """
    hyper = resolve_hyper(name, preset, **overrides)
    return REGISTRY[name](int(dim_x), int(dim_y), hyper)
