"""The ``grid`` source's option ``exposure`` (issue 52, item 3): a count model's exposure
variable, on the outputs' dims or some of them (population on ``(lat, lon)`` broadcast over
time), read as it is (never normalised), carried by batches as ``info["exposure_c"]`` /
``["exposure_t"]`` (1 at a missing cell), named in the normalisation; a zero, negative or
missing exposure where the outputs are present fails naming the cell, and a variable that does
not fit the grid fails in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.small_grids import counts_grid, indices, points
from tests.helpers.table_curves import one_line
from tnpx.data import batch_at, build_sampler
from tnpx.data.grid import GridSampler
from tnpx.user_files import DataError

WINDOW = {"time": 3, "lat": 4, "lon": 5}


def sampler(data, likelihood="poisson", **options) -> GridSampler:
    options = {"y": ["cases"], "window": WINDOW, "exposure": "pop", **options}
    return GridSampler.from_dataset(data, 4, likelihood=likelihood, **options)


@pytest.mark.parametrize("likelihood", [None, "bernoulli-gamma"])
def test_the_option_is_refused_for_a_family_that_takes_no_exposure(likelihood):
    with pytest.raises(ValueError) as err:
        sampler(counts_grid(), likelihood=likelihood)
    assert "grid: exposure ('pop')" in one_line(err)


@pytest.mark.parametrize("on_time", [False, True], ids=["on-lat-lon", "on-every-dim"])
@pytest.mark.parametrize("sea", [False, True], ids=["full", "with-sea"])
def test_batches_carry_each_cells_exposure_as_the_data_has_it(on_time, sea):
    data = counts_grid(on_time, sea)
    s = sampler(data)
    assert s.normalisation["exposure"] == {"column": "pop"}
    assert s.normalisation["y"]["loc"] == [0.0] and s.normalisation["y"]["scale"] == [1.0]
    pop = data["pop"].values
    masked = 0
    for split in ("train", "val"):
        for step in range(3):
            batch = batch_at(s, step, split=split)
            x, y = points(s, batch)
            exposure = torch.cat([batch.info["exposure_c"], batch.info["exposure_t"]], 1)
            assert exposure.shape == (*x.shape[:2], 1) and exposure.dtype == torch.float64
            real = torch.ones(x.shape[:2], dtype=torch.bool)
            if batch.mask_c is not None:
                real = torch.cat([batch.mask_c, batch.mask_t], 1)
            for b in range(x.shape[0]):
                at = indices(data, x[b].numpy())
                want = (
                    pop[at["time"], at["lat"], at["lon"]] if on_time else pop[at["lat"], at["lon"]]
                )
                keep = real[b].numpy()
                np.testing.assert_array_equal(exposure[b, keep, 0].numpy(), want[keep])
                assert (exposure[b, ~keep, 0] == 1.0).all()  # a missing cell: never a point
                masked += int((~keep).sum())
    assert (masked > 0) == sea


def test_a_gaussian_grids_batches_have_no_exposures():
    batch = batch_at(sampler(counts_grid(), likelihood=None, exposure=None), 0)
    assert "exposure_c" not in batch.info


@pytest.mark.parametrize("bad", [0.0, -2.0, np.nan], ids=["zero", "negative", "nan"])
def test_a_bad_exposure_where_there_are_cases_names_the_cell(bad):
    data = counts_grid(on_time=True)
    data["pop"][4, 2, 3] = bad
    with pytest.raises(DataError) as err:
        sampler(data)
    text = one_line(err)
    assert "the Dataset: cell time=" in text and "lat=51, lon=1.5" in text
    assert "column 'pop'" in text and "finite number > 0" in text


def test_a_variable_that_does_not_fit_is_named():
    with pytest.raises(DataError, match=r"no variable 'people' \(named by exposure\)"):
        sampler(counts_grid(), exposure="people")
    data = counts_grid().assign(band=("band", [0, 1]))
    data["pop2"] = data["pop"].expand_dims(band=data["band"])
    with pytest.raises(DataError, match=r"exposure 'pop2' has dims .*must be among"):
        sampler(data, exposure="pop2")
    with pytest.raises(ValueError, match="named among y or static too"):
        sampler(counts_grid(), exposure="cases")


def test_files_joined_along_time_take_an_exposure_on_the_other_dims_only(tmp_path):
    for on_time in (False, True):
        data = counts_grid(on_time)
        paths = [tmp_path / f"{on_time}-{i}.nc" for i in range(2)]
        data.isel(time=slice(0, 15)).to_netcdf(paths[0])
        data.isel(time=slice(15, 30)).to_netcdf(paths[1])
        options = {"y": ["cases"], "window": WINDOW, "exposure": "pop", "likelihood": "poisson"}
        if on_time:
            with pytest.raises(DataError, match="varies along 'time', the dim the files"):
                build_sampler("grid", 4, 0, path=[str(p) for p in paths], **options)
        else:
            s = build_sampler("grid", 4, 0, path=[str(p) for p in paths], **options)
            assert "exposure_t" in batch_at(s, 0).info
