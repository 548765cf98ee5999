"""Issue 51, item 8b: ``tnpx predict --plot``'s map axes follow one documented convention (a
longitude-like input across, a latitude-like one up, else the first input across), or the
user's choice (``--plot-axes ACROSS UP``); ``tnpx predict --help`` says how columns are matched
and mapped for a model trained on a user's data."""

from __future__ import annotations

import pytest

import tnpx
import tnpx.plot.map as map_module
from tests.helpers.predict_inputs import frames, tiny
from tnpx.cli import main
from tnpx.plot.map import map_axes

pytest.importorskip("matplotlib")


@pytest.mark.parametrize(
    ("columns", "axes"),
    [
        (["latitude", "longitude"], ("longitude", "latitude")),
        (["lon", "lat"], ("lon", "lat")),
        (["Lat", "depth"], ("depth", "Lat")),
        (["depth", "LNG"], ("LNG", "depth")),
        (["x0", "x1"], ("x0", "x1")),
    ],
)
def test_longitude_goes_across_and_latitude_up(columns, axes):
    assert map_axes(columns) == axes


@pytest.fixture
def drawn(monkeypatch):
    """The input columns each map is drawn with (across, up), in order."""
    calls = []

    def record(result, path, x_cols, y_cols, context=None, **_):
        calls.append(list(x_cols))
        open(path, "wb").close()

    monkeypatch.setattr(map_module, "plot_prediction_map", record)
    return calls


def _args(tmp_path, names):
    tnpx.save(tiny(dim_x=2), tmp_path / "model.pt")
    ctx, tgt = frames(n_ctx=20, n_tgt=30, dim_x=2)
    ctx.rename(columns=dict(zip(["x0", "x1"], names))).to_csv(tmp_path / "c.csv", index=False)
    tgt.rename(columns=dict(zip(["x0", "x1"], names))).to_csv(tmp_path / "t.csv", index=False)
    return ["predict", str(tmp_path / "model.pt"), "--context", str(tmp_path / "c.csv"),
            "--targets", str(tmp_path / "t.csv"), "--domain", "-2", "2",
            "--out", str(tmp_path / "p.csv"), "--plot", str(tmp_path / "m.png")]  # fmt: skip


def test_the_map_follows_the_convention_or_plot_axes(tmp_path, drawn, capsys):
    args = _args(tmp_path, ["lat", "lon"])
    assert main(args) == 0
    assert main([*args, "--plot-axes", "lat", "lon"]) == 0
    assert drawn == [["lon", "lat"], ["lat", "lon"]]
    capsys.readouterr()
    assert main([*args, "--plot-axes", "lat", "depth"]) != 0
    assert "--plot-axes: 'depth' is not an input column" in capsys.readouterr().err
    no_plot = [a for a in args if a not in ("--plot", str(tmp_path / "m.png"))]
    assert main([*no_plot, "--plot-axes", "lat", "lon"]) != 0
    assert (
        "--plot-axes chooses the axes of --plot's map: it needs --plot" in capsys.readouterr().err
    )


def test_help_says_a_trained_model_maps_with_its_stored_normalisation(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "matched to them by name, in any order" in text
    assert "mapped with the normalisation it stores" in text
    assert "Any other model (a pretrained one)" in text and "--plot-axes" in text
    assert "longitude-like column across" in text
