"""models/base.py: streamed prediction in ``NeuralProcess`` (the context encoded once, targets
decoded in chunks): which models encode once, chunk sizes, and ``decode_targets``' checks. That
streaming equals the one-shot prediction for every registered model is part of the contract
(``test_contract_streaming.py``)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tests.helpers.small_models import make_task, small_model
from tnpx.models.base import NeuralProcess
from tnpx.models.registry import REGISTRY

ATOL, RTOL = 1e-5, 1e-4

# Models whose context representation is computed once (not recomputed per chunk).
ENCODE_ONCE = [
    "cnp",
    "tnp",
    "tnp-d",
    "tnp-kr-full",
    "tnp-kr-fast",
    "linear-tnp",
    "hypermix-np",
    "te-tnp",
    "re-te-tnp",
    "te-tnp-rope",
    "pt-tnp-ist",
    "pt-tnp-perceiver",
    "te-pt-tnp",
    "convcnp",
    "gp",
    "mt-gp",
]


def _seeded(fn, *args, **kwargs):
    torch.manual_seed(0)
    with torch.no_grad():
        return fn(*args, **kwargs)


@pytest.mark.parametrize("name", ENCODE_ONCE)
def test_models_that_encode_the_context_once(name):
    cls = REGISTRY[name]
    assert cls._encode_context is not NeuralProcess._encode_context
    assert cls._decode_targets is not NeuralProcess._decode_targets


def test_streaming_with_one_chunk_and_with_chunks_of_one():
    model = small_model("tnp-kr-fast")
    xc, yc, xt = make_task(2, 5, 6, seed=3)
    full = _seeded(model, xc, yc, xt)
    for chunk in (1, 6, 100):
        streamed = _seeded(model.predict_streamed, xc, yc, xt, chunk_size=chunk)
        assert_close(streamed.mean, full.mean, atol=ATOL, rtol=RTOL)


def test_decode_targets_rejects_bad_input():
    model = small_model("tnp")
    xc, yc, xt = make_task(3, 5, 4)
    context = model.encode_context(xc, yc)
    with pytest.raises(ValueError, match="batch 3"):
        model.decode_targets(context, xt[:2])
    with pytest.raises(ValueError, match="xt"):
        model.decode_targets(context, torch.rand(3, 4, 2))
    with pytest.raises(ValueError, match="NaN"):
        model.decode_targets(context, torch.full((3, 4, 1), float("nan")))
    other = small_model("cnp")
    with pytest.raises(ValueError, match="made by tnp, got cnp"):
        model.decode_targets(other.encode_context(xc, yc), xt)
    with pytest.raises(ValueError, match="chunk_size"):
        model.predict_streamed(xc, yc, xt, chunk_size=0)
