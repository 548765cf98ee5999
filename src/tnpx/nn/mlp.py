"""Multi-layer perceptrons."""

from __future__ import annotations

import torch
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh}


class MLP(nn.Sequential):
    """``dim_in -> [dim_hidden] * n_hidden -> dim_out`` with an activation between layers.

    Applies to the last dimension: ``[..., dim_in] -> [..., dim_out]``.
    """

    def __init__(
        self, dim_in: int, dim_out: int, dim_hidden: int, n_hidden: int, activation: str = "relu"
    ):
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose from {list(ACTIVATIONS)}")
        dims = [dim_in] + [dim_hidden] * n_hidden + [dim_out]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(dims) - 2:
                layers.append(ACTIVATIONS[activation]())
        super().__init__(*layers)
        self.dim_in, self.dim_out = dim_in, dim_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return super().forward(x)
