"""tnpx.ContextStream: a growing context, updated where the model is incremental and
re-encoded otherwise; predictions equal the model's on every observation so far."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, small_model


@pytest.mark.parametrize("name", ["inc-tnp", "tnp", "cnp"])
def test_stream_predicts_as_the_model_on_everything_seen(name):
    model = small_model(name)
    xc, yc, xt = make_task(2, 7, 4, seed=1)
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[1, 2] = False
    stream = tnpx.ContextStream(model, batch=2)
    assert stream.incremental == model.incremental and stream.n_observed == 0
    for lo, hi in ((0, 2), (2, 3), (3, 7)):
        stream.add(xc[:, lo:hi], yc[:, lo:hi], mask[:, lo:hi])
        with torch.no_grad():
            expected = model(xc[:, :hi], yc[:, :hi], xt, mask_c=mask[:, :hi])
        assert_close(stream.predict(xt).mean, expected.mean, atol=1e-5, rtol=1e-4)
    assert stream.n_observed == 7


def test_stream_updates_an_incremental_model_without_re_encoding(monkeypatch):
    model = small_model("inc-tnp")
    xc, yc, xt = make_task(1, 5, 3, seed=2)
    stream = tnpx.ContextStream(model, xc[:, :4], yc[:, :4])
    stream.predict(xt)
    calls = []
    monkeypatch.setattr(model, "encode_context", lambda *a: calls.append(a))
    stream.add(xc[:, 4:], yc[:, 4:])
    with torch.no_grad():
        assert_close(stream.predict(xt).mean, model(xc, yc, xt).mean, atol=1e-5, rtol=1e-4)
    assert calls == []


def test_stream_rejects_bad_input():
    model = small_model("inc-tnp")
    xc, yc, _ = make_task(2, 3, 1)
    stream = tnpx.ContextStream(model, xc, yc)
    with pytest.raises(ValueError, match="batch 2"):
        stream.add(xc[:1], yc[:1])
    with pytest.raises(ValueError, match="NaN"):
        stream.add(xc, torch.full_like(yc, float("nan")))
    with pytest.raises(TypeError, match="NeuralProcess"):
        tnpx.ContextStream("inc-tnp")
