"""The contract, padding and empty inputs, for every registered model (the ``model_name``
fixture): a padded context predicts as the unpadded one whatever the padding holds, an all-true
mask as no mask, and empty or fully masked contexts, no targets and a batch of no tasks give
valid (empty) predictions rather than a crash inside the model."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tests.helpers.contract_checks import ATOL, RTOL, assert_same_prediction
from tests.helpers.small_models import make_task, predict, small_model

# --- padding and empty contexts ---------------------------------------------------------


def _padded(xc, yc, n_real: list[int], n_pad: int, fill: float):
    """Pad each task's first ``n_real[i]`` context points to ``n_pad`` entries, interleaving
    the padding with the real points; returns xc, yc, mask_c."""
    b, _, dx = xc.shape
    dy = yc.shape[-1]
    xp = torch.full((b, n_pad, dx), fill)
    yp = torch.full((b, n_pad, dy), fill)
    mask = torch.zeros(b, n_pad, dtype=torch.bool)
    for i, n in enumerate(n_real):
        slots = torch.randperm(n_pad, generator=torch.Generator().manual_seed(i))[:n].sort().values
        xp[i, slots], yp[i, slots], mask[i, slots] = xc[i, :n], yc[i, :n], True
    return xp, yp, mask


@pytest.mark.parametrize("fill", [0.0, 7.5, float("nan")])
def test_padded_context_equals_unpadded(model_name, fill):
    model = small_model(model_name)
    xc, yc, xt = make_task(3, 6, 5, seed=6)
    n_real = [2, 6, 4]
    xp, yp, mask = _padded(xc, yc, n_real, 9, fill)
    padded = predict(model, xp, yp, xt, mask_c=mask)
    for i, n in enumerate(n_real):
        alone = predict(model, xc[i : i + 1, :n], yc[i : i + 1, :n], xt[i : i + 1])
        assert_close(padded.mean[i : i + 1], alone.mean, atol=ATOL, rtol=RTOL)
        assert_close(padded.stddev[i : i + 1], alone.stddev, atol=ATOL, rtol=RTOL)


def test_all_true_mask_equals_no_mask(model_name):
    model = small_model(model_name)
    xc, yc, xt = make_task(3, 6, 5, seed=7)
    mask = torch.ones(3, 6, dtype=torch.bool)
    assert_same_prediction(predict(model, xc, yc, xt), predict(model, xc, yc, xt, mask_c=mask))


@pytest.mark.parametrize("dim_x", [1, 2])
def test_empty_context_is_valid(model_name, dim_x):
    model = small_model(model_name, dim_x, 1)
    _, _, xt = make_task(2, 0, 5, dim_x, 1)
    pred = predict(model, torch.zeros(2, 0, dim_x), torch.zeros(2, 0, 1), xt)
    assert pred.mean.shape == (2, 5, 1)
    assert torch.isfinite(pred.mean).all() and torch.isfinite(pred.stddev).all()
    assert (pred.stddev > 0).all()
    with_mask = predict(
        model,
        torch.zeros(2, 0, dim_x),
        torch.zeros(2, 0, 1),
        xt,
        mask_c=torch.zeros(2, 0, dtype=torch.bool),
    )
    assert_same_prediction(pred, with_mask)


@pytest.mark.parametrize("fill", [0.0, float("nan")])
def test_fully_masked_context_equals_empty(model_name, fill):
    model = small_model(model_name)
    _, _, xt = make_task(2, 0, 5, seed=8)
    empty = predict(model, torch.zeros(2, 0, 1), torch.zeros(2, 0, 1), xt)
    xc = torch.full((2, 4, 1), fill)
    yc = torch.full((2, 4, 1), fill)
    masked = predict(model, xc, yc, xt, mask_c=torch.zeros(2, 4, dtype=torch.bool))
    assert_same_prediction(masked, empty)


def test_mixed_empty_and_full_tasks_in_one_batch(model_name):
    model = small_model(model_name)
    xc, yc, xt = make_task(2, 5, 4, seed=9)
    mask = torch.tensor([[False] * 5, [True] * 5])
    pred = predict(model, xc, yc, xt, mask_c=mask)
    empty = predict(model, xc[:1, :0], yc[:1, :0], xt[:1])
    full = predict(model, xc[1:], yc[1:], xt[1:])
    assert_close(pred.mean[:1], empty.mean, atol=ATOL, rtol=RTOL)
    assert_close(pred.mean[1:], full.mean, atol=ATOL, rtol=RTOL)


def test_no_targets_gives_empty_prediction(model_name):
    """``n_tgt = 0`` passes validation, so it must return an empty prediction rather than
    crash inside the model."""
    model = small_model(model_name)
    xc, yc, _ = make_task(2, 4, 0, seed=10)
    pred = predict(model, xc, yc, torch.zeros(2, 0, 1))
    assert pred.mean.shape == (2, 0, 1)
    assert pred.stddev.shape == (2, 0, 1)


def test_empty_batch_gives_empty_prediction(model_name):
    """A batch of zero tasks passes validation, so it must not crash inside the model."""
    model = small_model(model_name)
    pred = predict(model, torch.zeros(0, 3, 1), torch.zeros(0, 3, 1), torch.zeros(0, 4, 1))
    assert pred.mean.shape == (0, 4, 1)
