"""Devices to parametrise a test over: the CPU always, CUDA where there is one.

The CUDA case carries the ``cuda`` marker (pyproject's ``markers``) and is skipped without a
CUDA device, so ``pytest -m cuda`` picks exactly the GPU cases (``benchmarks/gpu_check.sh``
runs them) and a CPU-only machine reports them as skipped, not passed.

    @pytest.mark.parametrize("device", DEVICES)
    def test_x(device: str): ...
"""

from __future__ import annotations

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
ON_CUDA = [pytest.mark.cuda, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")]


def device_params(cpu: bool = True) -> list:
    """``pytest.param``s for ``"cpu"`` (unless ``cpu`` is False: a test whose CPU case other
    tests already are) and ``"cuda"`` (marked ``cuda``, skipped without one)."""
    return [pytest.param("cpu", id="cpu")] * cpu + [pytest.param("cuda", id="cuda", marks=ON_CUDA)]


DEVICES = device_params()
CUDA_ONLY = device_params(cpu=False)
