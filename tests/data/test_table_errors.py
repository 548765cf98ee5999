"""Bad data and options of the ``table`` source: one line naming the file, the column and
the task (missing files, columns, values and task ids, non-numbers, constant or empty outputs,
repeated rows, too few tasks, options out of range, an empty split); tasks too small to split
skipped with one warning naming them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers.table_curves import SPLIT_NAMES, curves, one_line
from tnpx.data import batch_at, build_sampler
from tnpx.data.table import TableSampler
from tnpx.user_files import DataError

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


def test_a_task_column_too_coarse_gives_conflicting_outputs(tmp_path):
    """Two stations per region at the same days, ``task: region``: the model would see two
    temperatures at one input and cannot tell them apart; refused naming the task, the inputs
    and both rows."""
    days = np.arange(12.0)
    frame = pd.DataFrame(
        {
            "region": np.repeat([f"r{i}" for i in range(15)], 24),
            "station": np.tile(np.repeat(["a", "b"], 12), 15),
            "day": np.tile(days, 30),
            "temp": np.random.default_rng(0).normal(10, 3, 360),
        }
    )
    path = _write(tmp_path, frame)
    with pytest.raises(DataError) as err:
        build_sampler("table", task="region", x=["day"], y=["temp"], path=path)
    text = one_line(err)
    assert "180 row(s) repeat the inputs 'day'" in text and "task region='r0'" in text
    assert "(data row 1 and data row 13: day=0)" in text
    assert "with different outputs, which the model cannot tell apart" in text
    assert "add the column that tells them apart to task" in text
    sampler = build_sampler("table", task=["region", "station"], x=["day"], y=["temp"], path=path)
    assert len(sampler.task_keys("train")) > 0  # region and station: one series a task


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
