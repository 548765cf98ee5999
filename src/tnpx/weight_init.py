"""Weight initialisation schemes a training run can choose (``train.weight_init``).

``default`` keeps each layer's own torch initialisation. ``lecun_normal`` is JAX/Flax's default
for dense layers (the TNP-KR paper's dl4bi code is Flax): weights from a normal truncated at
two standard deviations, scaled so their variance is ``1 / fan_in``, and zero biases. torch's
default (Kaiming-uniform with ``a = sqrt(5)``) has a third of that variance: the same function
classes, a different starting point (the time-to-accuracy study: the KR-1 CNP's gap).
"""

from __future__ import annotations

import math

import torch
from torch import nn

SCHEMES = ("default", "lecun_normal")
# The std of a unit normal truncated to [-2, 2]: dividing by it makes the variance exact.
TRUNCATED_STD = 0.87962566103423978


@torch.no_grad()
def lecun_normal_(weight: torch.Tensor, generator: torch.Generator | None = None) -> None:
    """Fill a ``[fan_out, fan_in]`` weight in place: truncated normal, variance ``1/fan_in``."""
    std = math.sqrt(1.0 / weight.shape[1]) / TRUNCATED_STD
    nn.init.trunc_normal_(weight, 0.0, std, -2 * std, 2 * std, generator=generator)


def initialise(model: nn.Module, scheme: str) -> int:
    """Re-initialise every ``nn.Linear`` of ``model`` with ``scheme`` (see the module); returns
    how many layers changed (0 for ``default``).

    Raises:
        ValueError: an unknown scheme.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown weight_init {scheme!r}; choose from {', '.join(SCHEMES)}")
    if scheme == "default":
        return 0
    layers = [m for m in model.modules() if isinstance(m, nn.Linear)]
    for layer in layers:
        lecun_normal_(layer.weight)
        if layer.bias is not None:
            nn.init.zeros_(layer.bias)
    return len(layers)
