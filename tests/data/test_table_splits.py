"""Honest splits of the ``table`` source (tnpx.data.table.splits): whole tasks held out by a
hash of their key (the default), by time (the latest tasks are test) or by region (whole
regions held out, listed or hashed); bad options and data named in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tnpx.data import SPLITS, batch_at, build_sampler
from tnpx.data.table import TableSampler
from tnpx.user_files import DataError

SPLIT_NAMES = list(SPLITS)
REGIONS = ["north", "south", "east", "west", "alps", "coast", "delta", "plain", "moor", "fen"]


def surveys(n_tasks: int = 40, seed: int = 0) -> pd.DataFrame:
    """A long table of surveys (tasks ``survey``), each in one region (``area``) and over a
    few consecutive days (``day``, numbers; ``date``, text dates), rows shuffled."""
    rng = np.random.default_rng(seed)
    frames = []
    for task in range(n_tasks):
        n = int(rng.integers(6, 15))
        start = int(rng.integers(0, 300))
        day = start + rng.integers(0, 5, n)  # a survey spans a few days
        x = rng.uniform(0, 10, n)
        frames.append(
            pd.DataFrame(
                {
                    "survey": f"s{task:02d}",
                    "area": REGIONS[task % len(REGIONS)],
                    "day": day,
                    "date": (pd.Timestamp("2023-01-01") + pd.to_timedelta(day, "D")).astype(str),
                    "x": x,
                    "y": np.sin(x + task) + 0.1 * rng.normal(size=n),
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    return frame.sample(frac=1, random_state=seed).reset_index(drop=True)


def sampler(frame: pd.DataFrame, **options) -> TableSampler:
    return TableSampler.from_frame(frame, task="survey", x=["x"], y=["y"], **options)


def keys(s: TableSampler) -> dict[str, list]:
    return {split: s.task_keys(split) for split in SPLIT_NAMES}


def assert_disjoint_and_whole(held: dict[str, list], frame: pd.DataFrame) -> None:
    every = [k for split in SPLIT_NAMES for k in held[split]]
    assert sorted(every) == sorted(frame["survey"].unique())  # every task, once


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


# --- by task: the default, unchanged -----------------------------------------------------------


def test_split_by_task_is_the_default():
    frame = surveys()
    assert keys(sampler(frame)) == keys(sampler(frame, split_by="task"))


# --- by time -----------------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["day", "date"])
def test_split_by_time_tests_on_the_latest_tasks(column):
    frame = surveys(n_tasks=40)
    held = keys(sampler(frame, split_by="time", split_column=column, val_fraction=0.2))
    assert_disjoint_and_whole(held, frame)
    assert [len(held[s]) for s in SPLIT_NAMES] == [28, 8, 4]
    start = frame.groupby("survey")["day"].min()  # a task's time: its earliest
    latest = {s: start[held[s]].max() for s in SPLIT_NAMES}
    earliest = {s: start[held[s]].min() for s in SPLIT_NAMES}
    assert latest["train"] <= earliest["val"] and latest["val"] <= earliest["test"]
    assert list(start.sort_values(kind="stable").index[-4:]) == sorted(
        held["test"], key=lambda k: (start[k], k)
    )


def test_split_by_time_ignores_the_rows_order_and_the_seed():
    frame = surveys()
    a = sampler(frame, split_by="time", split_column="day")
    b = TableSampler.from_frame(
        frame.sample(frac=1, random_state=3),
        seed=7,
        task="survey",
        x=["x"],
        y=["y"],
        split_by="time",
        split_column="day",
    )
    assert keys(a) == keys(b)
    for split in SPLIT_NAMES:
        assert batch_at(a, 0, split=split).info["task"].max() < len(keys(a)[split])


def test_a_datetime_column_splits_by_time():
    frame = surveys()
    frame["date"] = pd.to_datetime(frame["date"])  # datetime64, as Parquet keeps it
    by_date = sampler(frame, split_by="time", split_column="date")
    assert keys(by_date) == keys(sampler(surveys(), split_by="time", split_column="day"))


# --- by region ---------------------------------------------------------------------------------


def test_split_by_region_holds_out_whole_regions():
    frame = surveys(n_tasks=60)
    held = keys(sampler(frame, split_by="region", split_column="area", val_fraction=0.2))
    assert_disjoint_and_whole(held, frame)
    region = frame.groupby("survey")["area"].first()
    regions = {s: set(region[held[s]]) for s in SPLIT_NAMES}
    for a in SPLIT_NAMES:
        for b in SPLIT_NAMES:
            assert a == b or not regions[a] & regions[b], (a, b)
    # fractions count regions: 10 regions, 2 val, 1 test
    assert [len(regions[s]) for s in SPLIT_NAMES] == [7, 2, 1]
    # by a hash of the region, so another split_seed holds out others
    other = sampler(frame, split_by="region", split_column="area", split_seed=5)
    assert set(region[other.task_keys("test")]) != regions["test"]


def test_split_by_listed_regions():
    frame = surveys(n_tasks=30)
    frame["zone"] = frame["survey"].str[1:].astype(int) % 5  # regions 0..4, numbers
    s = sampler(frame, split_by="region", split_column="zone", val_regions=[1], test_regions=[3])
    zone = frame.groupby("survey")["zone"].first()
    held = keys(s)
    assert_disjoint_and_whole(held, frame)
    assert set(zone[held["val"]]) == {1} and set(zone[held["test"]]) == {3}
    assert set(zone[held["train"]]) == {0, 2, 4}
    # regions compare as text: YAML's "3" names the table's 3
    again = sampler(frame, split_by="region", split_column="zone", val_regions=["1"])
    assert again.task_keys("val") == held["val"] and again.task_keys("test") == []
    with pytest.raises(ValueError, match=r"test split has no tasks \(test_regions is empty\)"):
        batch_at(again, 0, split="test")


# --- bad options and data: one line --------------------------------------------------------


@pytest.mark.parametrize(
    "options, words",
    [
        ({"split_by": "station"}, "split_by must be one of task, time, region"),
        ({"split_by": "time"}, "split_by time needs split_column"),
        ({"split_by": "region"}, "split_by region needs split_column"),
        ({"split_column": "day"}, "split_column is for split_by time or region"),
        ({"split_by": "time", "split_column": "day", "test_regions": ["a"]}, "for split_by region"),
        ({"split_by": "region", "split_column": "area", "test_regions": ["fen"]}, "val_regions"),
        (
            {
                "split_by": "region",
                "split_column": "area",
                "val_regions": ["fen", 3],
                "test_regions": ["3"],
            },
            "region(s) ['3'] named in both",
        ),  # fmt: skip
    ],
)
def test_invalid_split_options_are_named(options, words):
    with pytest.raises(ValueError) as err:
        sampler(surveys(), **options)
    assert words in one_line(err)


def _bad(tmp_path, frame: pd.DataFrame, **options) -> str:
    path = tmp_path / "surveys.csv"
    frame.to_csv(path, index=False)
    cols = {"task": "survey", "x": ["x"], "y": ["y"]}
    with pytest.raises(DataError) as err:
        build_sampler("table", path=str(path), **cols, **options)
    text = one_line(err)
    assert str(path) in text
    return text


@pytest.mark.parametrize("split_by", ["time", "region"])
def test_a_missing_split_column_lists_the_columns(tmp_path, split_by):
    text = _bad(tmp_path, surveys(), split_by=split_by, split_column="season")
    assert "no column 'season' (named by split_column)" in text and "'survey'" in text


def test_a_time_that_cannot_be_read_names_its_row(tmp_path):
    frame = surveys()
    frame.loc[5, "date"] = "last Tuesday"
    text = _bad(tmp_path, frame, split_by="time", split_column="date")
    assert "data row 6, column 'date': 'last Tuesday' is not a time" in text
    frame.loc[5, "date"] = np.nan
    text = _bad(tmp_path, frame, split_by="time", split_column="date")
    assert "data row 6, column 'date': missing time" in text


def test_too_few_tasks_or_regions_leave_a_split_empty(tmp_path):
    text = _bad(tmp_path, surveys(n_tasks=4), split_by="time", split_column="day")
    assert "4 usable task(s) leave none for the val split" in text
    few = surveys(n_tasks=30)
    few["area"] = few["survey"].str[-1:].astype(int) % 3  # 3 regions: round(0.3) = 0
    text = _bad(tmp_path, few, split_by="region", split_column="area")
    assert "3 region(s) in column 'area' leave none for the val split" in text
    assert "add regions or raise val_fraction" in text


def test_a_task_in_two_regions_is_named(tmp_path):
    frame = surveys()
    row = frame.index[frame["survey"] == "s07"][2]
    frame.loc[row, "area"] = "elsewhere"
    text = _bad(tmp_path, frame, split_by="region", split_column="area")
    assert "task survey='s07' lies in more than one region of column 'area'" in text
    assert "'elsewhere'" in text and "data row" in text


def test_listed_regions_must_exist_and_leave_some_for_training(tmp_path):
    frame = surveys()
    text = _bad(tmp_path, frame, split_by="region", split_column="area", val_regions=["atlantis"])
    assert "no usable task lies in region 'atlantis' of column 'area'" in text
    text = _bad(
        tmp_path,
        frame,
        split_by="region",
        split_column="area",
        val_regions=REGIONS[:5],
        test_regions=REGIONS[5:],
    )
    assert "leave some for training" in text


def test_a_missing_region_is_named(tmp_path):
    frame = surveys()
    frame["area"] = frame["area"].astype(object)
    frame.loc[9, "area"] = np.nan
    text = _bad(tmp_path, frame, split_by="region", split_column="area")
    assert "data row 10, column 'area': missing region" in text
