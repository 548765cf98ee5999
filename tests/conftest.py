"""Shared fixtures and helpers for the tnpx test-suite.

Models are built SMALL here so that every test parametrised over ``tnpx.list_models()`` runs
in milliseconds; :func:`small_model` only passes the size overrides a model accepts, so newly
registered models are picked up without editing the tests.
"""

from __future__ import annotations

import pytest
import torch

import tnpx
from tnpx.models.registry import REGISTRY, options_taken
from tnpx.models.sizes import SMALL_SIZES  # the small models every test builds

# Two cores, and pytest-xdist may run two workers side by side.
torch.set_num_threads(1)

ALL_MODELS = tnpx.list_models()


def supports(name: str, dim_x: int = 1, dim_y: int = 1) -> bool:
    """Whether model ``name`` can be built for ``dim_x`` inputs and ``dim_y`` outputs (as the
    model class declares)."""
    return REGISTRY[name].supports(dim_x, dim_y)


def small_overrides(name: str) -> dict:
    """The small-size overrides model ``name`` accepts."""
    return options_taken(name, SMALL_SIZES)


def small_model(name: str, dim_x: int = 1, dim_y: int = 1, seed: int = 0, **extra):
    """Build a small, seeded, eval-mode model ``name``; skip where it cannot take ``dim_y``."""
    if not supports(name, dim_x, dim_y):
        pytest.skip(f"{name} does not support dim_x={dim_x}, dim_y={dim_y}")
    torch.manual_seed(seed)
    return tnpx.build_model(name, dim_x, dim_y, **{**small_overrides(name), **extra}).eval()


def predict(model, xc, yc, xt, mask_c=None, seed: int = 0):
    """A model call under a fixed global seed and no grad, so stochastic (latent) models give
    repeatable outputs across the calls a test compares."""
    torch.manual_seed(seed)
    with torch.no_grad():
        return model(xc, yc, xt, mask_c=mask_c)


def make_task(
    b: int = 3,
    n_ctx: int = 7,
    n_tgt: int = 5,
    dim_x: int = 1,
    dim_y: int = 1,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
):
    """Random ``(xc, yc, xt)`` with inputs in [-2, 2]."""
    g = torch.Generator().manual_seed(seed)
    xc = torch.rand(b, n_ctx, dim_x, generator=g, dtype=dtype) * 4 - 2
    yc = torch.randn(b, n_ctx, dim_y, generator=g, dtype=dtype)
    xt = torch.rand(b, n_tgt, dim_x, generator=g, dtype=dtype) * 4 - 2
    return xc, yc, xt


@pytest.fixture(params=ALL_MODELS)
def model_name(request) -> str:
    """Every registered model name."""
    return request.param


@pytest.fixture
def task():
    """A small 1D task ``(xc, yc, xt)``: batch 3, 7 context points, 5 targets."""
    return make_task()


def loss_and_grads(model, xc, yc, xt, yt) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The NLL of one forward and every parameter's gradient (zeros where a parameter is
    unused), for comparing two computations of the same model."""
    loss = -model(xc, yc, xt).log_prob(yt).mean()
    loss.backward()
    grads = [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in model.parameters()]
    return loss.detach(), grads


# Valid model inputs for the input-validation tests: batch 2, 5 context points, 4 targets.

B, NC, NT, DX, DY = 2, 5, 4, 2, 1


def good():
    g = torch.Generator().manual_seed(0)
    return {
        "xc": torch.randn(B, NC, DX, generator=g),
        "yc": torch.randn(B, NC, DY, generator=g),
        "xt": torch.randn(B, NT, DX, generator=g),
        "mask_c": None,
    }
