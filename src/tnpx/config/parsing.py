"""Reading YAML configs with OmegaConf, every failure a one-line :class:`ConfigError`.

YAML syntax errors, a file that is not a mapping, an override that does not parse, a value that
does not merge, an interpolation that does not resolve: each names the file or the override
instead of surfacing as a multi-line yaml / omegaconf traceback.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .rules import ConfigError


def load_yaml(path: Path) -> DictConfig:
    """One YAML file as a mapping; every way it can fail is a one-line ConfigError."""
    try:
        cfg = OmegaConf.load(path)
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {path} is not valid YAML: {_yaml_problem(err)}") from err
    except OSError as err:
        raise ConfigError(f"config file {path} cannot be read: {err.strerror}") from err
    except (UnicodeDecodeError, OmegaConfBaseException) as err:
        raise ConfigError(f"config file {path} cannot be read: {first_line(err)}") from err
    if not isinstance(cfg, DictConfig):
        raise ConfigError(
            f"config file {path} holds a {type(cfg).__name__.removesuffix('Config').lower()}; "
            "a config is a mapping of sections (model:, data:, train:, ...)"
        )
    return cfg


def _yaml_problem(err: yaml.YAMLError) -> str:
    """``line L, column C: problem`` from a YAML error (its own text spans several lines)."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or first_line(err)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem


def first_line(err: BaseException) -> str:
    """The first line of an error's message (its type's name if it has none)."""
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def merge(base: DictConfig, over, source: str) -> DictConfig:
    """``over`` merged over ``base``; ``source`` (a file, an override) names ``over``."""
    try:
        return OmegaConf.merge(base, over)
    except (OmegaConfBaseException, TypeError, ValueError) as err:
        raise ConfigError(f"{source} does not fit the config: {first_line(err)}") from err


def parse_override(item: str) -> DictConfig:
    """One ``section.key=value`` override (the value in YAML syntax)."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} is not of the form section.key=value")
    try:
        return OmegaConf.from_dotlist([item])
    except yaml.YAMLError as err:
        raise ConfigError(f"override {item!r} is not valid YAML: {_yaml_problem(err)}") from err
    except (OmegaConfBaseException, ValueError) as err:
        raise ConfigError(f"override {item!r} is not valid: {first_line(err)}") from err


def resolved(cfg: DictConfig) -> dict:
    """The plain dict of ``cfg``, with ``${...}`` interpolations resolved."""
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None)
        where = f"{key}: " if key else ""
        raise ConfigError(f"{where}{first_line(err)}") from err


def parse_text(text: object) -> DictConfig:
    """A config stored as YAML text (in a checkpoint, say)."""
    if not isinstance(text, str):
        raise ConfigError(f"a config is YAML text, got {type(text).__name__}")
    try:
        cfg = OmegaConf.create(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {_yaml_problem(err)}") from err
    except (OmegaConfBaseException, ValueError) as err:
        raise ConfigError(f"not valid: {first_line(err)}") from err
    if not isinstance(cfg, DictConfig):
        raise ConfigError("a config is a mapping of sections (model:, data:, train:, ...)")
    return cfg
