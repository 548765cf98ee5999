"""The 2D zoo model's experiments: the real-field loader (experiments/zero_shot/field_data.py), the
windows and the per-window GP of experiments/zero_shot/fields.py, and both scripts end to end
on a tiny te-tnp-rope trained two steps (those marked slow)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import norm

import tnpx

pytest.importorskip("matplotlib")
pytest.importorskip("gpytorch")
from experiments.zero_shot import fields as real  # noqa: E402
from experiments.zero_shot import shifts as shift  # noqa: E402
from experiments.zero_shot.field_data import EARTH_RADIUS_KM, FIELDS, load_field  # noqa: E402
from experiments.zero_shot.fitted_gp import fit_field_gp  # noqa: E402
from tnpx.extras import MissingExtraError  # noqa: E402

KM_PER_DEGREE = EARTH_RADIUS_KM * math.pi / 180
CONFIG = Path(__file__).resolve().parents[2] / "configs" / "pretrained-gp2d-te-tnp-rope.yaml"


def _raw(name: str) -> dict:
    from matplotlib import cbook

    file = {"jacksboro": "jacksboro_fault_dem.npz", "topobathy": "topobathy.npz"}[name]
    with np.load(cbook.get_sample_data(file, asfileobj=False)) as data:
        return {k: data[k] for k in data.files}


@pytest.mark.parametrize("name", FIELDS)
def test_field_is_a_finite_grid_in_km_and_metres(name):
    field = load_field(name)
    rows, cols = field.grid_shape
    assert field.x.shape == (rows * cols, 2) and field.y.shape == (rows * cols,)
    assert field.x.dtype == np.float64 and np.isfinite(field.x).all() and np.isfinite(field.y).all()
    grid = field.x.reshape(rows, cols, 2)
    # East grows along a row and is constant down a column; north the other way round.
    assert (np.diff(grid[..., 0], axis=1) > 0).all() and (np.diff(grid[..., 0], axis=0) == 0).all()
    assert (np.diff(grid[..., 1], axis=0) > 0).all() and (np.diff(grid[..., 1], axis=1) == 0).all()
    assert field.x.min(0).tolist() == [0.0, 0.0] and field.y_units == "m"


def test_jacksboro_is_the_dem_flipped_to_run_from_the_south():
    raw, field = _raw("jacksboro"), load_field("jacksboro")
    z = raw["elevation"]
    np.testing.assert_array_equal(field.y.reshape(field.grid_shape), z[::-1].astype(float))
    assert field.y.min() == z.min() == 236 and field.y.max() == z.max() == 1076
    # Cell centres, half a cell inside the edges: the spans are (n - 1) cells.
    dx, dy = float(raw["dx"]), float(raw["dy"])
    north = (float(raw["ymin"]) + float(raw["ymax"])) / 2
    extent = field.x.max(0)
    want_east = (z.shape[1] - 1) * dx * KM_PER_DEGREE * math.cos(math.radians(north))
    assert extent[0] == pytest.approx(want_east, rel=1e-9)
    assert extent[1] == pytest.approx((z.shape[0] - 1) * dy * KM_PER_DEGREE, rel=1e-9)


def test_topobathy_rows_follow_latitude_and_the_ocean_is_south_west():
    raw, field = _raw("topobathy"), load_field("topobathy")
    np.testing.assert_array_equal(field.y.reshape(field.grid_shape), raw["topo"].astype(float))
    lat = raw["latitude"].astype(float)
    north = field.x.reshape(*field.grid_shape, 2)[:, 0, 1]
    np.testing.assert_allclose(north, (lat - lat[0]) * KM_PER_DEGREE, rtol=1e-12)
    values = field.y.reshape(field.grid_shape)
    # The deep Pacific in the south-west corner, the Coast Mountains along the northern edge.
    assert values[:20, :20].mean() < -300 and values[-20:].mean() > 500


def test_loader_errors_are_one_line(monkeypatch):
    with pytest.raises(ValueError, match="unknown field 'alps'; choose from jacksboro"):
        load_field("alps")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=r"tnpx\[plot\]"):
        load_field("topobathy")


def test_windows_are_square_with_disjoint_nested_contexts():
    field = load_field("topobathy")
    side = real.WINDOW_FRACTION * field.x.max(0).min()
    for seed in range(5):
        window = real.make_window(field, np.random.default_rng(seed), 300 + 64)
        inside = field.x[window.order]
        assert (np.ptp(inside, 0) <= side).all() and (np.ptp(inside, 0) > side - 5).all()
        assert len(set(window.order)) == len(window.order) == len(window.rows) * len(window.cols)
        tgt, small, large = window.targets(64), window.context(64, 30), window.context(64, 300)
        assert len(tgt) == 64 and not set(tgt) & set(large) and set(small) <= set(large)
    with pytest.raises(ValueError, match="fewer than the 100000 asked for"):
        real.make_window(field, np.random.default_rng(0), 100_000)


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_field_gp_beats_a_constant_on_a_smooth_field_in_any_units():
    """A smooth anisotropic field in km and metres: the GP's held-out NLL is far below that of
    the context's mean and std, and rescaling the units rescales its prediction."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 40, (100, 2))
    y = 500 + 80 * np.sin(x[:, 0] / 6) * np.cos(x[:, 1] / 15) + rng.normal(0, 1, 100)
    ctx, held = slice(0, 40), slice(40, None)
    gp = fit_field_gp(x[ctx], y[ctx], max_iter=30)
    mean, std = gp.predict(x[held])
    nll = -norm.logpdf(y[held], mean, std).mean()
    constant = -norm.logpdf(y[held], y[ctx].mean(), y[ctx].std()).mean()
    assert nll < constant - 1.0
    scaled = fit_field_gp(x[ctx] * 1000, 2 * y[ctx] - 7, max_iter=30).predict(x[held] * 1000)
    np.testing.assert_allclose(scaled[0], 2 * mean - 7, rtol=1e-3)
    np.testing.assert_allclose(scaled[1], 2 * std, rtol=1e-2)


# -- end to end on a tiny trained model --------------------------------------------------------
TINY = [
    "model.dim_model=16", "model.n_layers=1", "model.n_heads=2", "model.dim_head=8",
    "model.dim_ff=16", "data.batch_size=2", "data.max_ctx=20", "data.n_tgt=16",
    "train.steps=2", "train.val_every=2", "train.val_batches=1", "train.checkpoint_every=2",
    "train.progress=false", "schedule.warmup_steps=1", "eval.batch_size=4",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_2d(tmp_path_factory):
    """A te-tnp-rope (dim_x 2, width 16, one layer) trained two steps on the 2D zoo model's
    config, through the training API: its ``model.pt`` records the experiment."""
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    out = tmp_path_factory.mktemp("tiny2d") / "gp2d-tiny"
    fit(load_config(CONFIG, [*TINY, f"train.out_dir={out}"]))
    return out / "model.pt"


@pytest.mark.slow
def test_real_fields_end_to_end(tiny_2d, tmp_path):
    argv = ["--models", str(tiny_2d), "--fields", "topobathy", "--windows", "2"]
    argv += ["--context-sizes", "30", "--targets", "32", "--out", str(tmp_path)]
    run = real.main(argv)
    text = (tmp_path / "real-fields-2d.md").read_text()
    assert (tmp_path / "real-fields-2d.png").stat().st_size > 0
    assert "| topobathy, 30 |" in text and "gp2d-tiny RMSE (m)" in text and "fitted GP NLL" in text
    saved = json.loads((tmp_path / "real-fields-2d.json").read_text())
    assert saved["models"] == {"gp2d-tiny": str(tiny_2d)} and run["context_sizes"] == [30]
    window = saved["results"]["topobathy/30"]["windows"][0]
    assert all(math.isfinite(s["nll"]) and s["seconds"] > 0 for s in window["scores"].values())
    # The model's score is tnpx.predict's on the window the seed gives.
    field = load_field("topobathy")
    split = real.make_window(field, np.random.default_rng([0, 0, 0]), 32 + 30)
    ctx, tgt = split.context(32, 30), split.targets(32)
    pred = tnpx.predict(
        tnpx.load(tiny_2d),
        pd.DataFrame(field.x[ctx], columns=["e", "n"]).assign(y=field.y[ctx]),
        pd.DataFrame(field.x[tgt], columns=["e", "n"]),
        domain=(-2.0, 2.0),
    )
    nll = -norm.logpdf(field.y[tgt], pred["y_mean"], pred["y_std"]).mean()
    assert window["scores"]["gp2d-tiny"]["nll"] == pytest.approx(nll, rel=1e-5)


@pytest.mark.slow
def test_shifts_end_to_end_pair_the_same_tasks(tiny_2d, tmp_path):
    run = shift.main(["--models", str(tiny_2d), "--tasks", "8", "--out", str(tmp_path)])
    text = (tmp_path / "shifts-2d.md").read_text()
    assert "| translated +10 | [8.00, 12.00]² |" in text and "| density x2 |" in text
    result = json.loads((tmp_path / "shifts-2d.json").read_text())["results"]["gp2d-tiny"]
    assert list(result["conditions"]) == [
        "unshifted",
        "translated +10",
        "density x2",
        "density x0.5",
    ]
    assert result["n_tasks"] == 8
    for condition in result["conditions"].values():
        assert condition["max_output_difference"] < 1e-5  # the same tasks, moved
    # The harness's batches: the same outputs, the inputs moved by the shift, and the recorded
    # LL is the model's on them.
    model, cfg = shift.load_prior_model(str(tiny_2d))
    base, moved = (shift.condition_batch(cfg, c, 1) for c in shift.conditions(10.0, [])[:2])
    torch.testing.assert_close(moved.yt, base.yt)
    torch.testing.assert_close(moved.xc, base.xc + 10, atol=2e-6, rtol=0)
    with torch.no_grad():
        ll = model.log_likelihood(moved).double()
    recorded = result["conditions"]["translated +10"]["tasks"]["model_ll"][4:8]
    np.testing.assert_allclose(recorded, ll.numpy(), rtol=1e-6)
    assert run["conditions"][2]["scale"] == pytest.approx(2**-0.5)
