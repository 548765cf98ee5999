"""``predict`` and ``sample`` with a model on each device (``tests/helpers/devices.py``):
the answers are the CPU's up to float rounding, and come back as the caller's types."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.devices import DEVICES
from tests.helpers.small_models import small_model


def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    x = np.linspace(-1.5, 1.5, 12)
    context = pd.DataFrame({"x": x, "y": np.sin(2 * x)})
    return context, pd.DataFrame({"x": np.linspace(-1.0, 1.0, 7)})


@pytest.mark.parametrize("device", DEVICES)
def test_predict_with_a_model_on_the_device(device: str):
    model = small_model("tnp")
    context, targets = frames()
    expected = tnpx.predict(model, context, targets)
    on_device = small_model("tnp").to(device)
    got = tnpx.predict(on_device, context, targets)
    assert np.isfinite(got.select_dtypes("number").to_numpy()).all()
    np.testing.assert_allclose(got["y_mean"], expected["y_mean"], atol=1e-4)
    np.testing.assert_allclose(got["y_std"], expected["y_std"], atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["tnp", "tnp-nd", "inc-tnp"])  # autoregressive, joint, buffer
def test_sample_on_the_device(name: str, device: str):
    model = small_model(name).to(device)
    g = torch.Generator().manual_seed(0)
    xc, yc, xt = (torch.randn(2, n, 1, generator=g).to(device) for n in (5, 5, 4))
    draws = tnpx.sample(model, xc, yc, xt, n_samples=3, seed=0)
    assert draws.device.type == device and draws.shape == (3, 2, 4, 1)
    assert bool(draws.isfinite().all())
