"""The ``table`` task source (tnpx.data.table): a user's long table read, checked, split by
whole task and normalised on the training tasks; batches of real rows padded with masks;
scores over real targets only; bad data named in one line. Also the split-aware sampling
hook of ``batch_at`` and ``Batch.mask_t``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from conftest import ALL_MODELS, small_model
from tnpx.batch import Batch, target_mean
from tnpx.data import SPLITS, batch_at, build_sampler, task_generator
from tnpx.data.table import TableSampler
from tnpx.data.user_files import DataError
from tnpx.evaluation.protocol import Z95, evaluate

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


# --- scores over real targets ----------------------------------------------------------------


def _unpadded(batch: Batch, i: int) -> Batch:
    """Task ``i`` of ``batch`` alone, without padding."""
    nc = batch.xc.shape[1] if batch.mask_c is None else int(batch.mask_c[i].sum())
    nt = batch.xt.shape[1] if batch.mask_t is None else int(batch.mask_t[i].sum())
    task = slice(i, i + 1)
    return Batch(batch.xc[task, :nc], batch.yc[task, :nc], batch.xt[task, :nt], batch.yt[task, :nt])


def _tiny_tnp():
    torch.manual_seed(0)
    return tnpx.build_model(
        "tnp", 1, 1, dim_model=16, n_layers=1, n_heads=2, dim_head=8, dim_ff=16
    ).eval()


def test_masked_ll_equals_the_ll_of_each_task_alone():
    sampler = TableSampler.from_frame(curves(), task="curve", x=["t"], y=["v"], batch_size=6)
    batch = batch_at(sampler, 1)
    assert batch.mask_c is not None and batch.mask_t is not None
    model = _tiny_tnp()
    with torch.no_grad():
        ll = model.log_likelihood(batch)
        alone = torch.cat([model.log_likelihood(_unpadded(batch, i)) for i in range(6)])
        torch.testing.assert_close(ll, alone, rtol=1e-5, atol=1e-5)
        # padded targets' values count nowhere, NaN included
        garbage = batch.yt.masked_fill(~batch.mask_t[..., None], float("nan"))
        padded = Batch(batch.xc, batch.yc, batch.xt, garbage, batch.mask_c, {}, batch.mask_t)
        torch.testing.assert_close(model.log_likelihood(padded), ll)
    loss = model.training_loss(batch)
    torch.testing.assert_close(loss, -ll.mean())


def test_evaluate_scores_real_targets_only():
    frame = curves(n_tasks=60)
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["v"], batch_size=4)
    model = _tiny_tnp()
    metrics = evaluate(model, sampler, n_batches=2)
    lls, covered = [], []
    with torch.no_grad():
        for step in range(2):
            batch = batch_at(sampler, step, split="test")
            for i in range(batch.batch_size):
                task = _unpadded(batch, i)
                pred = model.predict_batch(task)
                lls.append(model.log_likelihood(task, pred))
                inside = (task.yt - pred.mean).abs() <= Z95 * pred.stddev
                covered.append(inside.float().mean())
    assert metrics.n_tasks == 8
    assert metrics.ll == pytest.approx(torch.cat(lls).double().mean().item(), abs=1e-5)
    assert metrics.coverage95 == pytest.approx(torch.stack(covered).mean().item(), abs=1e-6)
    assert metrics.oracle_ll is None


def test_target_mean_checks_its_mask():
    values = torch.arange(6.0).reshape(2, 3)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    torch.testing.assert_close(target_mean(values, mask), torch.tensor([0.5, 3.0]))
    torch.testing.assert_close(target_mean(values, None), values.mean(-1))
    with pytest.raises(ValueError, match="bool"):
        target_mean(values, mask.float())
    with pytest.raises(ValueError, match="shape"):
        target_mean(values, mask[:, :2])
    with pytest.raises(ValueError, match="task 1 has no real target"):
        target_mean(values, torch.tensor([[True, True, False], [False, False, False]]))


@pytest.mark.parametrize("name", [m for m in ALL_MODELS if m != "gp-oracle"])
def test_every_model_honours_target_masks_or_refuses_them(name):
    frame = curves(n_tasks=30, sizes=(5, 9))
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["v"], batch_size=3)
    batch = batch_at(sampler, 0)
    assert batch.mask_t is not None and not batch.mask_t.all()
    pad = ~batch.mask_t[..., None]  # padded targets moved far off
    xt, yt = batch.xt.masked_fill(pad, 4.0), batch.yt.masked_fill(pad, 50.0)
    garbage = Batch(batch.xc, batch.yc, xt, yt, batch.mask_c, {}, batch.mask_t)
    model = small_model(name)
    for score in ("log_likelihood", "training_loss"):
        results = []
        for b in (batch, garbage):
            torch.manual_seed(0)
            try:
                with torch.no_grad():
                    results.append(getattr(model, score)(b))
            except ValueError as err:
                assert "does not support target masks" in str(err), err
                break
        else:
            torch.testing.assert_close(results[0], results[1], msg=f"{name}.{score}")


# --- split-aware sampling leaves other samplers as they were -----------------------------------


def test_batch_at_passes_the_split_only_to_samplers_that_split_tasks():
    gp = build_sampler("gp", batch_size=3, seed=4)
    for split in SPLIT_NAMES:
        direct = gp.sample(task_generator(4, split, 2, 1), None)
        via = batch_at(gp, 2, rank=1, split=split)
        for name in ("xc", "yc", "xt", "yt"):
            assert torch.equal(getattr(direct, name), getattr(via, name))
        assert via.mask_t is None and via.mask_c is None

    class Splitting:
        splits_tasks, dim_x, dim_y, seed, batch_size = True, 1, 1, 0, 1

        def sample(self, generator, batch_size=None, split="train"):
            return split

    assert batch_at(Splitting(), 0, split="test") == "test"


def test_batch_moves_and_selects_carry_the_target_mask():
    sampler = TableSampler.from_frame(curves(), task="curve", x=["t"], y=["v"], batch_size=4)
    batch = batch_at(sampler, 0)
    assert torch.equal(batch.to("cpu").mask_t, batch.mask_t)
    assert torch.equal(batch.select(slice(1, 3)).mask_t, batch.mask_t[1:3])


# --- bad data: one line naming the file, the column and the task ------------------------------


def _write(tmp_path, frame: pd.DataFrame) -> str:
    path = tmp_path / "growth.csv"
    frame.to_csv(path, index=False)
    return str(path)


def _load(path, **options):
    return build_sampler("table", **{"task": "curve", "x": ["t"], "y": ["v"], **options}, path=path)


def _bad(tmp_path, frame, **options) -> str:
    path = _write(tmp_path, frame)
    with pytest.raises(DataError) as err:
        _load(path, **options)
    text = one_line(err)
    assert path in text
    return text


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DataError) as err:
        _load(str(tmp_path / "nowhere.csv"))
    assert "nowhere.csv" in one_line(err) and "no such file" in str(err.value)


def test_a_missing_column_lists_the_tables_columns(tmp_path):
    text = _bad(tmp_path, curves(), y=["od"])
    assert "'od'" in text and "'curve', 't', 'v'" in text


@pytest.mark.parametrize("col", ["t", "v"])
def test_a_value_that_is_not_a_number_is_named_with_its_row(tmp_path, col):
    frame = curves()
    frame[col] = frame[col].astype(object)
    frame.loc[7, col] = "n/a?"
    text = _bad(tmp_path, frame)
    assert f"column {col!r}" in text and "'n/a?'" in text and "data row 8" in text


def test_a_constant_output_is_an_error(tmp_path):
    frame = curves()
    frame["v"] = 2.5
    text = _bad(tmp_path, frame)
    assert "column 'v'" in text and "2.5" in text and "never changes" in text


def test_an_output_without_any_value_is_an_error(tmp_path):
    frame = curves()
    frame["v"] = np.nan
    text = _bad(tmp_path, frame)
    assert "column 'v'" in text and "every value is missing" in text


@pytest.mark.parametrize("col", ["t", "v"])
def test_missing_values_are_named_by_column_task_and_count(tmp_path, col):
    frame = curves()
    rows = [frame.index[frame["curve"] == "c04"][1], frame.index[frame["curve"] == "c09"][0]]
    frame.loc[rows, col] = np.nan
    text = _bad(tmp_path, frame)
    assert f"column {col!r}" in text and "2 missing value(s) in 2 task(s)" in text
    first = min(rows)  # the rows' positions: the frame's index is 0, 1, ...
    assert f"task curve={frame.loc[first, 'curve']!r} (data row {first + 1})" in text
    assert "not supported yet" in text


def test_a_missing_task_id_is_an_error(tmp_path):
    frame = curves()
    frame.loc[3, "curve"] = np.nan
    text = _bad(tmp_path, frame)
    assert "column 'curve'" in text and "missing task id" in text and "data row 4" in text


def test_duplicate_rows_are_counted_and_the_first_task_named(tmp_path):
    frame = curves()
    repeats = frame[frame["curve"] == "c05"].iloc[:2]
    frame = pd.concat([frame, repeats], ignore_index=True)
    text = _bad(tmp_path, frame)
    assert "2 row(s) repeat the inputs 't'" in text and "curve='c05'" in text


def test_too_few_tasks_for_the_held_out_splits(tmp_path):
    text = _bad(tmp_path, curves(n_tasks=4))
    assert "4 usable task(s)" in text and "val_fraction=0.1, test_fraction=0.1" in text
    text = _bad(tmp_path, curves(n_tasks=4), val_fraction=0.5, test_fraction=0.4)
    assert "none for training" in text


def test_small_tasks_are_skipped_with_one_warning_naming_them(tmp_path):
    frame = curves(n_tasks=40, sizes=(2, 12), seed=3)
    sizes = frame.groupby("curve").size()
    small = sorted(sizes[sizes < 4].index)
    assert len(small) > 5  # so the warning names five and counts the rest
    with pytest.warns(UserWarning) as caught:
        sampler = _load(_write(tmp_path, frame), min_ctx=3)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert f"skipped {len(small)} of 40 tasks with fewer than 4 points" in text
    assert all(f"curve='{k}'" in text for k in small[:5]) and f"curve='{small[5]}'" not in text
    assert f"and {len(small) - 5} more" in text
    held = [k for s in SPLIT_NAMES for k in sampler.task_keys(s)]
    assert sorted(held) == sorted(set(sizes.index) - set(small))


@pytest.mark.parametrize(
    "options, words",
    [
        ({"task": []}, "name the task column"),
        ({"x": ["curve"]}, "named more than once"),
        ({"min_ctx": 0}, "min_ctx must be >= 1"),
        ({"min_ctx": 4, "max_ctx": 3}, "max_ctx=3 is below min_ctx=4"),
        ({"max_tgt": 0}, "max_tgt"),
        ({"ctx_fraction": [0.8, 0.2]}, "ctx_fraction"),
        ({"val_fraction": 0.0}, "val_fraction must lie in (0, 1)"),
        ({"test_fraction": 0.95}, "test_fraction"),
        ({"path": None}, "needs path"),
    ],
)
def test_invalid_options_are_named(tmp_path, options, words):
    path = _write(tmp_path, curves())
    with pytest.raises(ValueError) as err:
        build_sampler("table", **{"path": path, "task": "curve", "x": ["t"], "y": ["v"], **options})
    assert words in one_line(err)


def test_a_split_without_tasks_says_which_option_emptied_it():
    sampler = TableSampler.from_frame(curves(), task="curve", x=["t"], y=["v"], test_fraction=0)
    assert sampler.task_keys("test") == []
    with pytest.raises(ValueError, match="test split has no tasks"):
        batch_at(sampler, 0, split="test")
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        sampler.task_keys("dev")
