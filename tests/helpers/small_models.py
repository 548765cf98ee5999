"""Small, seeded models and random tasks shared by the tests of every folder.

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


def loss_and_grads(model, xc, yc, xt, yt) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The NLL of one forward and every parameter's gradient (zeros where a parameter is
    unused), for comparing two computations of the same model."""
    loss = -model(xc, yc, xt).log_prob(yt).mean()
    loss.backward()
    grads = [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in model.parameters()]
    return loss.detach(), grads
