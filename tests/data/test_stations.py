"""The ``stations`` task source (tnpx.data.stations): a station network's readings grouped into
tasks by time step or window, context and targets different stations of one task, split by
time (the latest tasks are test), dates parsed, windows with the time as an input, bad data
named in one line; and ``tnpx train`` / ``tnpx eval`` end to end on a stations config."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.data import SPLITS, batch_at, build_sampler
from tnpx.data.stations import StationsSampler
from tnpx.training.loop import build_train_sampler, validation_ll
from tnpx.user_files import DataError

SPLIT_NAMES = list(SPLITS)
COLUMNS = {"time": "time", "coords": ["lat", "lon"], "y": ["temp"], "station": "station"}
DAYS = 10


def network(n_stations: int = 30, days: int = DAYS, seed: int = 0) -> pd.DataFrame:
    """Hourly readings of a smooth temperature field at ``n_stations`` stations at random
    lat/lon for ``days`` days from 2024-03-01, about 3% of station-hours missing, rows
    shuffled: ``station, time, lat, lon, temp`` (``time`` datetime64)."""
    rng = np.random.default_rng(seed)
    lat, lon = rng.uniform(50, 55, n_stations), rng.uniform(0, 8, n_stations)
    times = pd.date_range("2024-03-01", periods=24 * days, freq="h")
    s = np.repeat(np.arange(n_stations), len(times))
    t = np.tile(np.arange(len(times)), n_stations)
    day_cycle = np.sin(2 * np.pi * t / 24 + lon[s] / 4)
    temp = 10 + 3 * day_cycle + np.cos(lat[s]) + 0.1 * rng.normal(size=len(s))
    frame = pd.DataFrame(
        {
            "station": np.array([f"S{i:02d}" for i in range(n_stations)])[s],
            "time": times[t],
            "lat": lat[s],
            "lon": lon[s],
            "temp": temp,
        }
    )
    frame = frame[rng.uniform(size=len(frame)) > 0.03]  # a few missing station-hours
    return frame.sample(frac=1, random_state=seed).reset_index(drop=True)


def write(tmp_path, frame: pd.DataFrame, name: str = "readings.csv") -> str:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return str(path)


def denormalised(sampler: StationsSampler, x: torch.Tensor) -> np.ndarray:
    """Inputs ``x [n, dim_x]`` in the data's units."""
    norm = sampler.normalisation["x"]
    return x.double().numpy() * np.array(norm["scale"]) + np.array(norm["loc"])


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


@pytest.fixture(scope="module")
def readings() -> pd.DataFrame:
    return network()


# --- tasks: time steps, split by time ----------------------------------------------------------


def test_tasks_are_time_steps_held_out_by_time(tmp_path, readings):
    sampler = build_sampler("stations", 8, 0, path=write(tmp_path, readings), **COLUMNS)
    assert (sampler.dim_x, sampler.dim_y) == (2, 1)
    held = {s: sampler.task_keys(s) for s in SPLIT_NAMES}
    every = sorted(k for s in SPLIT_NAMES for k in held[s])
    hours = sorted(readings["time"].astype(str).unique())
    assert every == hours and len(hours) == 24 * DAYS  # one task per hour, each once
    # the last day is test, the day before val, the rest train: tested on the future
    day = {s: {k[:10] for k in held[s]} for s in SPLIT_NAMES}
    assert day["test"] == {"2024-03-10"} and day["val"] == {"2024-03-09"}
    assert max(held["train"]) < min(held["val"]) and max(held["val"]) < min(held["test"])
    assert sampler.normalisation["x"]["columns"] == ["lat", "lon"]


@pytest.mark.parametrize("split", SPLIT_NAMES)
def test_context_and_targets_are_different_stations_of_one_time(readings, split):
    sampler = StationsSampler.from_frame(readings, batch_size=6, **COLUMNS)
    stations = readings[["station", "lat", "lon"]].drop_duplicates()
    names, places = stations["station"].to_numpy(), stations[["lat", "lon"]].to_numpy()

    def station_at(points: np.ndarray) -> list:
        """The station at each of ``points [n, 2]`` (float32 inputs: the nearest, very near)."""
        gap = np.abs(points[:, None] - places[None]).max(-1)  # [n, stations]
        assert (gap.min(1) < 1e-4).all()
        return list(names[gap.argmin(1)])

    for step in range(3):
        batch = batch_at(sampler, step, split=split)
        for i in range(batch.batch_size):
            key = sampler.task_keys(split)[int(batch.info["task"][i])]
            reporting = set(readings.loc[readings["time"].astype(str) == key, "station"])
            n_c = batch.xc.shape[1] if batch.mask_c is None else int(batch.mask_c[i].sum())
            n_t = batch.xt.shape[1] if batch.mask_t is None else int(batch.mask_t[i].sum())
            ctx = station_at(denormalised(sampler, batch.xc[i, :n_c]))
            tgt = station_at(denormalised(sampler, batch.xt[i, :n_t]))
            assert len(set(ctx)) == n_c and len(set(tgt)) == n_t  # each station once
            assert not set(ctx) & set(tgt)  # targets are other stations ...
            assert set(ctx) | set(tgt) <= reporting  # ... reporting at the task's time


def test_split_by_task_hashes_time_steps(readings):
    sampler = StationsSampler.from_frame(readings, split_by="task", **COLUMNS)
    test_days = {k[:10] for k in sampler.task_keys("test")}
    assert len(sampler.task_keys("test")) == 24 and len(test_days) > 3  # spread over days


# --- times: dates and numbers ------------------------------------------------------------------


def test_dates_numbers_and_time_zones_give_the_same_tasks(tmp_path, readings):
    from_text = build_sampler("stations", path=write(tmp_path, readings), **COLUMNS)
    from_dates = StationsSampler.from_frame(readings, **COLUMNS)
    hours = readings.assign(
        time=(readings["time"] - pd.Timestamp("2024-03-01")).dt.total_seconds() / 3600
    )
    from_hours = StationsSampler.from_frame(hours, **COLUMNS)
    zoned = readings.assign(time=readings["time"].dt.strftime("%Y-%m-%dT%H:%M:%S+01:00"))
    from_zoned = StationsSampler.from_frame(zoned, **COLUMNS)
    for split in SPLIT_NAMES:
        keys = from_text.task_keys(split)
        assert from_dates.task_keys(split) == keys
        assert [k[:19] for k in from_zoned.task_keys(split)] == keys
        start = pd.Timestamp("2024-03-01")
        assert [start + pd.Timedelta(hours=h) for h in from_hours.task_keys(split)] == list(
            pd.to_datetime(keys)
        )
    # the same rows in each: the same normalisation
    assert from_hours.normalisation["y"] == from_text.normalisation["y"]


def test_dates_in_several_formats_are_read(readings):
    mixed = readings.assign(time=readings["time"].astype(str))
    mixed.loc[mixed.index[::7], "time"] = readings["time"].iloc[::7].dt.strftime("%Y-%m-%dT%H:%M")
    sampler = StationsSampler.from_frame(mixed, **COLUMNS)
    assert sampler.task_keys("test") == StationsSampler.from_frame(readings, **COLUMNS).task_keys(
        "test"
    )


# --- windows -----------------------------------------------------------------------------------


def test_windows_with_the_time_as_an_input(readings):
    sampler = StationsSampler.from_frame(
        readings, window="6h", time_as_input=True, batch_size=4, **COLUMNS
    )
    assert (sampler.dim_x, sampler.dim_y) == (3, 1)
    assert sampler.normalisation["x"]["columns"] == ["lat", "lon", "time_offset"]
    keys = sorted(k for s in SPLIT_NAMES for k in sampler.task_keys(s))
    assert len(keys) == 4 * DAYS and keys[:2] == ["2024-03-01 00:00:00", "2024-03-01 06:00:00"]
    assert {k[:10] for k in sampler.task_keys("test")} == {"2024-03-10"}
    batch = batch_at(sampler, 0, split="train")
    offsets = denormalised(sampler, batch.xc[batch.mask_c if batch.mask_c is not None else ...])
    hours = np.round(offsets[..., 2], 6)
    assert set(np.unique(hours)) <= {0.0, 1.0, 2.0, 3.0, 4.0, 5.0} and len(np.unique(hours)) > 1


def test_numeric_windows_and_daily_windows_of_one_reading_each(readings):
    hours = readings.assign(
        time=(readings["time"] - pd.Timestamp("2024-03-01")).dt.total_seconds() / 3600
    )
    sampler = StationsSampler.from_frame(hours, window=24, time_as_input=True, **COLUMNS)
    assert sorted(k for s in SPLIT_NAMES for k in sampler.task_keys(s)) == [
        24.0 * d for d in range(DAYS)
    ]
    # one reading per station and day, at any hour: daily tasks need no time input
    daily = readings.sort_values("time").groupby(["station", readings["time"].dt.date]).head(1)
    sampler = StationsSampler.from_frame(daily, window="1D", val_fraction=0.2, **COLUMNS)
    assert sampler.dim_x == 2 and sampler.task_keys("test") == ["2024-03-10"]
    weeks = network(n_stations=5, days=22)  # Friday 1 March to Friday 22 March
    weekly = StationsSampler.from_frame(
        weeks, window="W", time_as_input=True, val_fraction=0.25, test_fraction=0.25, **COLUMNS
    )
    assert weekly.task_keys("train") == ["2024-02-26", "2024-03-04"]  # calendar weeks from
    assert weekly.task_keys("test") == ["2024-03-18"]  # Monday, the last one partial


# --- bad data and options: one line ------------------------------------------------------------


def _bad(tmp_path, frame: pd.DataFrame, **options) -> str:
    path = write(tmp_path, frame)
    with pytest.raises(DataError) as err:
        build_sampler("stations", path=path, **{**COLUMNS, **options})
    text = one_line(err)
    assert path in text
    return text


def test_a_missing_column_lists_the_tables_columns(tmp_path, readings):
    text = _bad(tmp_path, readings, coords=["lat", "longitude"])
    assert "no column 'longitude' (named by coords)" in text and "'lon'" in text
    text = _bad(tmp_path, readings.drop(columns="station"))
    assert "no column 'station' (named by station)" in text


def test_a_time_that_cannot_be_read_names_its_row(tmp_path, readings):
    frame = readings.assign(time=readings["time"].astype(str))
    frame.loc[11, "time"] = "noon-ish"
    text = _bad(tmp_path, frame)
    assert "data row 12, column 'time': 'noon-ish' is not a time" in text
    frame.loc[11, "time"] = np.nan
    assert "data row 12, column 'time': missing time" in _bad(tmp_path, frame)


def test_a_station_read_twice_at_one_time_is_named(tmp_path, readings):
    repeat = readings.iloc[[4]]
    frame = pd.concat([readings, repeat], ignore_index=True)
    text = _bad(tmp_path, frame)
    station, when = repeat["station"].iloc[0], str(repeat["time"].iloc[0])
    assert f"data row {len(frame)}: station {station!r} has a second reading" in text
    assert f"at time={when} (the first at data row 5;" in text
    assert "average repeated readings" in text
    # without a station column: two readings at one place
    text = _bad(tmp_path, frame.drop(columns="station"), station=None)
    assert "two readings share the place lat=" in text and f"data row {len(frame)}" in text


def test_a_window_of_repeated_readings_needs_the_time_as_input(tmp_path, readings):
    text = _bad(tmp_path, readings, window="6h")
    assert "has a second reading in the window starting" in text
    assert "set time_as_input: true" in text


def test_a_window_of_the_wrong_kind_for_the_times(tmp_path, readings):
    text = _bad(tmp_path, readings, window=6)
    assert "column 'time': the times are dates, so window must be a pandas offset" in text


def test_missing_readings_are_named_by_the_table_source(tmp_path, readings):
    frame = readings.copy()
    frame.loc[3, "temp"] = np.nan
    text = _bad(tmp_path, frame)
    assert "column 'temp': 1 missing value(s) in 1 task(s)" in text and "time='" in text


@pytest.mark.parametrize(
    "options, words",
    [
        ({"time": None}, "name the time column"),
        ({"coords": []}, "name the coords column(s)"),
        ({"y": ["lat"]}, "['lat'] named more than once"),
        ({"split_by": "region"}, "split_by must be time or task"),
        ({"window": "fortnightly"}, "window 'fortnightly' is neither a width of time"),
        ({"window": "-6h"}, "must be a positive width"),
        ({"window": 0}, "window must be > 0"),
        ({"time_as_input": True}, "time_as_input needs a window"),
        ({"min_ctx": 0}, "stations: min_ctx must be >= 1"),
        ({"path": None}, "data sampler 'stations' needs path"),
    ],
)
def test_invalid_options_are_named(tmp_path, readings, options, words):
    path = write(tmp_path, readings.head(50))
    with pytest.raises(ValueError) as err:
        build_sampler("stations", **{"path": path, **COLUMNS, **options})
    assert words in one_line(err)


def test_config_files_take_windows_as_numbers_or_offsets():
    for text, window in (("6h", "6h"), ("1D", "1D"), ("6", 6), ("2.5", 2.5), ("null", None)):
        cfg = load_config(None, ["data.name=stations", f"data.window={text}"])
        assert cfg.data["window"] == window


# --- end to end: tnpx train, then tnpx eval ----------------------------------------------------

CONFIG = """
name: stations
model: {{name: tnp, dim_x: 2, dim_y: 1, dim_model: 16, n_layers: 1, n_heads: 2, dim_head: 8,
        dim_ff: 16, n_embed_hidden: 1, n_decoder_hidden: 1}}
data: {{name: stations, path: {path}, time: time, coords: [lat, lon], y: [temp],
       station: station, max_tgt: 16, batch_size: 8}}
optim: {{name: adamw, lr: 1.0e-2}}
schedule: {{name: cosine, warmup_steps: 5}}
train: {{steps: 40, clip_norm: 3.0, log_every: 20, val_every: 40, val_batches: 2,
        checkpoint_every: 1000, progress: false, out_dir: {out}}}
eval: {{n_batches: 2, batch_size: 4}}
"""


def test_train_and_evaluate_on_stations(tmp_path, readings):
    path = write(tmp_path, readings)
    config = tmp_path / "stations.yaml"
    config.write_text(CONFIG.format(path=path, out=tmp_path / "run"))
    cfg = load_config(config)
    sampler = build_train_sampler(cfg)
    torch.manual_seed(cfg.train.seed)  # the weights `tnpx train` starts from
    untrained = tnpx.build_model("tnp", 2, 1, **cfg.model_options())
    before = validation_ll(untrained, sampler, 2, torch.device("cpu"))
    started = time.perf_counter()
    assert main(["train", str(config)]) == 0
    model = tmp_path / "run" / "model.pt"
    after = validation_ll(tnpx.load(model), sampler, 2, torch.device("cpu"))
    assert after > before + 0.3, (before, after)  # -1.55 -> -0.64 when written
    stored = tnpx.checkpoint.read_checkpoint(model)["normalisation"]
    assert stored["x"]["columns"] == ["lat", "lon"] and stored["y"]["columns"] == ["temp"]
    out = tmp_path / "eval.json"
    assert main(["eval", str(model), "--out", str(out), "--no-baselines"]) == 0
    assert time.perf_counter() - started < 15
    (ours,) = json.loads(out.read_text())["rows"]
    assert ours["model"] == "tnp" and ours["n_tasks"] == 8 and np.isfinite(ours["ll"])
