"""Which held-out tasks are not independent, for a standard error that respects the split unit.

A user's test tasks are drawn again and again from a few held-out units: 1,024 windows cut from
12 test months, the same test curve with other context points in every batch. Their scores are
not independent, so the s.e. over tasks understates the noise. :func:`cluster_rule` names each
task's cluster, the unit the data source holds out:

* ``grid``: blocks of the split dim (``split_dim``; ``time`` when the grid has it, else its
  first dim, as the default split cuts), each as long as the window along it: every test
  window starting in one block (one month for one-month windows) is one unit. With
  ``val_select`` / ``test_select`` boxes the same blocks are used inside the box.
* ``table``: the task (one curve, however often it is drawn); with ``split_by: region`` the
  tasks of one region are still counted apart, which the rule's words say.
* ``stations``: the day of a task keyed by a date (its time step or window), else the task.
* any other source: the test batch (the guide's second s.e.): batches are assumed independent.

:func:`clustered_se` is the cluster-robust standard error of the mean over tasks
(:func:`tnpx.evaluation.protocol.clustered_mean_se`): the estimate stays the mean over tasks the
table reports, and for clusters of equal size the s.e. is exactly the standard error over the
cluster means. It was chosen over a block bootstrap because it is deterministic, needs no
resampling, and its float64 formula can be checked by hand; like any cluster estimate it
assumes the clusters themselves independent (neighbouring months are not quite) and is itself
noisy with few clusters (under 10: read it as a rough size).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ..batch import Batch
from ..data import TaskSampler
from .protocol import clustered_mean_se


@dataclass
class ClusterRule:
    """``labels(batch, i)``: ``[tasks]`` cluster names of test batch ``i``'s tasks; ``unit``:
    what one cluster is and what the s.e. over them assumes, in words for the report."""

    unit: str
    labels: Callable[[Batch, int], list[str]]


def cluster_rule(sampler: TaskSampler) -> ClusterRule:
    """The split unit of ``sampler``'s test tasks (module docstring)."""
    name = type(sampler).__name__
    if name == "GridSampler":
        return _grid_rule(sampler)
    if name == "StationsSampler":
        return _stations_rule(sampler)
    if name == "TableSampler":
        keys = sampler.task_keys("test")
        unit = "test task (every draw of one task is one unit"
        if getattr(sampler.table_config, "split_by", "task") == "region":
            unit += "; tasks of one held-out region are still counted apart"
        return ClusterRule(unit + ")", lambda b, i: [str(keys[k]) for k in b.info["task"].tolist()])
    return ClusterRule(
        "test batch (the source names no split unit: batches assumed independent)",
        lambda b, i: [f"batch {i}"] * b.xc.shape[0],
    )


def _grid_rule(sampler) -> ClusterRule:
    """Blocks of the split dim, a window long (module docstring)."""
    c, dims = sampler.config, sampler.data.dims
    boxes = c.val_select or c.test_select
    dim = ("time" if "time" in dims else dims[0]) if boxes or not c.split_dim else c.split_dim
    d, width = dims.index(dim), sampler.window[dims.index(dim)]
    unit = (
        f"{dim!r} block of {width} point{'s' * (width > 1)} (test windows starting in one block "
        "are one unit; blocks assumed independent)"
    )
    return ClusterRule(
        unit, lambda b, i: [str(o) for o in (b.info["origin_index"][:, d] // width).tolist()]
    )


def _stations_rule(sampler) -> ClusterRule:
    """A task keyed by a date counts by its day; a numeric key is its own unit."""
    keys = [str(k) for k in sampler.task_keys("test")]
    dated = all(len(k) >= 10 and k[4] == "-" and k[7] == "-" for k in keys)
    days = [k[:10] if dated else k for k in keys]
    unit = "day of the test tasks" if dated else "test task (its time step or window)"
    return ClusterRule(
        f"{unit}; assumed independent", lambda b, i: [days[k] for k in b.info["task"].tolist()]
    )


def clustered_se(values: np.ndarray, labels: np.ndarray) -> tuple[float, float, int]:
    """``(mean, s.e., clusters)``: the mean over tasks of ``values [tasks]`` and its
    cluster-robust s.e. with the tasks of one ``labels [tasks]`` value as one unit (NaN values
    left out; s.e. NaN with fewer than two clusters)."""
    values, labels = np.asarray(values, dtype=np.float64), np.asarray(labels)
    keep = ~np.isnan(values)
    values, labels = values[keep], labels[keep]
    if not len(values):
        return float("nan"), float("nan"), 0
    names, group = np.unique(labels, return_inverse=True)
    groups = [torch.from_numpy(values[group == g]) for g in range(len(names))]
    mean, se = clustered_mean_se(groups)
    return mean, se, len(names)
