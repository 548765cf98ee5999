"""models/tnp.py: tnp and tnp-d compute one function (given the same weights), and the size
options change the model.

Split from ``tests/test_models.py``."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, predict, small_model

ATOL = 1e-5
RTOL = 1e-4


def assert_same_prediction(p, q, atol=ATOL, rtol=RTOL):
    assert_close(p.mean, q.mean, atol=atol, rtol=rtol)
    assert_close(p.stddev, q.stddev, atol=atol, rtol=rtol)


def test_size_override_changes_the_model():
    small = tnpx.build_model(
        "tnp", 1, 1, dim_model=16, n_layers=1, n_heads=1, dim_head=4, dim_ff=16
    )
    big = tnpx.build_model("tnp", 1, 1, dim_model=32, n_layers=2, n_heads=2, dim_head=8, dim_ff=32)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(small) < count(big)
    assert big.hyper.dim_model == 32 and len(big.stack.blocks) == 2


@pytest.mark.parametrize("use_mask", [False, True])
@pytest.mark.parametrize("dim_x", [1, 2])
def test_tnp_d_equals_tnp_with_shared_weights(use_mask, dim_x):
    tnp_d = small_model("tnp-d", dim_x, 2, seed=11)
    tnp = small_model("tnp", dim_x, 2, seed=12)
    tnp.load_state_dict(tnp_d.state_dict())
    xc, yc, xt = make_task(3, 8, 6, dim_x, 2, seed=13)
    mask = None
    if use_mask:
        mask = torch.rand(3, 8, generator=torch.Generator().manual_seed(1)) > 0.4
        mask[0] = False  # one task fully masked
        mask[1, 0] = True
    a, b = predict(tnp_d, xc, yc, xt, mask), predict(tnp, xc, yc, xt, mask)
    assert_same_prediction(a, b, atol=1e-5, rtol=1e-4)


def test_tnp_d_equals_tnp_on_empty_context():
    tnp_d = small_model("tnp-d", seed=14)
    tnp = small_model("tnp", seed=15)
    tnp.load_state_dict(tnp_d.state_dict())
    _, _, xt = make_task(2, 0, 6)
    empty = (torch.zeros(2, 0, 1), torch.zeros(2, 0, 1), xt)
    assert_same_prediction(predict(tnp_d, *empty), predict(tnp, *empty))
