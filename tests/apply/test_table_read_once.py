"""A user's table is read once (issue 49, item 5): ``tnpx.predict`` turns each context and
target column into numbers once, at the boundary, and passes the result on; no later step
converts the same columns again."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import tnpx
import tnpx.user_table as user_table
from tests.helpers.predict_inputs import DOMAIN, frames, tiny


@pytest.fixture
def conversions(monkeypatch) -> Counter:
    """``(table name, column)``: how many times that column was turned into numbers."""
    counts: Counter = Counter()
    convert = user_table._numeric_column

    def counting(table, col):
        counts[table.name, col] += 1
        return convert(table, col)

    monkeypatch.setattr(user_table, "_numeric_column", counting)
    return counts


CONTEXTS = {
    "spread": None,  # frames()'s context: nine rows over [10, 30]
    "one row": {"x": [15.0], "y": [3.0]},  # its range needs the targets' too
    "constant input": {"x": [2.0, 2.0], "y": [7.0, 8.0]},
}


@pytest.mark.parametrize("kind", CONTEXTS)
@pytest.mark.parametrize("drop_missing", [False, True])
def test_predict_converts_the_context_once_and_the_targets_once(conversions, kind, drop_missing):
    ctx, tgt = frames()
    if CONTEXTS[kind] is not None:
        ctx = pd.DataFrame(CONTEXTS[kind])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one-row contexts warn; the counts are what matter
        out = tnpx.predict(tiny(), ctx, tgt, domain=DOMAIN, drop_missing=drop_missing)
    assert len(out) == len(tgt) and np.isfinite(out.drop(columns="x").to_numpy()).all()
    once = [("context DataFrame", "x"), ("context DataFrame", "y"), ("targets DataFrame", "x")]
    assert conversions == Counter(once)


def test_a_missing_output_is_read_once_too(conversions):
    ctx, tgt = frames(dim_y=2)
    ctx.loc[3, "y0"] = np.nan  # read masked by a model that reads missing outputs
    model = tiny(dim_y=2, missing_outputs=True)
    out = tnpx.predict(model, ctx, tgt, domain=DOMAIN)
    assert np.isfinite(out.drop(columns="x").to_numpy()).all()
    assert set(conversions.values()) == {1} and len(conversions) == 4
