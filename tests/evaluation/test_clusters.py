"""The standard error that respects the split unit (tnpx.evaluation.clusters): equal to a hand
float64 computation on a tiny case, each source's tasks clustered by what it holds out (a
grid's test months, a table's curves), and the table's words naming what each s.e. assumes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tnpx
from tests.helpers.user_tables import write_sines
from tnpx.data import batch_at
from tnpx.data.table import TableSampler
from tnpx.evaluation.clusters import cluster_rule, clustered_se
from tnpx.evaluation.user_tasks import evaluate_tasks, format_task_table, per_task

xr = pytest.importorskip("xarray")


def test_equal_clusters_give_the_standard_error_over_cluster_means():
    values = np.array([1.0, 3.0, 2.0, 6.0, 5.0, 7.0])
    labels = np.array(["a", "a", "b", "b", "c", "c"])
    mean, se, n = clustered_se(values, labels)
    # by hand: cluster means 2, 4, 6; their mean 4; sample std 2; s.e. 2 / sqrt(3)
    assert n == 3
    assert mean == pytest.approx(4.0, abs=1e-12)
    assert se == pytest.approx(2.0 / math.sqrt(3.0), abs=1e-12)
    # the over-tasks s.e. is smaller here: the clusters' spread is what it leaves out
    assert se > values.std(ddof=1) / math.sqrt(len(values))


def test_unequal_clusters_match_a_float64_hand_computation():
    values = np.array([0.5, 1.5, 4.0, -1.0, 2.0, 2.5, 3.0])
    labels = np.array([1, 1, 2, 3, 3, 3, 3])
    mean, se, n = clustered_se(values, labels)
    # sqrt(G / (G - 1) * sum_g (S_g - n_g m)^2) / N, written out in plain floats
    m = sum(values) / 7
    sums = {1: 0.5 + 1.5, 2: 4.0, 3: -1.0 + 2.0 + 2.5 + 3.0}
    sizes = {1: 2, 2: 1, 3: 4}
    spread = sum((sums[g] - sizes[g] * m) ** 2 for g in sums)
    assert n == 3 and mean == pytest.approx(m, abs=1e-12)
    assert se == pytest.approx(math.sqrt(3 / 2 * spread) / 7, abs=1e-12)


def test_one_cluster_has_no_standard_error_and_nan_values_count_nowhere():
    assert math.isnan(clustered_se(np.array([1.0, 2.0]), np.array(["m", "m"]))[1])
    mean, se, n = clustered_se(np.array([1.0, np.nan, 3.0]), np.array(["a", "b", "c"]))
    assert (mean, n) == (2.0, 2) and se == pytest.approx(1.0)


def _monthly(n_months: int = 20) -> xr.Dataset:
    """A monthly field on (time, lat, lon): one-month windows, the last months held out."""
    rng = np.random.default_rng(0)
    time = np.arange("2000-01", f"{2000 + n_months // 12}-{n_months % 12 + 1:02d}",
                     dtype="datetime64[M]").astype("datetime64[ns]")  # fmt: skip
    lat, lon = np.arange(6.0), np.arange(8.0)
    v = rng.standard_normal((len(time), 6, 8)) + np.arange(len(time))[:, None, None] / 5
    return xr.Dataset(
        {"v": (("time", "lat", "lon"), v)}, coords={"time": time, "lat": lat, "lon": lon}
    )


def test_a_grids_test_windows_are_clustered_by_their_month():
    from tnpx.data.grid import GridSampler

    data = _monthly()
    window = {"time": 1, "lat": 3, "lon": 3}
    sampler = GridSampler.from_dataset(  # time an input, to read each window's month
        data, batch_size=8, y=["v"], window=window, test_fraction=0.2, x=["lat", "lon", "time"]
    )
    rule = cluster_rule(sampler)
    assert "'time' block of 1 point" in rule.unit
    months = set()
    for i in range(3):
        batch = batch_at(sampler, i, split="test")
        labels = rule.labels(batch, i)
        # the data's own month of each window, read from its points' time input
        x, _ = sampler.to_physical(x=torch.cat([batch.xc, batch.xt], 1))
        hours = x[:, :, sampler.x.index("time")]
        assert (hours == hours[:, :1]).all()  # a one-month window
        coords = sampler.data.coords["time"]
        index = np.abs(coords[None, :] - hours[:, :1].numpy()).argmin(1)  # nearest month
        assert labels == [str(k) for k in index]
        months |= set(labels)
    assert months <= {str(k) for k in range(16, 20)}  # the 4 held-out months only


def test_a_window_several_steps_long_is_clustered_by_its_block():
    from tnpx.data.grid import GridSampler

    window = {"time": 3, "lat": 3, "lon": 3}
    sampler = GridSampler.from_dataset(_monthly(30), batch_size=8, y=["v"], window=window,
                                       test_fraction=0.3)  # fmt: skip
    batch = batch_at(sampler, 0, split="test")
    labels = cluster_rule(sampler).labels(batch, 0)
    assert labels == [str(int(t) // 3) for t in batch.info["origin_index"][:, 0]]


def test_a_tables_draws_of_one_curve_are_one_cluster(tmp_path):
    frame = write_sines(tmp_path / "s.csv", n_curves=40)
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["value"], batch_size=4)
    model = tnpx.build_model("context-moments", 1, 1)
    scores = per_task(model, sampler, 3)
    keys = sampler.task_keys("test")
    expected = [
        str(keys[k]) for i in range(3) for k in batch_at(sampler, i, split="test").info["task"]
    ]
    assert list(scores["cluster"]) == expected
    assert len(set(expected)) == len(keys) == 4  # 12 draws of 4 curves


def test_the_table_prints_both_errors_and_names_what_each_assumes(tmp_path):
    frame = write_sines(tmp_path / "s.csv", n_curves=40)
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["value"], batch_size=4)
    rows = evaluate_tasks(tnpx.build_model("context-moments", 1, 1), sampler, 3, baselines=())
    row = rows[0]
    ll = row.ll - 0  # the table's mean is the mean over tasks either way
    scores = per_task(tnpx.build_model("context-moments", 1, 1), sampler, 3)
    scale = sampler.normalisation["y"]["scale"][0]
    data_ll = scores["ll"] - np.log(scale)
    assert ll == pytest.approx(data_ll.mean())
    assert row.ll_se_clustered == pytest.approx(clustered_se(data_ll, scores["cluster"])[1])
    assert row.n_clusters == 4
    table = format_task_table(rows)
    assert "± s.e. tasks / clusters" in table
    assert f"{row.ll:.3f} ± {row.ll_se:.3f} / {row.ll_se_clustered:.3f}" in table
    assert "each of the 12 test tasks independent" in table
    assert "4 clusters, one per test task (every draw of one task is one unit)" in table


def test_a_source_without_a_split_unit_says_its_batches_are_assumed_independent():
    from tnpx.data import build_sampler

    sampler = build_sampler("gp", 4, 0)
    rule = cluster_rule(sampler)
    batch = batch_at(sampler, 2, split="test")
    assert rule.labels(batch, 2) == ["batch 2"] * 4
    assert "batches assumed independent" in rule.unit


def test_stations_tasks_keyed_by_dates_are_clustered_by_their_day():
    import pandas as pd

    from tnpx.data.stations import StationsSampler

    times = pd.date_range("2024-01-01", periods=10 * 8, freq="3h")  # 10 days, 8 steps a day
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "time": np.repeat(times.astype(str), 6),
            "lat": np.tile(np.linspace(50, 55, 6), len(times)),
            "temp": rng.standard_normal(6 * len(times)),
        }
    )
    sampler = StationsSampler.from_frame(frame, batch_size=8, time="time", coords=["lat"],
                                         y=["temp"], test_fraction=0.2)  # fmt: skip
    rule = cluster_rule(sampler)
    assert rule.unit.startswith("day of the test tasks")
    batch = batch_at(sampler, 0, split="test")
    keys = sampler.task_keys("test")
    labels = rule.labels(batch, 0)
    assert labels == [str(keys[k])[:10] for k in batch.info["task"].tolist()]
    assert set(labels) <= {"2024-01-09", "2024-01-10"}  # the last 16 steps: two days
