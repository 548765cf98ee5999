"""tnpx.predict on bad input: every bad file, frame or column is a one-line ``DataError`` that
names the file, the row and the column; ``drop_missing`` drops such rows with a warning."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tnpx
from tests.helpers.predict_inputs import DOMAIN, tiny
from tnpx.apply.predict import DataError


# -- bad input ---------------------------------------------------------------------------------
def write(path, text: str):
    path.write_text(text)
    return path


GOOD_CTX = "x,y\n1,2\n2,3\n3,1\n"
GOOD_TGT = "x\n1.5\n2.5\n"


@pytest.mark.parametrize(
    "ctx_text, tgt_text, where",
    [
        ("x,y\n1,2\n2,\n3,1\n", GOOD_TGT, ["ctx.csv", "data row 2", "'y'", "missing"]),
        ("x,y\n1,2\n2,NaN\n3,1\n", GOOD_TGT, ["ctx.csv", "data row 2", "'y'", "missing"]),
        ("x,y\n1,2\n2,abc\n3,1\n", GOOD_TGT, ["ctx.csv", "data row 2", "'y'", "'abc'"]),
        ("x,y\n1,2\n2,inf\n", GOOD_TGT, ["ctx.csv", "data row 2", "'y'", "finite"]),
        (GOOD_CTX, "x\n1\nfoo\n", ["tgt.csv", "data row 2", "'x'", "'foo'"]),
        ("x,y\n1,2\n2,3,4\n", GOOD_TGT, ["ctx.csv", "data row 2", "more values"]),
        ("", GOOD_TGT, ["ctx.csv", "empty"]),
        (GOOD_CTX, "x\n", ["tgt.csv", "no targets", "header but no rows"]),
        ("1,2\n3,4\n", GOOD_TGT, ["ctx.csv", "column names"]),
        ("x,\n1,2\n", GOOD_TGT, ["ctx.csv", "column 2 has no name"]),
        ("t,y\n1,2\n", GOOD_TGT, ["ctx.csv", "no column 'x'", "'t', 'y'"]),
        ("x,y,z\n1,2,3\n", GOOD_TGT, ["ctx.csv", "1 output column", "'y', 'z'"]),
        (GOOD_CTX, "x,y\n1,2\n", ["tgt.csv", "1 input column", "'x', 'y'"]),
    ],
)
def test_bad_input_names_file_row_and_column(tmp_path, ctx_text, tgt_text, where):
    ctx, tgt = write(tmp_path / "ctx.csv", ctx_text), write(tmp_path / "tgt.csv", tgt_text)
    with pytest.raises(DataError) as err:
        tnpx.predict(tiny(), ctx, tgt, domain=DOMAIN)
    message = str(err.value)
    assert "\n" not in message
    for part in where:
        assert part in message


def test_bad_files(tmp_path):
    model, tgt = tiny(), write(tmp_path / "tgt.csv", GOOD_TGT)
    with pytest.raises(DataError, match="nothing.csv: no such file"):
        tnpx.predict(model, tmp_path / "nothing.csv", tgt)
    with pytest.raises(DataError, match="is a folder"):
        tnpx.predict(model, tmp_path, tgt)
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00\x81\n\xff")
    with pytest.raises(DataError, match="bin.csv: cannot read"):
        tnpx.predict(model, tmp_path / "bin.csv", tgt)
    with pytest.raises(DataError, match="no column 'z'"):
        tnpx.predict(model, write(tmp_path / "c.csv", GOOD_CTX), tgt, x_cols=["z"])


def test_a_file_that_is_not_a_checkpoint(tmp_path):
    ctx, tgt = write(tmp_path / "ctx.csv", GOOD_CTX), write(tmp_path / "tgt.csv", GOOD_TGT)
    with pytest.raises(tnpx.CheckpointError, match="ctx.csv"):
        tnpx.predict(ctx, ctx, tgt)


def test_netcdf_without_xarray_says_what_to_install(tmp_path):
    try:
        import xarray  # noqa: F401

        pytest.skip("xarray is installed")
    except ImportError:
        pass
    nc = write(tmp_path / "ctx.nc", "not really netcdf")
    with pytest.raises(DataError, match=r"pip install 'tnpx\[xarray\]'"):
        tnpx.predict(tiny(), nc, write(tmp_path / "tgt.csv", GOOD_TGT))


def test_bad_frames_name_the_row_label():
    ctx = pd.DataFrame({"x": [1.0, 2.0], "y": [1.0, np.nan]}, index=["a", "b"])
    expected = r"context DataFrame, row 'b' \(position 1\), column 'y': missing"
    with pytest.raises(DataError, match=expected):
        tnpx.predict(tiny(), ctx, pd.DataFrame({"x": [0.0]}), domain=DOMAIN)
    nullable = pd.DataFrame({"x": [1.0, 2.0], "y": pd.array([1.0, None], dtype="Float64")})
    with pytest.raises(DataError, match=r"row 1, column 'y': missing"):
        tnpx.predict(tiny(), nullable, pd.DataFrame({"x": [0.0]}), domain=DOMAIN)


def test_drop_missing_drops_and_warns(tmp_path):
    ctx = write(tmp_path / "ctx.csv", "x,y\n1,2\n2,\n3,1\n,4\n5,5\n")
    tgt = write(tmp_path / "tgt.csv", "x\n1.5\n\n2.5\nNaN\n")
    with pytest.warns(UserWarning) as caught:
        out = tnpx.predict(tiny(), ctx, tgt, domain=DOMAIN, drop_missing=True)
    messages = " | ".join(str(w.message) for w in caught)
    assert "ctx.csv: dropped 2 of 5 rows" in messages and "data row 2, data row 4" in messages
    assert "tgt.csv: dropped 1 of 3 rows" in messages
    assert out["x"].tolist() == [1.5, 2.5]
