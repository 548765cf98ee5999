"""A tiny seeded model, frames in "user units" and a warning-free ``tnpx.predict`` shared by the
tests of ``tnpx.predict`` and ``tnpx predict`` (``tests/apply/test_predict*.py``,
``tests/cli/test_predict*.py``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import torch

import tnpx

SIZES = {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16}
DOMAIN = (-2.0, 2.0)


def tiny(dim_x: int = 1, dim_y: int = 1, name: str = "tnp", **extra):
    torch.manual_seed(0)
    return tnpx.build_model(name, dim_x, dim_y, **{**SIZES, **extra}).eval()


def frames(n_ctx: int = 9, n_tgt: int = 13, dim_x: int = 1, dim_y: int = 1, seed: int = 0):
    """A context and a target frame in "user units": inputs in [10, 30], outputs near 280."""
    rng = np.random.default_rng(seed)
    xs = [f"x{i}" for i in range(dim_x)] if dim_x > 1 else ["x"]
    ys = [f"y{j}" for j in range(dim_y)] if dim_y > 1 else ["y"]
    xc = rng.uniform(10, 30, (n_ctx, dim_x))
    yc = 280 + 5 * np.sin(xc.sum(1, keepdims=True) / 3) + rng.normal(0, 1, (n_ctx, dim_y))
    ctx = pd.DataFrame(np.hstack([xc, yc]), columns=xs + ys)
    tgt = pd.DataFrame(rng.uniform(8, 32, (n_tgt, dim_x)), columns=xs)
    return ctx, tgt


def quiet_predict(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unexpected warning fails the test
        return tnpx.predict(*args, **kw)
