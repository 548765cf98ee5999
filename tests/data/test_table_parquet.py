"""The ``table`` source reads Parquet (``.parquet`` or ``.pq``, the ``parquet`` extra's pyarrow)
into the same tasks and batches as the same table in CSV; a file that is not Parquet, or a
missing engine, is one line naming the file (and the extra to install)."""

from __future__ import annotations

import sys
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
import torch

from tnpx.data import SPLITS, batch_at, build_sampler
from tnpx.user_files import DataError

pytest.importorskip("pyarrow", reason="Parquet needs pyarrow: pip install 'tnpx[parquet]'")

COLUMNS = {"task": ["plate", "well"], "x": ["t", "u"], "y": ["v"]}


def growth_table(n_tasks: int = 24, seed: int = 0) -> pd.DataFrame:
    """A long table, one row a point: tasks keyed by a string and an integer column, two
    float inputs (one with values near 1e5, where a lossy copy would show) and one output."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 15, n_tasks)
    task = np.repeat(np.arange(n_tasks), sizes)
    t = rng.uniform(0, 10, len(task))
    return pd.DataFrame(
        {
            "plate": np.array(["A", "B", "C"])[task % 3],
            "well": task // 3,
            "t": t,
            "u": 1e5 + rng.normal(size=len(task)),
            "v": np.sin(t + task) + 0.1 * rng.normal(size=len(task)),
        }
    )


def same(a, b) -> bool:
    """Equal values: tensors element for element, dicts entry by entry (a batch's info)."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def sampler_of(path):
    return build_sampler("table", 4, 0, path=str(path), **COLUMNS)


@pytest.mark.parametrize("suffix", [".parquet", ".pq", ".PQ"])
def test_parquet_gives_the_tasks_and_batches_of_the_same_csv(tmp_path, suffix):
    frame = growth_table()
    frame.to_csv(tmp_path / "table.csv", index=False)
    frame.to_parquet(tmp_path / f"table{suffix}")
    csv, parquet = sampler_of(tmp_path / "table.csv"), sampler_of(tmp_path / f"table{suffix}")
    assert parquet.normalisation == csv.normalisation
    for split in SPLITS:
        assert parquet.task_keys(split) == csv.task_keys(split)
        for step in range(3):
            a, b = batch_at(csv, step, split=split), batch_at(parquet, step, split=split)
            for field in fields(a):
                assert same(getattr(a, field.name), getattr(b, field.name)), (split, field.name)


def test_a_file_that_is_not_parquet_is_one_line_naming_it(tmp_path):
    path = tmp_path / "table.pq"
    path.write_bytes(b"a,b\n1,2\n")  # CSV bytes under a Parquet name
    with pytest.raises(DataError, match="cannot read the Parquet file") as err:
        sampler_of(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DataError, match="no such file"):
        sampler_of(tmp_path / "missing.parquet")


def test_without_an_engine_the_error_names_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "table.parquet"
    growth_table().to_parquet(path)
    for name in ("pyarrow", "pyarrow.parquet", "fastparquet"):  # as if not installed
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(DataError, match=r"pip install 'tnpx\[parquet\]'") as err:
        sampler_of(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
