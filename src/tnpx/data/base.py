"""The task-sampler protocol and the seeding rule that makes every batch reproducible.

A batch is a pure function of ``(seed, split, step, rank)``: a run is reproducible from its
config, the processes of a multi-process run see different tasks, a resumed run sees exactly
the tasks it would have seen, and validation/test tasks never overlap the training stream.
"""

from __future__ import annotations

import math
from typing import ClassVar, Protocol

import numpy as np
import torch

from ..batch import Batch

SPLITS = {"train": 0, "val": 1, "test": 2}


def task_generator(seed: int, split: str, step: int, rank: int = 0) -> torch.Generator:
    """A ``torch.Generator`` seeded from ``(seed, split, step, rank)`` through NumPy's
    ``SeedSequence``, so nearby integers give statistically independent streams."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    state = np.random.SeedSequence([seed, SPLITS[split], step, rank]).generate_state(1, np.uint64)
    return torch.Generator().manual_seed(int(state[0]) & (2**63 - 1))


class TaskSampler(Protocol):
    """What training and evaluation need from a data source.

    A source of a fixed set of tasks (a user's table) holds out whole tasks for validation and
    test: it sets the class attribute ``splits_tasks = True`` and takes the split by keyword,
    ``sample(generator, batch_size, split=...)`` with ``split`` one of ``SPLITS``;
    :func:`batch_at` passes it. A source that draws fresh tasks every time (a prior) leaves it
    False: its splits differ by their seeds alone.
    """

    dim_x: int
    dim_y: int
    seed: int
    batch_size: int
    splits_tasks: ClassVar[bool] = False
    # True: a model trained on this source centres each task's outputs unless its config says
    # otherwise (tnpx.config.source_defaults: the grid source, whose levels drift between tasks)
    centres_outputs_by_default: ClassVar[bool] = False

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        """Draw one batch of tasks using only ``generator`` for randomness (with
        ``splits_tasks``, also a keyword ``split``: the tasks of that split only)."""
        ...

    @property
    def input_domain(self) -> tuple[float, float] | None:
        """``(low, high)``: the box the context inputs are drawn from, the same on every input
        axis, any shift included (what a trained model knows as its inputs' range). None by
        default: this sampler has no box of inputs."""
        return None


def states_input_domain(sampler_class: type) -> bool:
    """Whether a sampler class states a box of inputs: it overrides
    :attr:`TaskSampler.input_domain` (a class that does not subclass the protocol has none)."""
    stated = getattr(sampler_class, "input_domain", None)
    return isinstance(stated, property) and stated is not TaskSampler.input_domain


def batch_at(
    sampler: TaskSampler,
    step: int,
    rank: int = 0,
    split: str = "train",
    batch_size: int | None = None,
) -> Batch:
    """The batch a sampler yields at ``step`` for process ``rank`` of ``split``."""
    generator = task_generator(sampler.seed, split, step, rank)
    if getattr(sampler, "splits_tasks", False):  # a sampler outside the protocol has none
        return sampler.sample(generator, batch_size, split=split)
    return sampler.sample(generator, batch_size)


def uniform(generator: torch.Generator, shape: tuple[int, ...], low, high) -> torch.Tensor:
    """``U(low, high)`` samples in float64 (``low``/``high`` scalars or broadcastable)."""
    u = torch.rand(shape, generator=generator, dtype=torch.float64)
    return low + (high - low) * u


def randint(generator: torch.Generator, low: int, high: int) -> int:
    """One integer uniform on ``{low, ..., high}`` (inclusive)."""
    return int(torch.randint(low, high + 1, (1,), generator=generator).item())


CONTEXT_SIZE_RULES = ("uniform", "log-uniform")


def context_size(generator: torch.Generator, low: int, high: int, rule: str = "uniform") -> int:
    """``n_ctx`` on ``{low, ..., high}``: ``uniform``, or ``log-uniform`` (``P(k)`` proportional
    to ``log((k + 1) / k)``: each octave ``n..2n`` alike, so few-point contexts are common): the
    floor of ``exp(U(log low, log(high + 1)))``, so the end points get their full share
    (rounding would halve theirs). Log-uniform needs ``low >= 1``."""
    if rule == "uniform":  # the draw every config made before the option
        return randint(generator, low, high)
    log_n = uniform(generator, (1,), math.log(low), math.log(high + 1)).exp()
    return min(max(int(log_n.floor().item()), low), high)  # exp's rounding
