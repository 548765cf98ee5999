"""tnpx.units: the one map between a user's units and a model's, shared by tnpx.predict and
the BoTorch adapter NPSurrogate (which must therefore agree), without importing BoTorch."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tnpx.units import REL_STD_FLOOR, Affine, UnitMap, range_onto_box, standardising

DOMAIN = (-2.0, 2.0)


def tiny():
    torch.manual_seed(0)
    sizes = {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16}
    return tnpx.build_model("tnp", 1, 1, **sizes).eval()


def context(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs ``[n, 1]`` in [10, 30] for outputs ``y [n]``, and targets ``[11, 1]``."""
    xc = np.linspace(10.0, 30.0, len(y))[:, None]
    xt = np.linspace(8.0, 32.0, 11)[:, None]
    return xc, y[:, None], xt


def both(xc: np.ndarray, yc: np.ndarray, xt: np.ndarray):
    """``(predict's frame, the surrogate)`` on one context, the surrogate's box being the
    input range ``predict`` mapped onto the domain (the context's, or for a single point that
    of context and targets)."""
    from tnpx.bo import NPSurrogate

    model = tiny()
    ctx = pd.DataFrame({"x": xc[:, 0], "y": yc[:, 0]})
    frame = tnpx.predict(model, ctx, pd.DataFrame({"x": xt[:, 0]}), domain=DOMAIN)
    bounds = torch.tensor(frame.attrs["tnpx"]["input_ranges"]["x"], dtype=torch.float64)[:, None]
    surrogate = NPSurrogate(
        model, torch.tensor(xc), torch.tensor(yc), bounds, DOMAIN, standardize=True
    )
    return frame, surrogate


def assert_same_prediction(frame: pd.DataFrame, surrogate, xt: np.ndarray) -> None:
    post = surrogate.posterior(torch.tensor(xt)[:, None, :])  # n_tgt q-batches of one point
    mean = post.mean.detach().reshape(-1).numpy()
    std = post.variance.detach().sqrt().reshape(-1).numpy()
    np.testing.assert_allclose(frame["y_mean"], mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(frame["y_std"], std, rtol=1e-5)


def test_predict_and_the_surrogate_map_a_context_the_same_way():
    pytest.importorskip("botorch")
    rng = np.random.default_rng(0)
    xc, yc, xt = context(280 + 5 * rng.standard_normal(9))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about
        frame, surrogate = both(xc, yc, xt)
    recorded = frame.attrs["tnpx"]
    assert recorded["input_ranges"]["x"] == pytest.approx([xc.min(), xc.max()])
    assert recorded["output_mean_std"]["y"] == pytest.approx([yc.mean(), yc.std()])  # population
    assert surrogate.units.y.loc == pytest.approx([yc.mean()])
    assert surrogate.units.y.scale == pytest.approx([yc.std()])
    np.testing.assert_allclose(surrogate.units.inputs(xc), predict_inputs(xc))
    assert_same_prediction(frame, surrogate, xt)


def predict_inputs(xc: np.ndarray) -> np.ndarray:
    """The documented input map: the context's range onto the domain."""
    lo, hi = xc.min(), xc.max()
    return DOMAIN[0] + (xc - lo) / (hi - lo) * (DOMAIN[1] - DOMAIN[0])


@pytest.mark.parametrize("y", [np.full(7, 0.1), np.array([280.0])], ids=["equal", "one"])
def test_a_flat_output_is_centred_with_scale_one_in_both(y):
    """All outputs equal (0.1 seven times has a rounding-error std of 1e-17) or a single one:
    both centre on the value and keep scale 1, so the prediction is finite, in the user's
    units, with the model's own spread (not a std shrunk to nothing)."""
    pytest.importorskip("botorch")
    xc, yc, xt = context(y)
    with pytest.warns(UserWarning) as caught:
        frame, surrogate = both(xc, yc, xt)
    assert any("no spread" in str(w.message) for w in caught)
    assert frame.attrs["tnpx"]["output_mean_std"]["y"] == pytest.approx([y[0], 1.0])
    assert surrogate.units.y.loc == pytest.approx([y[0]]) and surrogate.units.y.scale == [1.0]
    assert np.isfinite(frame.drop(columns="x").to_numpy()).all()
    assert (frame["y_std"] > 1e-3).all()
    assert_same_prediction(frame, surrogate, xt)


def test_standardising_floors_a_rounding_error_std_relative_to_the_mean():
    assert np.full(7, 0.1).std() > 0  # the case an absolute "std > 0" test gets wrong
    flat = standardising(np.full((7, 1), 0.1))
    assert flat.scale.tolist() == [1.0] and flat.loc == pytest.approx([0.1])
    spread = np.array([[1.0], [1.0 + 1e3 * REL_STD_FLOOR]])
    assert standardising(spread).scale[0] < 1e-6  # small, but a real spread
    np.testing.assert_array_equal(standardising(np.zeros((0, 2))).scale, [1.0, 1.0])


def test_maps_apply_to_arrays_and_differentiably_to_tensors():
    units = UnitMap(
        range_onto_box(np.array([[10.0, 30.0]]), np.array([[-2.0, 2.0]])),
        Affine(np.array([280.0]), np.array([4.0])),
    )
    np.testing.assert_allclose(units.inputs(np.array([[10.0], [20.0], [30.0]]))[:, 0], [-2, 0, 2])
    x = torch.tensor([[25.0]], dtype=torch.float64, requires_grad=True)
    units.inputs(x).sum().backward()
    assert x.grad.item() == pytest.approx(4 / 20)
    y = torch.tensor([[284.0]], dtype=torch.float32)
    assert units.outputs(y).dtype == torch.float32 and units.outputs(y).item() == 1.0
    assert units.mean_to_user(units.outputs(y)).item() == 284.0
    assert units.std_to_user(np.array([0.5])).tolist() == [2.0]
    assert units.variance_to_user(torch.tensor([0.25])).tolist() == [4.0]


@pytest.mark.slow
def test_predict_does_not_import_botorch():
    code = (
        "import sys, tnpx, tnpx.apply.predict, tnpx.units, tnpx.apply.unit_choice; "
        "assert 'botorch' not in sys.modules, 'botorch imported'"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(tnpx.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
