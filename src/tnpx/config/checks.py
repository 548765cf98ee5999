"""Checking an experiment config: each key and type against the dataclass of its section
(:mod:`tnpx.config.sections`) and the rule each field declares (:mod:`tnpx.config.rules`), and
the ``model`` and ``data`` sections against the chosen model's hyper-parameters and the chosen
sampler's options. :func:`config_from_dict` builds a fully checked config.
"""

from __future__ import annotations

import dataclasses
import types
import typing

from ..likelihoods import likelihood_problem
from .rules import ConfigError, rule_of
from .sections import MODEL_KEYS, ExperimentConfig


def _type_ok(value, hint) -> bool:
    origin = typing.get_origin(hint)
    if hint is typing.Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is list or hint is list:
        args = typing.get_args(hint)
        return (
            isinstance(value, list) and all(_type_ok(v, args[0]) for v in value)
            if args
            else isinstance(value, list)
        )
    if origin is dict or hint is dict or dataclasses.is_dataclass(hint):
        return isinstance(value, dict)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def check_keys(values: dict, cls, where: str, extra: dict | None = None) -> None:
    """Check ``values`` against the fields of dataclass ``cls`` (plus ``extra`` name->type)."""
    hints = {**typing.get_type_hints(cls), **(extra or {})}
    for key, value in values.items():
        name = f"{where}.{key}" if where else key
        if key not in hints:
            raise ConfigError(
                f"unknown key {name}; valid keys{' of ' + where if where else ''}: "
                f"{', '.join(sorted(hints))}"
            )
        if not _type_ok(value, hints[key]):
            expected = getattr(hints[key], "__name__", str(hints[key]))
            raise ConfigError(
                f"{name} = {value!r} has type {type(value).__name__}; expected {expected}"
            )


def _build(cls, values: dict, where: str):
    check_keys(values, cls, where)
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        sub = hints[key]
        if dataclasses.is_dataclass(sub):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}.{key} must be a mapping, got {value!r}")
            value = _build(sub, value, f"{where}.{key}" if where else key)
        elif sub is float and isinstance(value, int):
            value = float(value)
        kwargs[key] = value
    _check_rules(cls, kwargs, where)
    return cls(**kwargs)


def _check_rules(cls, values: dict, where: str) -> None:
    """Each value against the rule its field declares (:mod:`tnpx.config.rules`)."""
    for f in dataclasses.fields(cls):
        rule = rule_of(f)
        problem = rule.problem(values[f.name]) if rule and f.name in values else None
        if problem:
            name = f"{where}.{f.name}" if where else f.name
            raise ConfigError(f"{name} = {values[f.name]!r}: {problem}")


def _check_registered(key: str, name: object, known: list[str], what: str) -> None:
    if not isinstance(name, str) or name not in known:
        raise ConfigError(f"{key} = {name!r}; {what}: {', '.join(known)}")


def _check_counts(cfg: ExperimentConfig) -> None:
    """The counts the model and data sections hold besides the model's and sampler's own
    options: the batch size, the dimensions, and the model's sizes (:mod:`tnpx.models.sizes`)."""
    from ..models import REGISTRY
    from ..models.sizes import size_problem

    counts = {"data.batch_size": cfg.data.get("batch_size", 1)}
    counts |= {f"model.{k}": cfg.model.get(k, 1) for k in ("dim_x", "dim_y")}
    for key, value in counts.items():
        if value < 1:
            raise ConfigError(f"{key} = {value!r}: must be an integer >= 1")
    problem = size_problem(REGISTRY[cfg.model["name"]].Hyper, cfg.model_options())
    if problem:
        raise ConfigError(problem)


def check_components(cfg: ExperimentConfig) -> None:
    """Check the model and data sections against the chosen model and sampler."""
    from ..data import SAMPLERS
    from ..data.custom import check_custom_name, is_custom_name
    from ..models import REGISTRY

    _check_registered("model.name", cfg.model.get("name"), sorted(REGISTRY), "registered models")
    check_keys(cfg.model, REGISTRY[cfg.model["name"]].Hyper, "model", MODEL_KEYS)
    if "likelihood" in cfg.model:  # a family name or mapping (tnpx.likelihoods.options)
        problem = likelihood_problem(cfg.model["likelihood"], cfg.model.get("dim_y", 1))
        if problem:
            raise ConfigError(f"model.likelihood = {cfg.model['likelihood']!r}: {problem}")
    name = cfg.data.get("name")
    if is_custom_name(name):  # a user's class: imported when a sampler is built, not here
        problem = check_custom_name(name)
        if problem:
            raise ConfigError(problem)
        _check_counts(cfg)
        return
    _check_registered("data.name", name, list(SAMPLERS), "samplers")
    data_cls = SAMPLERS[cfg.data["name"]][1]
    check_keys(cfg.data, data_cls, "data", {"name": str, "batch_size": int})
    check_keys(cfg.eval.data, data_cls, "eval.data")
    _check_counts(cfg)


def config_from_dict(values: dict) -> ExperimentConfig:
    """Build and fully check an :class:`ExperimentConfig` from a plain dict."""
    if not isinstance(values, dict):
        raise ConfigError(f"a config is a mapping of sections, got {type(values).__name__}")
    cfg = _build(ExperimentConfig, values, "")
    check_components(cfg)
    _check_schedule_free(cfg)
    return cfg


def _check_schedule_free(cfg: ExperimentConfig) -> None:
    """A schedule-free optimiser replaces the decaying schedule (src/tnpx/training/optim.py)."""
    if cfg.optim.name.lower() == "schedulefree-adamw" and cfg.schedule.name != "constant":
        raise ConfigError(
            f"optim.name = 'schedulefree-adamw' replaces the decaying schedule: set "
            f"schedule.name=constant (its warm-up still applies), not {cfg.schedule.name!r}"
        )
