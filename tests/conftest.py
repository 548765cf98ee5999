"""Shared fixtures and pytest settings for the tnpx test-suite. The shared helper functions and
constants are in :mod:`tests.helpers` (``from tests.helpers.small_models import small_model``)."""

from __future__ import annotations

import pytest
import torch

from tests.helpers.small_models import ALL_MODELS, make_task

# Two cores, and pytest-xdist may run two workers side by side.
torch.set_num_threads(1)


@pytest.fixture(params=ALL_MODELS)
def model_name(request) -> str:
    """Every registered model name."""
    return request.param


@pytest.fixture
def task():
    """A small 1D task ``(xc, yc, xt)``: batch 3, 7 context points, 5 targets."""
    return make_task()
