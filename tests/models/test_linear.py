"""Linear cost of the scaling models (linear-tnp and hypermix-np from models/linear.py, and
TNP-KR's two variants alongside them): no N x N matrix is ever formed, and 20,000 points
forward in seconds.

Split from ``tests/test_scaling_models.py``."""

from __future__ import annotations

import time

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from tests.helpers.small_models import make_task, predict, small_model

SCALING_MODELS = ["tnp-kr-full", "tnp-kr-fast", "linear-tnp", "hypermix-np"]


class LargestTensor(TorchDispatchMode):
    """Records the largest tensor any ATen op returns (forward and backward)."""

    def __init__(self):
        super().__init__()
        self.numel = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        sizes = [t.numel() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        self.numel = max([self.numel, *sizes])
        return out


@pytest.mark.parametrize("name", SCALING_MODELS)
def test_no_pairwise_matrix_is_formed(name):
    model = small_model(name).train()
    n = 3000
    xc, yc, xt = make_task(1, n, n, seed=4)
    mask = torch.ones(1, n, dtype=torch.bool)
    mask[0, :7] = False
    with LargestTensor() as largest:
        model(xc, yc, xt, mask_c=mask).mean.sum().backward()
    # activations are at most [N, 256] (the TNP-KR embedding's hidden layer); N x N is 12x more
    assert largest.numel <= 256 * n < n * n / 10


@pytest.mark.parametrize("name", ["tnp-kr-fast", "linear-tnp", "hypermix-np"])
def test_twenty_thousand_points_forward_quickly(name):
    model = small_model(name)
    xc, yc, xt = make_task(1, 20_000, 20_000, seed=5)
    start = time.perf_counter()
    pred = predict(model, xc, yc, xt)
    assert time.perf_counter() - start < 10.0  # ~0.1-0.2 s on one core; N^2 would be minutes
    assert torch.isfinite(pred.mean).all() and (pred.stddev > 0).all()
