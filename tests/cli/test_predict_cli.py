"""`tnpx predict`: the command line writes the table (CSV, or stdout) and a plot, warnings and
errors are one line each, errors exit 2."""

from __future__ import annotations

import pandas as pd
import pytest

import tnpx
from tests.helpers.predict_inputs import DOMAIN, frames, quiet_predict, tiny
from tnpx.cli import main


# -- the command line --------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path):
    model = tiny()
    tnpx.save(model, tmp_path / "model.pt")
    ctx, tgt = frames()
    ctx.to_csv(tmp_path / "ctx.csv", index=False)
    tgt.to_csv(tmp_path / "tgt.csv", index=False)
    return tmp_path, model, ctx, tgt


def test_cli_writes_csv_and_png(files, capsys):
    tmp, model, ctx, tgt = files
    out, png = tmp / "out" / "pred.csv", tmp / "pred.png"
    args = ["predict", str(tmp / "model.pt"), "--context", str(tmp / "ctx.csv")]
    args += ["--targets", str(tmp / "tgt.csv"), "--out", str(out), "--plot", str(png)]
    assert main([*args, "--domain", "-2", "2", "--level", "0.9"]) == 0
    assert png.stat().st_size > 1000
    written = pd.read_csv(out)
    expected = quiet_predict(model, ctx, tgt, domain=DOMAIN, level=0.9)
    pd.testing.assert_frame_equal(written, expected, rtol=1e-9)
    err = capsys.readouterr().err
    assert "x [" in err and "-> [-2, 2]" in err and "warning" not in err


def test_cli_prints_csv_to_stdout_and_warnings_on_one_line(files, capsys):
    tmp, *_ = files
    args = ["predict", str(tmp / "model.pt"), "--context", str(tmp / "ctx.csv")]
    args += ["--targets", str(tmp / "tgt.csv")]
    assert main([*args, "--no-scale-inputs", "--no-standardise"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "x,y_mean,y_std,y_lower,y_upper"
    assert len(captured.out.splitlines()) == 1 + 13
    assert captured.err == "tnpx predict: no rescaling\n"
    assert main(args) == 0  # the checkpoint records no experiment: the domain is assumed
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warned) == 1 and warned[0].startswith("tnpx predict: warning: the model's")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"model": "missing.pt"}, "missing.pt: no such checkpoint"),
        ({"model": "ctx.csv"}, "not a readable tnpx checkpoint"),
        ({"context": "nothing.csv"}, "nothing.csv: no such file"),
        ({"context": "bad.csv"}, "bad.csv, data row 1, column 'y': 'oops' is not a number"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(files, capsys, change, message):
    tmp, *_ = files
    (tmp / "bad.csv").write_text("x,y\n1,oops\n")
    names = {"model": "model.pt", "context": "ctx.csv", "targets": "tgt.csv", **change}
    code = main(
        ["predict", str(tmp / names["model"]), "--context", str(tmp / names["context"])]
        + ["--targets", str(tmp / names["targets"])]
    )
    assert code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "warning" not in line]
    assert len(lines) == 1 and lines[0].startswith("tnpx predict: error: ")
    assert message in lines[0] and "Traceback" not in err


def test_cli_plot_needs_one_input(tmp_path, capsys):
    tnpx.save(tiny(dim_x=3), tmp_path / "m2.pt")
    ctx, tgt = frames(dim_x=3)
    ctx.to_csv(tmp_path / "ctx.csv", index=False)
    tgt.to_csv(tmp_path / "tgt.csv", index=False)
    code = main(
        ["predict", str(tmp_path / "m2.pt"), "--context", str(tmp_path / "ctx.csv")]
        + ["--targets", str(tmp_path / "tgt.csv"), "--plot", str(tmp_path / "p.png")]
    )
    assert code == 2 and "--plot needs one or two input columns" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists()
