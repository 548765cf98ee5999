"""A user's long table of many tasks for the ``table`` source's tests: noisy curves in no
particular order (one or two task columns, one or two inputs and outputs), the columns that
name them, a task's rows, and rows mapped as a sampler maps them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tnpx.data import SPLITS
from tnpx.data.table import TableSampler

SPLIT_NAMES = list(SPLITS)


def curves(
    n_tasks: int = 30,
    sizes: tuple[int, int] = (4, 25),
    two_keys: bool = False,
    dim_x: int = 1,
    dim_y: int = 1,
    seed: int = 0,
) -> pd.DataFrame:
    """A long table of noisy curves, one row per point, rows in no particular order: task
    column ``curve`` (or ``plate`` and ``well``), inputs ``t`` (``u``), outputs ``v`` (``w``)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(sizes[0], sizes[1] + 1, n_tasks)
    task = np.repeat(np.arange(n_tasks), n)
    frame = {}
    if two_keys:
        frame["plate"] = np.array(["A", "B", "C"])[task % 3]
        frame["well"] = task // 3
    else:
        frame["curve"] = np.array([f"c{i:02d}" for i in range(n_tasks)])[task]
    x = rng.uniform(-1, 11, (len(task), dim_x))  # distinct within a task (almost surely)
    for j, name in enumerate(["t", "u"][:dim_x]):
        frame[name] = x[:, j]
    phase = rng.uniform(0, 6, n_tasks)[task]
    for j, name in enumerate(["v", "w"][:dim_y]):
        frame[name] = 3 + (j + 1) * np.sin(x[:, 0] + phase) + 0.1 * rng.normal(size=len(task))
    return pd.DataFrame(frame).sample(frac=1, random_state=seed).reset_index(drop=True)


def columns(two_keys=False, dim_x=1, dim_y=1) -> dict:
    task = ["plate", "well"] if two_keys else "curve"
    return {"task": task, "x": ["t", "u"][:dim_x], "y": ["v", "w"][:dim_y]}


def key_of(row: pd.Series, task) -> object:
    return row[task] if isinstance(task, str) else tuple(row[c] for c in task)


def task_rows(frame: pd.DataFrame, task, key) -> pd.DataFrame:
    if isinstance(task, str):
        return frame[frame[task] == key]
    return frame[np.logical_and.reduce([frame[c] == k for c, k in zip(task, key)])]


def normalised(sampler: TableSampler, rows: pd.DataFrame) -> np.ndarray:
    """``rows``' inputs then outputs mapped as the sampler maps them, float32 ``[n, dx + dy]``."""
    norm = sampler.normalisation
    parts = []
    for side in ("x", "y"):
        values = rows[norm[side]["columns"]].to_numpy(np.float64)
        parts.append((values - norm[side]["loc"]) / norm[side]["scale"])
    return np.concatenate(parts, 1).astype(np.float32)


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text
