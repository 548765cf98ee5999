"""``tnpx.checkpoint.stored_input_units``: the optional units of a stored normalisation's
inputs (issue 51, item 3). Absent in older checkpoints (None, no error); one string per input
column where present; anything else refused in one line."""

from __future__ import annotations

import pytest

from tnpx.checkpoint import CheckpointError, stored_input_units

X = {"columns": ["lat", "time"], "loc": [0.0, 0.0], "scale": [1.0, 1.0]}


def record(x: dict | None) -> dict:
    return {} if x is None else {"normalisation": {"x": x, "y": {"columns": ["v"]}}}


def test_units_by_column_and_none_where_not_recorded():
    units = ["degrees_north", "hours since 1970-01-01"]
    assert stored_input_units(record({**X, "units": units}), "m.pt") == {
        "lat": "degrees_north",
        "time": "hours since 1970-01-01",
    }
    assert stored_input_units(record(X), "m.pt") is None  # an older checkpoint
    assert stored_input_units(record(None), "m.pt") is None  # a zoo model: no normalisation


@pytest.mark.parametrize(
    ("units", "why"), [(["hours"], "one per input column"), (["", 3], "expected strings")]
)
def test_malformed_units_are_refused_in_one_line(units, why):
    with pytest.raises(
        CheckpointError, match=f"m.pt: its stored input units cannot be read .*{why}"
    ):
        stored_input_units(record({**X, "units": units}), "m.pt")
