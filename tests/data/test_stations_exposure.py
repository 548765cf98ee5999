"""The ``stations`` source's option ``exposure`` (issue 52, item 3): a count model's exposure
column passes through as the ``table`` source's does (checked row by row, never normalised,
carried as ``info["exposure_c"]`` / ``["exposure_t"]``, named in the normalisation), and with a
grid as extra context the grid's cells take exposure 1 (their outputs are no counts)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tests.helpers.stations_grid_data import LAT, LON, make_grid
from tests.helpers.table_curves import one_line
from tests.helpers.user_tables import counts_stations
from tnpx.data import batch_at, build_sampler
from tnpx.data.stations import StationsSampler
from tnpx.user_files import DataError

OPTIONS = {"time": "day", "coords": ["lat", "lon"], "y": ["cases"], "exposure": "hours"}


def sampler(frame: pd.DataFrame, likelihood="poisson", **options) -> StationsSampler:
    return StationsSampler.from_frame(frame, 4, **{**OPTIONS, "likelihood": likelihood, **options})


@pytest.mark.parametrize("likelihood", [None, "bernoulli"])
def test_the_option_is_refused_for_a_family_that_takes_no_exposure(likelihood):
    with pytest.raises(ValueError) as err:
        sampler(counts_stations(), likelihood=likelihood)
    text = one_line(err)
    assert "exposure ('hours')" in text and "poisson or negative-binomial" in text


@pytest.mark.parametrize("likelihood", ["poisson", "negative-binomial"])
def test_the_count_families_take_it_and_the_checkpoint_names_it(likelihood):
    s = sampler(counts_stations(), likelihood=likelihood)
    assert s.normalisation["exposure"] == {"column": "hours"}
    assert s.normalisation["x"]["columns"] == ["lat", "lon"]  # no input
    assert s.normalisation["y"]["columns"] == ["cases"]


@pytest.mark.parametrize("bad", [0.0, -3.0, np.nan], ids=["zero", "negative", "nan"])
def test_a_bad_exposure_fails_naming_the_users_row_and_the_column(bad):
    frame = counts_stations()
    frame.loc[23, "hours"] = bad
    with pytest.raises(DataError) as err:
        sampler(frame)
    text = one_line(err)
    assert "row 23" in text and "column 'hours'" in text and "finite number > 0" in text


def test_a_bad_exposure_in_a_file_names_its_data_row(tmp_path):
    frame = counts_stations()
    frame.loc[7, "hours"] = -1.0
    path = tmp_path / "cases.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        build_sampler("stations", path=str(path), likelihood="poisson", **OPTIONS)
    text = one_line(err)
    assert str(path) in text and "data row 8" in text and "column 'hours'" in text


def test_the_exposure_column_must_exist_and_be_no_other_column():
    with pytest.raises(DataError, match=r"no column 'hrs' \(named by exposure\)"):
        sampler(counts_stations(), exposure="hrs")
    with pytest.raises(ValueError, match="named more than once"):
        sampler(counts_stations(), exposure="lat")


def test_batches_carry_each_readings_exposure_as_the_table_has_it():
    frame = counts_stations()
    s = sampler(frame)
    norm = s.normalisation
    loc, scale = (np.asarray(norm["x"][k]) for k in ("loc", "scale"))
    lookup = {(r.day, round(r.lat, 6), round(r.lon, 6)): (r.hours, r.cases)
              for r in frame.itertuples()}  # fmt: skip
    checked = 0
    for split in ("train", "test"):
        keys = s.task_keys(split)
        for step in range(2):
            batch = batch_at(s, step, split=split)
            for side in ("c", "t"):
                x, y = getattr(batch, f"x{side}"), getattr(batch, f"y{side}")
                exposure, mask = batch.info[f"exposure_{side}"], getattr(batch, f"mask_{side}")
                assert exposure.shape == (*x.shape[:2], 1) and exposure.dtype == torch.float64
                for i in range(x.shape[0]):
                    day = float(keys[int(batch.info["task"][i])])
                    for j in range(x.shape[1]):
                        if mask is not None and not mask[i, j]:
                            assert exposure[i, j, 0] == 1.0  # padding
                            continue
                        lat, lon = x[i, j].double().numpy() * scale + loc
                        hours, cases = lookup[(day, round(lat, 6), round(lon, 6))]
                        assert float(exposure[i, j, 0]) == hours  # unrounded, unscaled
                        assert float(y[i, j, 0]) == cases  # counts as they are
                        checked += 1
    assert checked > 100


def test_with_a_grid_the_cells_take_exposure_one_before_the_stations_own():
    frame = counts_stations()
    frame["day"] = pd.Timestamp("2024-03-01 06:00") + pd.to_timedelta(frame["day"], "D")
    grid = {"path": make_grid(days=31), "y": ["t2m"]}
    plain = sampler(frame)
    joined = StationsSampler.from_frame(frame, 4, grid=grid, **{**OPTIONS, "likelihood": "poisson"})
    assert joined.normalisation["exposure"] == {"column": "hours"}
    for step in range(2):
        alone, both = batch_at(plain, step, split="train"), batch_at(joined, step, split="train")
        n_cells = both.xc.shape[1] - alone.xc.shape[1]
        assert n_cells == len(LAT) * len(LON)
        cells = both.info["exposure_c"][:, :n_cells]
        assert torch.equal(cells, torch.ones_like(cells))
        assert torch.equal(both.info["exposure_c"][:, n_cells:], alone.info["exposure_c"])
        assert torch.equal(both.info["exposure_t"], alone.info["exposure_t"])
