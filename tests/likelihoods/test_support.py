"""``check_support``: one line naming the row and column of the first value outside a family's
support, or a family that does not fit the number of outputs; nothing changed or dropped."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tnpx import DataError
from tnpx.likelihoods import check_support


@pytest.mark.parametrize(
    "family, bad, message",
    [
        ("poisson", -1.0, "row 2, column cases = -1 is not a count"),
        ("negative-binomial", 2.5, "row 2, column cases = 2.5 is not a count"),
        ("bernoulli", 0.5, "row 2, column cases = 0.5 is not 0 or 1"),
        ("bernoulli-gamma", -0.1, "row 2, column cases = -0.1 is not >= 0 .*rain cannot be"),
        ("beta", 1.0, "row 2, column cases = 1 is not a fraction strictly inside"),
        ("beta", 0.0, "row 2, column cases = 0 is not a fraction strictly inside"),
        ({"name": "beta", "spikes": True}, 1.2, "is not a fraction in \\[0, 1\\]"),
    ],
)
def test_a_value_outside_the_support_is_named(family, bad, message):
    y = np.array([[0.0, 0.5], [1.0, 0.25], [bad, 0.75]])
    y[:, 1] = [0.5, 0.25, 0.75] if family != "bernoulli" else [0, 1, 1]
    if family in ("poisson", "negative-binomial", "bernoulli-gamma"):
        y[:2, 0], y[:, 1] = [0, 3], [1, 2, 4]
    if isinstance(family, str) and family == "beta":
        y[:2, 0] = [0.1, 0.9]
    before = y.copy()
    with pytest.raises(DataError, match=message) as err:
        check_support(family, y, ["cases", "other"], where="table.csv")
    assert "\n" not in str(err.value) and str(err.value).startswith("table.csv: ")
    assert np.array_equal(y, before)


def test_rows_are_named_by_their_labels_and_missing_values_pass():
    y = torch.tensor([[1.0], [float("nan")], [-2.0]])
    with pytest.raises(DataError, match="row 12, column n = -2"):
        check_support("poisson", y, ["n"], rows=[10, 11, 12])
    check_support("poisson", y[:2], ["n"])  # NaN: a missing value, not checked here


def test_values_in_the_support_pass():
    check_support({"name": "beta", "spikes": True}, np.array([[0.0], [1.0], [0.3]]), ["f"])
    check_support("bernoulli-gamma", np.array([[0.0], [12.5]]), ["rain"])
    check_support("student-t", np.array([[-1e3], [5.0]]), ["y"])


def test_lowrank_needs_two_outputs():
    with pytest.raises(DataError, match="lowrank-gaussian correlates several outputs, but there"):
        check_support("lowrank-gaussian", np.zeros((3, 1)), ["t"])
    check_support("lowrank-gaussian", np.zeros((3, 2)), ["t", "h"])


def test_a_bad_family_name_lists_the_choices():
    with pytest.raises(ValueError, match="valid choices: heteroscedastic"):
        check_support("gamma", np.zeros((1, 1)), ["y"])
