"""A training step (``tnpx.training.step.train_step``) reads nothing back to the host except
what it must (issue 53, item 2).

Every host read of a tensor (``item``, ``bool``, ``int``, ``float``, ``tolist``) goes through
``aten._local_scalar_dense``, and ``nonzero`` has an output size that depends on values: a
``TorchDispatchMode`` records both, with where in tnpx or torch they were called from. On a GPU
each one waits for the device's queue to drain. The allowance per step, from the code:

- 1, the non-finite guard (``tnpx.training.guard.all_finite``): one fused test of the loss,
  every gradient and weight, before anything can checkpoint the step's weights. The training
  loop's ``loss.item()`` for its progress line comes after it, outside ``train_step``, and
  finds the queue already drained.
- reads of CPU tensors, not syncs on a GPU either: the optimiser's step counters (torch keeps
  Adam's ``step`` on the CPU unless ``capturable``) and the latent models' seed drawn from the
  CPU RNG (``seeded_generator``: CPU and GPU runs see the same draws).
- per model, where the computation needs a value (listed in ``MODEL_SYNCS`` with the reason).
- with missing outputs, 2: whether ``mask_yc`` and ``mask_yt`` mark anything missing
  (``tnpx.batch.partly_missing``), which keeps a complete batch's call the one without masks,
  bit for bit.

The model's value checks of its inputs (NaN, Inf, magnitude: three syncs per forward) and
the checks that padding leaves every task a target are off inside a step
(``tnpx.input_checks.trusted_values``). ``.cpu()`` on a CPU tensor dispatches
nothing, so it is counted by patching ``torch.Tensor.cpu``.

What it cannot catch on a CPU: a copy to the host written as ``.to("cpu")`` or
``.to(other_tensor_on_cpu)`` (a no-op here), and syncs inside CUDA-only kernels.
"""

from __future__ import annotations

import traceback
from unittest import mock

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.batch import target_mean
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.input_checks import trusted_values
from tnpx.training.session import open_session
from tnpx.training.step import train_step

GUARD = "all_finite"  # the one sync a step needs
CPU_READS = {
    "_get_value": "torch.optim: Adam's step counter, a CPU tensor on a GPU too",
    "seeded_generator": "a seed drawn from the CPU RNG (latent models)",
}
# Model -> {function that syncs: why the computation needs the value}
MODEL_SYNCS = {
    "convcnp": {"grid": "the grid's shape is sized from the data (1 read per call)"},
    "inc-tnp": {
        "training_loss": "the targets' order is seeded from the batch's values, so a resumed "
        "run is exact (1 read per step)",
        "training_plan": "draws the plan from a CPU generator (a CPU read)",
    },
}
FAMILIES = ["tnp", "te-tnp", "cnp", "convcnp", "np", "inc-tnp"]


class SyncRecorder(TorchDispatchMode):
    """Records the tnpx / torch.optim function behind each host read."""

    def __init__(self):
        super().__init__()
        self.callers: list[str] = []

    def record(self) -> None:
        frames = [
            f
            for f in traceback.extract_stack()[:-2]
            if "/tnpx/" in f.filename or "/torch/optim/" in f.filename
        ]
        self.callers.append(frames[-1].name if frames else "?")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default or func.overloadpacket in (
            torch.ops.aten.nonzero,
        ):
            self.record()
        return func(*args, **(kwargs or {}))


def recorded_step(name: str, tmp_path, *options: str, masks: bool = False) -> list[str]:
    """The callers of every host read during ``train_step`` for model ``name`` (config
    ``options``), on a GP batch; ``masks``: with padding in the context and the targets, and
    missing outputs where the model reads them."""
    overrides = [*tiny_overrides(tmp_path), f"model.name={name}", *options]
    run = open_session(load_config(write_tiny(tmp_path), overrides), False, None)
    run.model.train()
    batch = batch_at(run.sampler, 0, run.rank).to(run.device)
    if masks:
        add_masks(batch, run.model.reads_missing_outputs)
    recorder = SyncRecorder()
    real_cpu = torch.Tensor.cpu

    def counted_cpu(t, *args, **kwargs):
        recorder.record()
        return real_cpu(t, *args, **kwargs)

    with mock.patch.object(torch.Tensor, "cpu", counted_cpu), recorder:
        train_step(run, batch, 0)
    return recorder.callers


def add_masks(batch, missing_outputs: bool) -> None:
    """Pad the last context point and target of the first task; where ``missing_outputs``,
    mark an output of the second task's first context point and target missing."""
    batch.mask_c = torch.ones(batch.xc.shape[:2], dtype=torch.bool)
    batch.mask_t = torch.ones(batch.xt.shape[:2], dtype=torch.bool)
    batch.mask_c[0, -1] = batch.mask_t[0, -1] = False
    if missing_outputs:
        batch.mask_yc = torch.ones_like(batch.yc, dtype=torch.bool)
        batch.mask_yt = torch.ones_like(batch.yt, dtype=torch.bool)
        batch.mask_yc[1, 0] = batch.mask_yt[1, 0] = False


def unexpected(name: str, callers: list[str]) -> list[str]:
    allowed = {GUARD, *CPU_READS, *MODEL_SYNCS.get(name, {})}
    return [c for c in callers if c not in allowed]


@pytest.mark.filterwarnings("ignore:model.name=")  # the tiny config's tnp options
@pytest.mark.parametrize("name", FAMILIES)
def test_a_training_step_syncs_only_where_needed(name: str, tmp_path):
    callers = recorded_step(name, tmp_path)
    assert unexpected(name, callers) == [], callers
    assert callers.count(GUARD) == 1
    for caller, why in MODEL_SYNCS.get(name, {}).items():
        if "CPU read" not in why:  # a device read: at most one per step
            assert callers.count(caller) <= 1, (caller, callers)


def test_padded_batches_add_no_sync(tmp_path):
    """Padding (``mask_c``, ``mask_t``): the check that every task keeps a target
    (``target_mean``) is a value check, off inside a step."""
    callers = recorded_step("tnp", tmp_path, masks=True)
    assert unexpected("tnp", callers) == [], callers


def test_missing_outputs_read_whether_any_is_missing(tmp_path):
    """Missing outputs (``mask_yc``, ``mask_yt``): ``partly_missing`` reads each mask once, to
    take the complete-data path bit for bit where nothing is missing (2 reads per step)."""
    callers = recorded_step("tnp", tmp_path, "model.missing_outputs=true", masks=True)
    assert [c for c in unexpected("tnp", callers) if c != "partly_missing"] == [], callers
    assert callers.count("partly_missing") <= 2


def test_a_task_without_targets_is_caught_outside_a_step_only():
    """Outside a step the empty task is refused; inside it its score is NaN, and the
    non-finite guard stops the run."""
    values = torch.zeros(2, 3)
    mask_t = torch.tensor([[True, True, False], [False, False, False]])
    with pytest.raises(ValueError, match="task 1 has no real target"):
        target_mean(values, mask_t)
    with trusted_values():
        assert target_mean(values, mask_t).isnan().tolist() == [False, True]


def test_value_checks_inside_a_step_would_be_counted(tmp_path, monkeypatch):
    """Without ``trusted_values`` the model's input checks read each input back once per
    forward (``check_magnitude``: xc, yc, xt); the count sees them."""
    import contextlib

    import tnpx.training.step as step

    monkeypatch.setattr(step, "trusted_values", contextlib.nullcontext)
    callers = recorded_step("tnp", tmp_path)
    assert unexpected("tnp", callers) == ["check_magnitude"] * 3


def test_mixed_precision_adds_only_the_scalers_sync(tmp_path):
    """``bf16-mixed`` adds no host read; ``16-mixed``'s gradient scaler reads once whether it
    found an Inf (``GradScaler.step``, called from ``StepPrecision.step``), as torch's and
    Lightning's do."""
    bf16 = recorded_step("tnp", tmp_path / "bf16", "train.precision=bf16-mixed")
    assert unexpected("tnp", bf16) == [], bf16
    assert bf16.count(GUARD) == 1
    fp16 = recorded_step("tnp", tmp_path / "fp16", "train.precision=16-mixed")
    assert unexpected("tnp", fp16) == ["step"], fp16
