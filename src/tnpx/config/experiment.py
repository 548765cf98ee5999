"""Experiment configs: YAML files loaded into typed dataclasses, overridable from the CLI.

``load_config("configs/kr1-rbf-budget.yaml", ["model.dim_model=64", "train.steps=2000"])``
reads the YAML, applies ``section.key=value`` overrides (OmegaConf dot-list syntax), and
checks every key and type: an unknown key or a wrong type raises :class:`ConfigError`
listing the valid keys. The ``model`` and ``data`` sections are checked against the chosen
model's hyper-parameters and the chosen sampler's options.
"""

from __future__ import annotations

import dataclasses
import types
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .parsing import load_yaml, merge, parse_override, parse_text, resolved
from .rules import (  # noqa: F401 (ConfigError: importable from here, as before)
    ConfigError,
    adam_betas,
    at_least,
    device_name,
    fraction,
    non_empty,
    non_negative,
    one_of,
    optional,
    positive,
    positive_values,
    rule_of,
    ruled,
)

# Keys of the model section besides the model's own hyper-parameters.
# preset: null says "no preset" (a config whose base config names one for another model)
MODEL_KEYS = {"name": str, "dim_x": int, "dim_y": int, "preset": str | None}


# The optimisers tnpx.training.optim builds; schedulefree-adamw takes schedule.name: constant.
OPTIMISERS = ("adamw", "adam", "yogi", "schedulefree-adamw")


@dataclass
class OptimConfig:
    name: str = ruled(one_of(*OPTIMISERS, fold_case=True), "adamw")
    lr: float = ruled(positive(), 1e-3)
    weight_decay: float = ruled(non_negative(), 0.0)
    betas: list[float] = ruled(adam_betas(), default_factory=lambda: [0.9, 0.999])
    # {parameter-name prefix: factor}: those parameters train at lr * factor, e.g.
    # {likelihood: 100} lets a homoscedastic noise scale converge within a short budget
    lr_multipliers: dict[str, float] = ruled(positive_values(), default_factory=dict)


# The default warm-up, a share of the run's steps: the time-to-accuracy recipe's 1,000 of
# 25,000 (results/time-to-accuracy/).
WARMUP_SHARE = 0.04


@dataclass
class ScheduleConfig:
    name: str = ruled(one_of("cosine", "constant"), "cosine")
    # None: WARMUP_SHARE of train.steps. The paper configs state theirs (fidelity).
    warmup_steps: int | None = ruled(optional(at_least(0)), None)
    min_lr_ratio: float = ruled(fraction(), 0.01)  # final lr = lr * min_lr_ratio

    def warmup(self, total_steps: int) -> int:
        """The warm-up steps of a run of ``total_steps``: ``warmup_steps``, or by default
        :data:`WARMUP_SHARE` of the run (rounded)."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        return round(WARMUP_SHARE * total_steps)


@dataclass
class TrainConfig:
    steps: int = ruled(at_least(1), 1000)
    seed: int = ruled(at_least(0), 0)
    clip_value: float | None = ruled(optional(positive()), None)  # gradient values (TE: 0.5)
    clip_norm: float | None = ruled(optional(positive()), None)  # global norm (TNP-KR: 3.0)
    log_every: int = ruled(at_least(1), 50)
    val_every: int = ruled(at_least(1), 500)
    val_batches: int = ruled(at_least(1), 8)
    checkpoint_every: int = ruled(at_least(1), 500)
    out_dir: str = ruled(non_empty(), "runs/default")
    device: str = ruled(device_name(), "auto")
    progress: bool = True
    # Sample the next batch in a background thread (the same numbers). It saves the sampler's
    # share of a step where a core is idle (results/perf/train_profile.md: 0.85x for cnp on a
    # quiet machine); off by default because the long runs go two at a time on two cores,
    # where the worker competes with the other run (a busy-machine A/B measured 1.02-1.21x).
    prefetch: bool = False
    # Start from the weights of a checkpoint (a path or a pretrained model's name): fine-tuning.
    # The model section must build the same architecture; optimiser and schedule start afresh.
    # A resumed run ignores it (its own checkpoint holds the weights).
    init_from: str | None = ruled(optional(non_empty()), None)
    # Initial weights of a fresh run: each layer's torch default, or Flax's lecun_normal
    # (src/tnpx/weight_init.py). Ignored by init_from and by a resumed run.
    weight_init: str = ruled(one_of("default", "lecun_normal"), "default")
    # model.pt holds the best validated weights (best.pt keeps them); patience N: stop after N
    # validations without a better LL (implies keep_best). src/tnpx/training/best.py
    keep_best: bool = False
    # Validate and save an exponential moving average of the weights, this decay per step
    # (e.g. 0.999); None: the raw weights. src/tnpx/training/ema.py
    ema_decay: float | None = ruled(optional(fraction(high_open=True)), None)
    patience: int | None = ruled(optional(at_least(1)), None)


@dataclass
class EvalConfig:
    n_batches: int = ruled(at_least(1), 64)
    batch_size: int = ruled(at_least(1), 16)
    seed: int = ruled(at_least(0), 0)  # fixes the test set, whatever the training seed
    data: dict = field(default_factory=dict)  # sampler options that differ at test time


@dataclass
class ExperimentConfig:
    name: str = "experiment"
    description: str = ""
    protocol: str = ruled(one_of("exact", "budget"), "budget")  # exact: PROTOCOLS.md's
    model: dict = field(default_factory=lambda: {"name": "tnp", "dim_x": 1, "dim_y": 1})
    data: dict = field(default_factory=lambda: {"name": "gp", "batch_size": 16})
    optim: OptimConfig = field(default_factory=OptimConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def model_options(self) -> dict:
        """Hyper-parameter overrides for ``build_model`` (the model section minus its name/dims)."""
        return {k: v for k, v in self.model.items() if k not in ("name", "dim_x", "dim_y")}

    def data_options(self, test: bool = False) -> dict:
        """Sampler options (the data section minus name/batch_size), with eval overrides."""
        opts = {k: v for k, v in self.data.items() if k not in ("name", "batch_size")}
        return {**opts, **self.eval.data} if test else opts


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
    path: str | Path | None = None, overrides: list[str] | None = None
) -> ExperimentConfig:
    """Read a YAML config (or start from defaults), apply ``key=value`` overrides, check it."""
    defaults = OmegaConf.create(dataclasses.asdict(ExperimentConfig()))
    base = merge(defaults, read_yaml(path) if path else {}, f"config file {path}")
    parts = {item: parse_override(item) for item in overrides or []}
    cli = OmegaConf.create()
    for item, part in parts.items():  # one at a time, so a bad one is named
        cli = merge(cli, part, f"override {item!r}")
    _drop_foreign_model_keys(base, cli)
    for item, part in parts.items():
        base = merge(base, part, f"override {item!r}")
    return config_from_dict(resolved(base))


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
