"""The ``table`` task source (tnpx.data.table): a user's long table read (CSV, Parquet, a
DataFrame), split by whole task and normalised on the training tasks; batches of real rows
padded with masks. Scores over real targets: ``test_table_scores.py``; bad data named in one
line: ``test_table_errors.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.table_curves import (
    SPLIT_NAMES,
    columns,
    curves,
    key_of,
    normalised,
    one_line,
    task_rows,
)
from tnpx.data import batch_at, build_sampler, task_generator
from tnpx.data.table import TableSampler
from tnpx.user_files import DataError

# --- reading ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet", "frame"])
@pytest.mark.parametrize(
    "two_keys, dim_x, dim_y", [(False, 1, 1), (True, 1, 2), (False, 2, 1), (True, 2, 2)]
)
def test_reads_csv_parquet_and_frames(tmp_path, fmt, two_keys, dim_x, dim_y):
    frame = curves(two_keys=two_keys, dim_x=dim_x, dim_y=dim_y)
    cols = columns(two_keys, dim_x, dim_y)
    if fmt == "frame":
        sampler = TableSampler.from_frame(frame, batch_size=4, **cols)
    else:
        if fmt == "parquet":
            pytest.importorskip("pyarrow")
        path = tmp_path / f"table.{fmt}"
        frame.to_csv(path, index=False) if fmt == "csv" else frame.to_parquet(path)
        sampler = build_sampler("table", 4, 0, path=str(path), **cols)
    assert (sampler.dim_x, sampler.dim_y) == (dim_x, dim_y)
    keys = {key_of(row, cols["task"]) for _, row in frame.iterrows()}
    held = [k for split in SPLIT_NAMES for k in sampler.task_keys(split)]
    assert sorted(held) == sorted(keys)  # every task, once
    batch = batch_at(sampler, 0)
    assert batch.xc.shape[::2] == (4, dim_x) and batch.yt.shape[::2] == (4, dim_y)
    assert batch.xc.dtype == torch.float32


def test_parquet_without_an_engine_says_what_to_install(tmp_path):
    path = tmp_path / "table.parquet"
    path.write_bytes(b"not parquet")
    with pytest.raises(DataError) as err:
        build_sampler("table", path=str(path), task="curve", x=["t"], y=["v"])
    text = one_line(err)
    assert str(path) in text
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert "pyarrow" in text
    else:
        assert "cannot read the Parquet file" in text


# --- splits and normalisation ----------------------------------------------------------------


def test_splits_hold_out_whole_tasks_deterministically():
    frame = curves(n_tasks=50)
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["v"], val_fraction=0.2)
    keys = {s: sampler.task_keys(s) for s in SPLIT_NAMES}
    assert (len(keys["val"]), len(keys["test"]), len(keys["train"])) == (10, 5, 35)
    for a in SPLIT_NAMES:
        for b in SPLIT_NAMES:
            assert a == b or not set(keys[a]) & set(keys[b]), (a, b)
    # the same split whatever the sampler's seed, the rows' order or the batch size...
    shuffled = frame.sample(frac=1, random_state=5)
    again = TableSampler.from_frame(
        shuffled, batch_size=3, seed=9, task="curve", x=["t"], y=["v"], val_fraction=0.2
    )
    assert {s: again.task_keys(s) for s in SPLIT_NAMES} == keys
    # ... and another with another split_seed
    other = TableSampler.from_frame(
        frame, task="curve", x=["t"], y=["v"], val_fraction=0.2, split_seed=1
    )
    assert other.task_keys("test") != keys["test"]
    # batches of a split hold its tasks only
    for split in SPLIT_NAMES:
        for step in range(5):
            batch = batch_at(sampler, step, split=split)
            assert batch.info["task"].max() < len(keys[split])


def test_normalisation_is_fitted_on_the_training_tasks_only():
    frame = curves(n_tasks=40, dim_x=2, dim_y=2)
    cols = columns(False, 2, 2)
    sampler = TableSampler.from_frame(frame, **cols)
    train = frame[frame["curve"].isin(sampler.task_keys("train"))]
    norm = sampler.normalisation
    for side in ("x", "y"):
        values = train[cols[side]].to_numpy(np.float64)
        assert norm[side]["columns"] == cols[side]
        np.testing.assert_allclose(norm[side]["loc"], values.mean(0), rtol=1e-12)
        np.testing.assert_allclose(norm[side]["scale"], values.std(0), rtol=1e-12)
        whole = frame[cols[side]].to_numpy(np.float64)
        assert not np.allclose(norm[side]["loc"], whole.mean(0), rtol=1e-6)  # not every row's
    plain = TableSampler.from_frame(frame, normalise=False, **cols)
    assert plain.normalisation["x"]["loc"] == [0.0, 0.0]
    assert plain.normalisation["y"]["scale"] == [1.0, 1.0]


# --- batches ---------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{}, {"min_ctx": 3, "max_ctx": 8, "max_tgt": 6}])
@pytest.mark.parametrize("split", SPLIT_NAMES)
def test_batches_hold_real_rows_split_into_context_and_target(options, split):
    frame = curves(n_tasks=60, two_keys=True, dim_y=2)
    cols = columns(True, 1, 2)
    sampler = TableSampler.from_frame(frame, batch_size=6, **cols, **options)
    lo, hi = sampler.config.ctx_fraction
    min_ctx, max_ctx = options.get("min_ctx", 1), options.get("max_ctx", 10**9)
    for step in range(4):
        batch = batch_at(sampler, step, split=split)
        b = batch.batch_size
        mask_c = (
            torch.ones(batch.xc.shape[:2], dtype=torch.bool)
            if batch.mask_c is None
            else batch.mask_c
        )
        mask_t = (
            torch.ones(batch.xt.shape[:2], dtype=torch.bool)
            if batch.mask_t is None
            else batch.mask_t
        )
        assert b == 6 and batch.yc.shape[-1] == 2
        assert mask_c.shape == batch.xc.shape[:2] and mask_t.shape == batch.xt.shape[:2]
        assert len(set(batch.info["task"].tolist())) == b  # distinct tasks
        for i in range(b):
            key = sampler.task_keys(split)[int(batch.info["task"][i])]
            rows = normalised(sampler, task_rows(frame, cols["task"], key))
            n, n_ctx, n_tgt = len(rows), int(mask_c[i].sum()), int(mask_t[i].sum())
            # real points first, padding after and zero
            assert mask_c[i, :n_ctx].all() and mask_t[i, :n_tgt].all()
            assert (batch.xc[i, n_ctx:] == 0).all() and (batch.yt[i, n_tgt:] == 0).all()
            ctx = torch.cat([batch.xc[i, :n_ctx], batch.yc[i, :n_ctx]], 1).numpy()
            tgt = torch.cat([batch.xt[i, :n_tgt], batch.yt[i, :n_tgt]], 1).numpy()
            table = {tuple(r) for r in rows}
            points = [tuple(r) for r in np.concatenate([ctx, tgt])]
            assert set(points) <= table  # every point a row of its task ...
            assert len(set(points)) == len(points)  # ... each once: context and target disjoint
            assert min_ctx <= n_ctx <= min(n - 1, max_ctx)
            clipped = n_ctx in (min_ctx, n - 1, max_ctx)
            assert clipped or lo * n - 0.5 <= n_ctx <= hi * n + 0.5
            assert n_tgt == min(n - n_ctx, options.get("max_tgt", n))


@pytest.mark.parametrize(
    "fraction, options, expected",
    [
        ([1.0, 1.0], {}, lambda n: (n - 1, 1)),  # every point but one target
        ([0.0, 0.0], {"min_ctx": 2}, lambda n: (2, n - 2)),
        ([1.0, 1.0], {"max_ctx": 3, "max_tgt": 2}, lambda n: (3, 2)),
    ],
)
def test_context_counts_are_clipped(fraction, options, expected):
    frame = curves(n_tasks=30, sizes=(5, 9))
    sampler = TableSampler.from_frame(
        frame, task="curve", x=["t"], y=["v"], ctx_fraction=fraction, batch_size=8, **options
    )
    batch = batch_at(sampler, 0)
    for i, task in enumerate(batch.info["task"].tolist()):
        n = len(task_rows(frame, "curve", sampler.task_keys("train")[task]))
        n_ctx = batch.xc.shape[1] if batch.mask_c is None else int(batch.mask_c[i].sum())
        n_tgt = batch.xt.shape[1] if batch.mask_t is None else int(batch.mask_t[i].sum())
        assert (n_ctx, n_tgt) == expected(n)


def test_context_is_a_random_subset_of_each_task():
    # rows written sorted by input: the context must not be the first rows of a task
    frame = curves(n_tasks=30, sizes=(10, 20)).sort_values(["curve", "t"])
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["v"], batch_size=8)
    quantiles = []
    for step in range(30):
        batch = batch_at(sampler, step)
        for i, task in enumerate(batch.info["task"].tolist()):
            key = sampler.task_keys("train")[task]
            xs = np.sort(normalised(sampler, task_rows(frame, "curve", key))[:, 0])
            n_ctx = int(batch.mask_c[i].sum()) if batch.mask_c is not None else batch.xc.shape[1]
            ranks = np.searchsorted(xs, batch.xc[i, :n_ctx, 0].numpy())
            quantiles += list(ranks / (len(xs) - 1))
    assert abs(np.mean(quantiles) - 0.5) < 0.03  # sorted or first-rows contexts sit near 0.3


def test_batches_are_reproducible_and_differ_by_step():
    sampler = TableSampler.from_frame(curves(), task="curve", x=["t"], y=["v"], batch_size=4)
    a, b = batch_at(sampler, 3, split="val"), batch_at(sampler, 3, split="val")
    for name in ("xc", "yc", "xt", "yt", "mask_c", "mask_t"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    direct = sampler.sample(task_generator(0, "val", 3, 0), split="val")
    assert torch.equal(a.yt, direct.yt) and torch.equal(a.info["task"], direct.info["task"])
    c = batch_at(sampler, 4, split="val")
    assert c.xc.shape != a.xc.shape or not torch.equal(c.xc, a.xc)


def test_tasks_of_equal_size_need_no_masks():
    frame = curves(n_tasks=20, sizes=(12, 12))
    sampler = TableSampler.from_frame(
        frame, task="curve", x=["t"], y=["v"], ctx_fraction=[0.5, 0.5], batch_size=5
    )
    batch = batch_at(sampler, 0)
    assert batch.mask_c is None and batch.mask_t is None
    assert batch.xc.shape == (5, 6, 1) and batch.xt.shape == (5, 6, 1)


def test_more_tasks_asked_than_a_split_holds_repeats_none_before_all_are_used():
    sampler = TableSampler.from_frame(curves(n_tasks=20), task="curve", x=["t"], y=["v"])
    tasks = batch_at(sampler, 0, split="test", batch_size=5).info["task"]  # the test split: 2
    assert sorted(tasks[:2].tolist()) == [0, 1] and sorted(tasks[2:4].tolist()) == [0, 1]
