"""Experiment configs: a YAML file and ``section.key=value`` overrides, read
(:mod:`tnpx.config.experiment`) into typed dataclasses (:mod:`tnpx.config.sections`) and
checked (:mod:`tnpx.config.checks`), against the allowed values declared beside each field
(:mod:`tnpx.config.rules`), through OmegaConf (:mod:`tnpx.config.parsing`).

``from tnpx.config import load_config, ExperimentConfig, ConfigError`` is the way in.
"""

from .checks import check_components, check_keys, config_from_dict
from .experiment import config_from_yaml, config_to_yaml, load_config, read_yaml
from .rules import ConfigError
from .sections import (
    MODEL_KEYS,
    EvalConfig,
    ExperimentConfig,
    OptimConfig,
    ScheduleConfig,
    TrainConfig,
)

__all__ = [
    "MODEL_KEYS",
    "ConfigError",
    "EvalConfig",
    "ExperimentConfig",
    "OptimConfig",
    "ScheduleConfig",
    "TrainConfig",
    "check_components",
    "check_keys",
    "config_from_dict",
    "config_from_yaml",
    "config_to_yaml",
    "load_config",
    "read_yaml",
]
