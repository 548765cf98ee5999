"""Experiment configs: YAML files loaded into typed dataclasses, overridable from the CLI.

``load_config("configs/kr1-rbf-budget.yaml", ["model.dim_model=64", "train.steps=2000"])``
reads the YAML, applies ``section.key=value`` overrides (OmegaConf dot-list syntax), and
checks every key and type: an unknown key or a wrong type raises :class:`ConfigError`
listing the valid keys. The ``model`` and ``data`` sections are checked against the chosen
model's hyper-parameters and the chosen sampler's options. The sections themselves are
:mod:`tnpx.config.sections`, the checks :mod:`tnpx.config.checks`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .checks import check_components, check_keys, config_from_dict  # noqa: F401 (as before)
from .parsing import load_yaml, merge, parse_override, parse_text, resolved
from .rules import ConfigError  # noqa: F401 (importable from here, as before)
from .sections import (  # noqa: F401 (importable from here, as before)
    MODEL_KEYS,
    OPTIMISERS,
    WARMUP_SHARE,
    EvalConfig,
    ExperimentConfig,
    OptimConfig,
    ScheduleConfig,
    TrainConfig,
)
from .source_defaults import with_source_defaults


def read_yaml(path: str | Path, _seen: tuple = ()) -> DictConfig:
    """Read a YAML config; a top-level ``base: other.yaml`` (relative to this file) is read
    first and this file's keys are merged over it, so a variant states only what differs.
    A file that names a different ``model.name`` keeps the parent's model options that the
    new model takes (sizes, usually) and drops the rest, so a family of configs that compare
    models at one size states that size once."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {path} is a folder, not a YAML file")
    if not path.is_file():
        raise ConfigError(f"config file {path} not found")
    if path.resolve() in _seen:
        raise ConfigError(f"config file {path} includes itself through 'base'")
    cfg = load_yaml(path)
    parent = cfg.pop("base", None)
    if parent is None:
        return cfg
    _check_base(path, parent)
    inherited = read_yaml(path.parent / parent, (*_seen, path.resolve()))
    new_model = OmegaConf.select(cfg, "model.name")
    if new_model is not None and new_model != OmegaConf.select(inherited, "model.name"):
        _drop_model_keys_not_taken_by(inherited, new_model)
    return merge(inherited, cfg, f"config file {path}")


def _check_base(path: Path, parent: object) -> None:
    """``base`` names another YAML file, relative to the file ``path`` that names it."""
    if not isinstance(parent, str):
        raise ConfigError(f"config file {path}: base = {parent!r} must be a YAML file's path")
    if not (path.parent / parent).is_file():
        raise ConfigError(f"config file {path}: base = {parent!r}: no file {path.parent / parent}")


def load_config(
    path: str | Path | Mapping | None = None, overrides: list[str] | None = None
) -> ExperimentConfig:
    """Read a YAML config (or take a mapping of the same sections, or start from defaults),
    apply ``key=value`` overrides, check it. A data source's default model options are added
    where the config leaves them out (:mod:`tnpx.config.source_defaults`: the ``grid``
    source's ``centre_outputs``)."""
    defaults = OmegaConf.create(dataclasses.asdict(ExperimentConfig()))
    if isinstance(path, Mapping):
        base = merge(defaults, OmegaConf.create(dict(path)), "config mapping")
    else:
        base = merge(defaults, read_yaml(path) if path else {}, f"config file {path}")
    parts = {item: parse_override(item) for item in overrides or []}
    cli = OmegaConf.create()
    for item, part in parts.items():  # one at a time, so a bad one is named
        cli = merge(cli, part, f"override {item!r}")
    _drop_foreign_model_keys(base, cli)
    for item, part in parts.items():
        base = merge(base, part, f"override {item!r}")
    return config_from_dict(with_source_defaults(resolved(base)))


def _drop_foreign_model_keys(base, cli) -> None:
    """When the command line switches ``model.name``, drop the file's model options the new
    model does not take (e.g. ``n_layers`` when switching to ``cnp``), with a warning.
    Options given on the command line are always checked strictly."""
    new_name = OmegaConf.select(cli, "model.name")
    if new_name is None or new_name == OmegaConf.select(base, "model.name"):
        return
    foreign = _drop_model_keys_not_taken_by(base, new_name)
    if foreign:
        warnings.warn(
            f"model.name={new_name}: ignoring the config file's model options "
            f"{foreign}, which {new_name} does not take",
            stacklevel=3,
        )


def _drop_model_keys_not_taken_by(cfg, model_name: str) -> list[str]:
    """Delete from ``cfg.model`` the options ``model_name`` does not take; return their names.
    An unknown model name is left for :func:`check_components` to report."""
    from ..models.registry import REGISTRY, options_taken

    if not isinstance(model_name, str) or model_name not in REGISTRY:
        return []
    if not isinstance(cfg.get("model"), DictConfig):
        return []
    kept = set(options_taken(model_name, dict(cfg.model))) | set(MODEL_KEYS)
    foreign = [k for k in cfg.model if k not in kept]
    for k in foreign:
        del cfg.model[k]
    return foreign


def config_to_yaml(cfg: ExperimentConfig) -> str:
    """The YAML text of a config (what a run directory and a checkpoint record)."""
    return OmegaConf.to_yaml(OmegaConf.create(dataclasses.asdict(cfg)))


def config_from_yaml(text: str) -> ExperimentConfig:
    """The config a YAML text (:func:`config_to_yaml`) describes; ConfigError if malformed."""
    return config_from_dict(resolved(parse_text(text)))
