"""The ``table`` source's option ``exposure`` (issue 52, item 4): a count model's exposure
column, taken only with ``poisson`` / ``negative-binomial``, each value a finite number > 0
(else one line naming the row and the column), never normalised, carried by batches as
``info["exposure_c"]`` / ``["exposure_t"]`` (1 at padding) and named in the normalisation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tests.helpers.table_curves import one_line
from tests.helpers.user_tables import counts_table
from tnpx.data import batch_at, build_sampler
from tnpx.data.table import TableSampler
from tnpx.user_files import DataError

OPTIONS = {"task": "site", "x": ["week"], "y": ["cases"], "exposure": "person_years"}


def sampler(frame: pd.DataFrame, likelihood="poisson", **options) -> TableSampler:
    return TableSampler.from_frame(
        frame, **{**OPTIONS, "likelihood": likelihood, **options}, batch_size=6
    )


@pytest.mark.parametrize("likelihood", [None, "heteroscedastic", "bernoulli", "beta"])
def test_the_option_is_refused_for_a_family_that_takes_no_exposure(likelihood):
    with pytest.raises(ValueError) as err:
        sampler(counts_table(), likelihood=likelihood)
    text = one_line(err)
    assert "exposure ('person_years')" in text
    assert "poisson or negative-binomial" in text  # the families that take it


@pytest.mark.parametrize("likelihood", ["poisson", "negative-binomial", {"name": "poisson"}])
def test_the_count_families_take_it(likelihood):
    assert sampler(counts_table(), likelihood=likelihood).normalisation["exposure"] == {
        "column": "person_years"
    }


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan], ids=["zero", "negative", "nan"])
def test_a_bad_exposure_fails_naming_the_row_and_the_column(tmp_path, bad):
    frame = counts_table()
    frame.loc[17, "person_years"] = bad
    path = tmp_path / "cases.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        build_sampler("table", path=str(path), likelihood="poisson", **OPTIONS)
    text = one_line(err)
    # the file's data row 18 (row 17 of the frame, counted from 1 below the header)
    assert str(path) in text and "data row 18" in text and "column 'person_years'" in text
    assert "finite number > 0" in text


def test_a_bad_exposure_in_a_frame_names_its_row_label():
    frame = counts_table()
    frame.loc[3, "person_years"] = -2.0
    with pytest.raises(DataError, match=r"row 3, column 'person_years' = -2 is not"):
        sampler(frame)


def test_an_exposure_that_is_no_number_or_no_column_is_named():
    frame = counts_table()
    frame["person_years"] = frame["person_years"].astype(object)
    frame.loc[5, "person_years"] = "n/a"
    with pytest.raises(DataError, match=r"row 5, column 'person_years'"):
        sampler(frame)
    with pytest.raises(DataError, match=r"no column 'py' \(named by exposure\)"):
        sampler(counts_table(), exposure="py")


def test_the_exposure_column_is_no_input_nor_output():
    with pytest.raises(ValueError, match="named more than once"):
        sampler(counts_table(), x=["person_years"])


def test_batches_carry_the_tables_exposures_for_the_drawn_points_padding_one():
    frame = counts_table()
    s = sampler(frame)
    norm = s.normalisation
    assert norm["x"]["columns"] == ["week"] and norm["y"]["columns"] == ["cases"]
    lookup = {(r.site, r.week): (r.person_years, r.cases) for r in frame.itertuples()}
    padded = 0
    for split in ("train", "val"):
        for step in range(3):
            batch = batch_at(s, step, split=split)
            keys = s.task_keys(split)
            for side in ("c", "t"):
                x, y = getattr(batch, f"x{side}"), getattr(batch, f"y{side}")
                exposure = batch.info[f"exposure_{side}"]
                mask = getattr(batch, f"mask_{side}")
                assert exposure.shape == (*x.shape[:2], 1)  # [batch, n, 1]
                assert exposure.dtype == torch.float64  # the table's values, unrounded
                for i in range(x.shape[0]):
                    for j in range(x.shape[1]):
                        if mask is not None and not mask[i, j]:
                            assert exposure[i, j, 0] == 1.0  # padding
                            padded += 1
                            continue
                        week = float(x[i, j, 0]) * norm["x"]["scale"][0] + norm["x"]["loc"][0]
                        want, cases = lookup[(keys[int(batch.info["task"][i])], round(week))]
                        assert float(exposure[i, j, 0]) == want  # as the table has it
                        assert float(y[i, j, 0]) == cases  # the counts too: never scaled
    assert padded > 0  # sites of different sizes: the padding was checked


def test_a_table_without_the_option_gives_batches_without_exposures():
    s = sampler(counts_table(), exposure=None)
    batch = batch_at(s, 0, split="train")
    assert "exposure_c" not in batch.info and "exposure" not in s.normalisation
