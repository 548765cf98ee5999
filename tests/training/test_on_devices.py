"""A short training run on each device (``tests/helpers/devices.py``: the CPU, and CUDA where
there is one), in each ``train.precision``, and compiled on CUDA: what
``benchmarks/gpu_check.sh`` runs on a GPU (``pytest -m cuda``)."""

from __future__ import annotations

import pytest
import torch

from tests.helpers.devices import CUDA_ONLY, DEVICES
from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.checkpoint import load
from tnpx.config import load_config
from tnpx.training.loop import fit


def short_run(tmp_path, device: str, **train):
    cfg = load_config(
        write_tiny(tmp_path), tiny_overrides(tmp_path, steps=6, device=device, **train)
    )
    return fit(cfg)


@pytest.mark.parametrize(
    "precision", ["32", "bf16-mixed", pytest.param("16-mixed", marks=pytest.mark.slow)]
)
@pytest.mark.parametrize("device", DEVICES)
def test_a_short_run_trains_on_the_device(device: str, precision: str, tmp_path):
    result = short_run(tmp_path, device, precision=precision)
    assert result.steps_done == 6 and result.final_loss == result.final_loss  # finite, not NaN
    assert {p.device.type for p in result.model.parameters()} == {device}
    saved = load(result.out_dir / "model.pt")  # a checkpoint loads on the CPU, float32
    assert {p.dtype for p in saved.parameters()} == {torch.float32}


@pytest.mark.parametrize("device", CUDA_ONLY)
def test_a_compiled_run_on_the_device(device: str, tmp_path):
    """``train.compile`` with inductor (Triton kernels on a GPU), in bf16-mixed."""
    torch._dynamo.reset()
    result = short_run(tmp_path, device, compile="true", precision="bf16-mixed")
    assert result.steps_done == 6 and result.final_loss == result.final_loss
