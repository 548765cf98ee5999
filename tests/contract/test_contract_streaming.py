"""The contract, streamed prediction, for every registered model (the ``model_name`` fixture):
encoding the context once and decoding the targets (in chunks where the model is streamable)
equals the one-shot prediction; a model that declares incremental updates or buffered joint
sampling does what it declares. The streaming machinery itself is tested in ``test_base.py``."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import Normal
from torch.testing import assert_close

from tests.helpers.contract_checks import ATOL, RTOL, assert_same_prediction
from tests.helpers.small_models import make_task, small_model
from tnpx.models.registry import REGISTRY

# --- streamed prediction (from tests/test_streaming.py) ---------------------------------


def _seeded(fn, *args, **kwargs):
    torch.manual_seed(0)
    with torch.no_grad():
        return fn(*args, **kwargs)


def test_encode_then_decode_equals_forward(model_name):
    model = small_model(model_name)
    xc, yc, xt = make_task(3, 8, 10, seed=1)
    full = _seeded(model, xc, yc, xt)
    context = _seeded(model.encode_context, xc, yc)
    torch.manual_seed(0)
    with torch.no_grad():
        decoded = model.decode_targets(context, xt)
    if isinstance(full, Normal):  # latent models draw their latents again in decode
        assert_close(decoded.mean, full.mean, atol=ATOL, rtol=RTOL)
        assert_close(decoded.stddev, full.stddev, atol=ATOL, rtol=RTOL)
    assert decoded.mean.shape == full.mean.shape


@pytest.mark.parametrize("masked", [False, True])
def test_streamed_prediction_equals_one_shot(model_name, masked):
    model = small_model(model_name)
    xc, yc, xt = make_task(3, 8, 11, seed=2)
    mask = None
    if masked:
        mask = torch.ones(3, 8, dtype=torch.bool)
        mask[1, 5:] = False
        mask[2, :] = False  # an empty context: the prior
    full = _seeded(model, xc, yc, xt, mask_c=mask)
    if not REGISTRY[model_name].streamable():
        with pytest.raises(ValueError, match="cannot be decoded in chunks"):
            _seeded(model.predict_streamed, xc, yc, xt, mask, chunk_size=4)
        return
    assert type(full) is Normal
    streamed = _seeded(model.predict_streamed, xc, yc, xt, mask, chunk_size=4)
    assert_close(streamed.mean, full.mean, atol=ATOL, rtol=RTOL)
    assert_close(streamed.stddev, full.stddev, atol=ATOL, rtol=RTOL)


# --- declared incremental updates and buffered joint sampling hold --------------------------


def test_declared_incremental_update_equals_encoding_at_once(model_name):
    """A model that declares ``incremental`` extends an encoded context by new points (with
    padding) to exactly the encoding of the longer context."""
    if not REGISTRY[model_name].incremental:
        pytest.skip(f"{model_name} does not declare incremental updates")
    model = small_model(model_name)
    xc, yc, xt = make_task(3, 9, 5, seed=20)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[0, [1, 6]] = False
    mask[2, :4] = False
    whole = _seeded(model, xc, yc, xt, mask_c=mask)
    with torch.no_grad():
        context = model.encode_context(xc[:, :4], yc[:, :4], mask[:, :4])
        for lo, hi in ((4, 5), (5, 5), (5, 9)):
            context = model.update(context, xc[:, lo:hi], yc[:, lo:hi], mask[:, lo:hi])
        assert_same_prediction(model.decode_targets(context, xt), whole)


def test_declared_buffered_sampling_scores_what_it_samples(model_name):
    """A model that declares ``buffered_sampling`` scores a target set in one pass as the sum
    of the conditionals its buffer gives step by step."""
    if not REGISTRY[model_name].buffered_sampling:
        pytest.skip(f"{model_name} does not declare buffered sampling")
    model = small_model(model_name)
    xc, yc, xt = make_task(2, 6, 4, seed=21)
    yt = torch.randn(2, 4, 1, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        one_pass = model.joint_log_prob(xc, yc, xt, yt)
        context = model.encode_context(xc, yc)
        buffer, total = model.start_buffer(context, 1), torch.zeros(2)
        for k in range(4):
            step = model.predict_with_buffer(context, buffer, xt[:, k : k + 1])
            total += step.log_prob(yt[:, k : k + 1]).sum((-2, -1))
            buffer = model.add_to_buffer(context, buffer, xt[:, k : k + 1], yt[:, k : k + 1])
    assert one_pass.shape == (2,)
    assert_close(one_pass, total, atol=1e-4, rtol=1e-5)
