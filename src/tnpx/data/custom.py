"""A user's own task source, named in a config or registered from Python.

A source is any class that follows :class:`~tnpx.data.base.TaskSampler`: ``dim_x``, ``dim_y``,
``batch_size``, ``seed`` and ``sample(generator, batch_size=None) -> Batch``, drawing with
``generator`` only (so a batch is a function of the seed and the step), built as
``Source(config, batch_size=..., seed=...)``, its options a dataclass named by its class
attribute ``Config``. A config names it by where it lives, without registering anything:

    data: {name: my_sources.py:Sines, amplitude: 2.0}     # a file, relative to the working folder
    data: {name: mypackage.sources:Sines}                 # an importable module

and from Python :func:`register_sampler` gives it a short name. A file is loaded by its path
(``importlib``, nothing added to ``sys.path``). A config is checked for the name's form only:
the class is imported when a sampler is built (training, evaluation), so a checkpoint trained on
a user's source still predicts where that file is not at hand.

    >>> from dataclasses import dataclass
    >>> import torch
    >>> from tnpx.batch import Batch
    >>> from tnpx.data import TaskSampler, batch_at, build_sampler, register_sampler
    >>> @dataclass
    ... class SinesConfig:
    ...     amplitude: float = 1.0
    >>> class Sines(TaskSampler):
    ...     Config = SinesConfig
    ...     dim_x = dim_y = 1
    ...     def __init__(self, config=None, batch_size=16, seed=0):
    ...         self.config, self.batch_size, self.seed = config or SinesConfig(), batch_size, seed
    ...     def sample(self, generator, batch_size=None):
    ...         b = batch_size or self.batch_size
    ...         x = 4 * torch.rand(b, 40, 1, generator=generator) - 2
    ...         phase = 6 * torch.rand(b, 1, 1, generator=generator)
    ...         y = self.config.amplitude * torch.sin(3 * x + phase)
    ...         return Batch(x[:, :10], y[:, :10], x[:, 10:], y[:, 10:])
    >>> register_sampler("sines", Sines)
    >>> batch_at(build_sampler("sines", batch_size=4, amplitude=2.0), step=0).xt.shape
    torch.Size([4, 30, 1])
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from pathlib import Path

CUSTOM_SEPARATOR = ":"  # "FILE.py:Class" or "package.module:Class"
NEEDS = ("dim_x", "dim_y", "sample")


def is_custom_name(name: object) -> bool:
    """Whether ``name`` names a source by where it lives (``FILE.py:Class`` / ``module:Class``)."""
    return isinstance(name, str) and CUSTOM_SEPARATOR in name


def check_custom_name(name: str) -> str | None:
    """What is wrong with the form of a custom source's name, or None."""
    where, _, cls = name.rpartition(CUSTOM_SEPARATOR)
    if not where or not cls.isidentifier():
        return (
            f"data.name = {name!r}: a source of your own is named FILE.py:Class or "
            "package.module:Class"
        )
    return None


def load_custom(name: str) -> tuple[type, type]:
    """The class ``name`` points at and its ``Config`` dataclass.

    Raises:
        ValueError: the name's form, a missing file or module, a missing class, or a class
            that is not a task source (one line each).
    """
    problem = check_custom_name(name)
    if problem:
        raise ValueError(problem)
    where, _, cls_name = name.rpartition(CUSTOM_SEPARATOR)
    module = _module(where, name)
    if not hasattr(module, cls_name):
        raise ValueError(f"data.name = {name!r}: {where} has no {cls_name!r}")
    return checked_source(getattr(module, cls_name), name)


def checked_source(cls: object, name: str) -> tuple[type, type]:
    """``(cls, cls.Config)`` when ``cls`` is a task source class; a ``ValueError`` naming what
    it lacks otherwise."""
    if not isinstance(cls, type):
        raise ValueError(f"data source {name!r}: expected a class, got {type(cls).__name__}")
    missing = [attr for attr in NEEDS if not hasattr(cls, attr)]
    config = getattr(cls, "Config", None)
    if config is None or not dataclasses.is_dataclass(config):
        missing.append("Config (a dataclass of its options)")
    if missing:
        raise ValueError(
            f"data source {name!r} ({cls.__name__}) is not a task source: it lacks "
            f"{', '.join(missing)} (see tnpx.data.custom)"
        )
    return cls, config


def _module(where: str, name: str):
    """The module ``where`` names: a ``.py`` file (by path) or an importable module."""
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"data.name = {name!r}: no file {path} (from {Path.cwd()})")
        spec = importlib.util.spec_from_file_location(f"tnpx_user_source_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # the user's own code: its errors are theirs to read
        return module
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as err:
        raise ValueError(f"data.name = {name!r}: cannot import {where} ({err})") from None
