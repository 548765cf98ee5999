"""What the probes share: a timed training step, the median of repeated calls, and a probe's
numbers (``.json``) written beside its report (``.md``).

The rest of a probe's kit is elsewhere: the command, commit and hardware a results file states
are :mod:`tnpx.provenance`'s, and one forward in a fresh process under a time and memory limit
is :func:`benchmarks.bench.measure`.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import tnpx


def train_step_ms(
    model: tnpx.NeuralProcess, optimizer: torch.optim.Optimizer, batch: tnpx.Batch
) -> float:
    """Wall time (ms) of one training step of ``model`` on ``batch``: forward and loss,
    backward, optimiser update."""
    start = time.perf_counter()
    loss = model.training_loss(batch)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return 1e3 * (time.perf_counter() - start)


def median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The median wall time (s) of ``repeats`` calls of ``fn``, and what its last call
    returned."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def write_results(stem: Path, data: Any, report: str, indent: int = 2) -> Path:
    """Write ``data`` to ``stem.json`` and ``report`` to ``stem.md`` (creating the folder);
    returns the report's path."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(data, indent=indent))
    stem.with_suffix(".md").write_text(report)
    return stem.with_suffix(".md")
