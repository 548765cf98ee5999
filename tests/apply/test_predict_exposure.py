"""``tnpx.predict`` / ``tnpx predict`` with a count model trained with an exposure column (issue
52, item 4): the column is required in the context and the targets (one line naming it), each
value checked (the row named), and ``<y>_mean``, the interval, the quantiles and ``p_zero`` are
counts for each target's exposure; a model trained without one predicts as before (exposure
1); the paths that take no exposure refuse such a model in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import tnpx
from tests.helpers.small_models import small_model
from tests.helpers.user_tables import counts_table
from tnpx.cli import main
from tnpx.data import TableSampler
from tnpx.user_files import DataError

COLUMN = "person_years"


@pytest.fixture(scope="module", params=["poisson", "negative-binomial"])
def saved(request, tmp_path_factory) -> tuple[str, str, str]:
    """``(family, path of a model saved with an exposure column, of the same without)``."""
    family, folder = request.param, tmp_path_factory.mktemp(request.param)
    options = {"task": "site", "x": ["week"], "y": ["cases"], "likelihood": family}
    frame = counts_table()
    norm = TableSampler.from_frame(frame, **options, exposure=COLUMN).normalisation
    plain = TableSampler.from_frame(frame, **options).normalisation
    model = small_model("tnp", likelihood=family)
    with_it, without = folder / "exposure.pt", folder / "plain.pt"
    tnpx.save(model, with_it, normalisation=norm)
    tnpx.save(model, without, normalisation=plain)
    return family, str(with_it), str(without)


def task() -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = counts_table()
    site = frame[frame.site == "s1"]
    targets = pd.DataFrame({"week": [0.5, 2.5, 4.5, 6.5], COLUMN: [0.3, 1.0, 2.0, 4.5]})
    return site.drop(columns="site"), targets


def test_the_counts_are_for_each_targets_exposure(saved):
    family, path, _ = saved
    context, targets = task()
    result = tnpx.predict(path, context, targets, quantiles=[0.1, 0.5, 0.9])
    at_one = tnpx.predict(path, context, targets.assign(**{COLUMN: 1.0}))
    e = targets[COLUMN].to_numpy()
    np.testing.assert_allclose(result.cases_mean, at_one.cases_mean * e, rtol=1e-5)
    mean = result.cases_mean.to_numpy()
    assert result.attrs["tnpx"]["exposure"] == COLUMN
    if family == "poisson":  # the count law at mean rate * exposure, from scipy
        np.testing.assert_allclose(result.cases_std, np.sqrt(mean), rtol=1e-5)
        np.testing.assert_allclose(result.cases_p_zero, np.exp(-mean), rtol=1e-5)
        for q in (0.1, 0.5, 0.9):
            np.testing.assert_array_equal(result[f"cases_q{q:g}"], stats.poisson.ppf(q, mean))
    for col in ("cases_lower", "cases_upper", "cases_q0.5"):  # whole counts, >= 0
        values = result[col].to_numpy()
        assert (values >= 0).all() and (values == np.round(values)).all()


def test_the_context_is_read_as_rates_per_unit_exposure(saved):
    _, path, _ = saved
    context, targets = task()
    doubled = context.assign(cases=2 * context.cases, **{COLUMN: 2 * context[COLUMN]})
    np.testing.assert_allclose(
        tnpx.predict(path, doubled, targets).cases_mean,
        tnpx.predict(path, context, targets).cases_mean,
        rtol=1e-5,
    )


def test_a_model_trained_without_one_is_the_same_at_exposure_one(saved):
    _, path, plain = saved
    context, targets = task()
    ones = {COLUMN: 1.0}
    old = tnpx.predict(plain, context.drop(columns=COLUMN), targets.drop(columns=COLUMN))
    new = tnpx.predict(path, context.assign(**ones), targets.assign(**ones))
    pd.testing.assert_frame_equal(old, new[old.columns])
    assert "exposure" not in old.attrs["tnpx"]


@pytest.mark.parametrize("side", ["context", "targets"])
def test_the_column_is_required_on_both_sides(saved, side):
    _, path, _ = saved
    tables = dict(zip(("context", "targets"), task()))
    tables[side] = tables[side].drop(columns=COLUMN)
    with pytest.raises(DataError) as err:
        tnpx.predict(path, tables["context"], tables["targets"])
    text = str(err.value)
    assert "\n" not in text and f"{side} DataFrame: no column {COLUMN!r}" in text
    assert "exposure" in text


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan], ids=["zero", "negative", "nan"])
def test_a_bad_target_exposure_names_its_row(saved, bad):
    _, path, _ = saved
    context, targets = task()
    targets.loc[2, COLUMN] = bad
    with pytest.raises(DataError, match=rf"targets DataFrame: row 2, column '{COLUMN}' = "):
        tnpx.predict(path, context, targets)


def test_the_cli_predicts_a_file_of_targets_in_chunks(saved, tmp_path):
    _, path, _ = saved
    context, targets = task()
    context.to_csv(tmp_path / "c.csv", index=False)
    targets.to_csv(tmp_path / "t.csv", index=False)
    files = ["--context", str(tmp_path / "c.csv"), "--targets", str(tmp_path / "t.csv")]
    args = ["predict", path, *files, "--out", str(tmp_path / "o.csv"), "--chunk-size", "3"]
    assert main(args) == 0
    written = pd.read_csv(tmp_path / "o.csv")
    expected = tnpx.predict(path, context, targets)
    np.testing.assert_allclose(written.cases_mean, expected.cases_mean, rtol=1e-6)


def test_the_paths_without_exposures_refuse_such_a_model(saved):
    _, path, _ = saved
    context, _ = task()
    with pytest.raises(ValueError, match=f"trained with the exposure column '{COLUMN}'"):
        tnpx.NPRegressor(path).fit(context[["week"]].to_numpy(), context.cases.to_numpy())
    with pytest.raises(ValueError, match="ContextStream takes no exposure"):
        tnpx.ContextStream(path)
