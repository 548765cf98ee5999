"""Task samplers. ``build_sampler(name, batch_size, seed, **options)`` builds one by name: a
built-in, one given a name by :func:`register_sampler`, or a user's class named by where it lives
(``FILE.py:Class``, ``module:Class``; :mod:`tnpx.data.custom`)."""

from __future__ import annotations

from dataclasses import fields

from .base import SPLITS, TaskSampler, batch_at, task_generator
from .custom import checked_source, is_custom_name, load_custom
from .era5 import ERA5Config, ERA5Sampler
from .grid import GridConfig, GridSampler
from .images import ImageConfig, ImageSampler
from .kolmogorov import KolmogorovConfig, KolmogorovSampler
from .stations import StationsConfig, StationsSampler
from .synthetic import (
    CompositeGPConfig,
    CompositeGPSampler,
    GP2DCompositeConfig,
    GP2DCompositeSampler,
    GPConfig,
    GPSampler,
    LinkPriorConfig,
    LinkPriorSampler,
    SawtoothConfig,
    SawtoothSampler,
)
from .table import TableConfig, TableSampler

SAMPLERS = {
    "gp": (GPSampler, GPConfig),
    "gp-composite": (CompositeGPSampler, CompositeGPConfig),
    "gp2d-composite": (GP2DCompositeSampler, GP2DCompositeConfig),
    "gp-link": (LinkPriorSampler, LinkPriorConfig),
    "sawtooth": (SawtoothSampler, SawtoothConfig),
    "image": (ImageSampler, ImageConfig),
    "kolmogorov": (KolmogorovSampler, KolmogorovConfig),
    "era5": (ERA5Sampler, ERA5Config),
    "table": (TableSampler, TableConfig),
    "grid": (GridSampler, GridConfig),
    "stations": (StationsSampler, StationsConfig),
}


def sampler_options(name: str) -> list[str]:
    """The option names the sampler ``name`` accepts."""
    return [f.name for f in fields(_lookup(name)[1])]


def build_sampler(name: str, batch_size: int = 16, seed: int = 0, **options) -> TaskSampler:
    """Build the sampler ``name`` (one of ``SAMPLERS``) with config ``options``."""
    cls, config_cls = _lookup(name)
    valid = sampler_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(
            f"unknown option(s) {unknown} for data sampler {name!r}; valid: {', '.join(valid)}"
        )
    return cls(config_cls(**options), batch_size=batch_size, seed=seed)


def register_sampler(name: str, sampler_class: type) -> None:
    """Give a task source class of your own (:mod:`tnpx.data.custom`: the ``TaskSampler``
    protocol and a ``Config`` dataclass) a name that configs and :func:`build_sampler` take.

    Raises:
        ValueError: ``name`` is a built-in's or has the ``FILE:Class`` form, or the class is not
            a task source.
    """
    if name in SAMPLERS and SAMPLERS[name][0] is not sampler_class:
        raise ValueError(f"data sampler {name!r} exists already; choose another name")
    if is_custom_name(name):
        raise ValueError(f"{name!r}: a registered name cannot hold ':' (that names a file)")
    SAMPLERS[name] = checked_source(sampler_class, name)


def _lookup(name: str):
    if is_custom_name(name):
        return load_custom(name)
    if name not in SAMPLERS:
        raise ValueError(f"unknown data sampler {name!r}; choose from {', '.join(SAMPLERS)}")
    return SAMPLERS[name]


__all__ = [
    "SAMPLERS",
    "SPLITS",
    "Batch",
    "CompositeGPConfig",
    "CompositeGPSampler",
    "ERA5Config",
    "ERA5Sampler",
    "GP2DCompositeConfig",
    "GP2DCompositeSampler",
    "GPConfig",
    "GPSampler",
    "GridConfig",
    "GridSampler",
    "ImageConfig",
    "ImageSampler",
    "KolmogorovConfig",
    "KolmogorovSampler",
    "LinkPriorConfig",
    "LinkPriorSampler",
    "SawtoothConfig",
    "SawtoothSampler",
    "StationsConfig",
    "StationsSampler",
    "TableConfig",
    "TableSampler",
    "TaskSampler",
    "batch_at",
    "build_sampler",
    "register_sampler",
    "sampler_options",
    "task_generator",
]
from ..batch import Batch  # noqa: E402  (re-export for convenience)
