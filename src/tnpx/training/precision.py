"""Mixed precision for a training step (``train.precision``), as Lightning's ``MixedPrecision``
plugin does it:

- ``32`` (the default): float32 throughout; the step is exactly what it was before this option.
- ``bf16-mixed``: the forward and the loss run under ``torch.autocast`` to bfloat16 (matrix
  products and attention in bfloat16, reductions, norms and the likelihood in float32); the
  backward follows the forward's dtypes, and the gradients, clipping and optimiser step are
  float32 on float32 weights. bfloat16 has float32's range, so no loss scaling.
- ``16-mixed``: autocast to float16, whose range is narrow, with a gradient scaler
  (``torch.amp.GradScaler``): the loss is multiplied by a scale before the backward so small
  gradients do not underflow, the gradients are divided by it again before clipping, and a
  step whose gradients hold Inf or NaN is skipped (the scale halves; it doubles after 2,000
  good steps). The scaler reads whether it found Inf back to the host: one sync per step more
  than the other modes. Its state is part of the resumable checkpoint.

Autocast takes its device type from the batch (``cpu``, ``cuda``, ``mps``). The weights stay
float32 in every mode, so ``model.pt`` is the same kind of file; validation runs in float32.
On a CPU both mixed modes work, several times slower than float32 unless the CPU has
bfloat16 arithmetic (``results/perf/mixed_precision.md``): they are meant for GPUs.
"""

from __future__ import annotations

import warnings
from contextlib import AbstractContextManager, nullcontext

import torch
from torch.optim.lr_scheduler import LRScheduler

from ..config.sections import PRECISIONS

AUTOCAST_DTYPES = {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}


class StepPrecision:
    """The precision a training step runs in: its autocast, and for ``16-mixed`` its scaler.

    Attributes:
        name: one of :data:`tnpx.config.sections.PRECISIONS`.
        dtype: autocast's dtype (None for ``32``).
        scaler: the gradient scaler (``16-mixed`` only, else None).
    """

    def __init__(self, name: str, device: torch.device):
        if name not in PRECISIONS:
            raise ValueError(
                f"unknown train.precision {name!r}; choose from {', '.join(PRECISIONS)}"
            )
        self.name = name
        self.dtype = AUTOCAST_DTYPES.get(name)
        if self.dtype is not None and not torch.amp.is_autocast_available(device.type):
            raise ValueError(
                f"train.precision={name} needs torch.autocast, which torch has no support for "
                f"on {device.type}; use train.precision=32 there"
            )
        self.scaler = torch.amp.GradScaler(device.type) if name == "16-mixed" else None

    def autocast(self, device: torch.device) -> AbstractContextManager:
        """The context the forward and loss run in, on ``device`` (the batch's)."""
        if self.dtype is None:
            return nullcontext()
        return torch.autocast(device.type, dtype=self.dtype)

    def backward(self, loss: torch.Tensor) -> None:
        """The backward of ``loss`` (scaled first under ``16-mixed``)."""
        (loss if self.scaler is None else self.scaler.scale(loss)).backward()

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """Divide the gradients by the scale again, so clipping sees their true values."""
        if self.scaler is not None:
            self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer, schedule: LRScheduler) -> None:
        """The optimiser's step, then the schedule's. Under ``16-mixed`` the optimiser's is
        skipped when a gradient is Inf or NaN; the schedule counts the step all the same (it
        runs by step number, as Lightning's does)."""
        if self.scaler is None:
            optimizer.step()
            schedule.step()
            return
        self.scaler.step(optimizer)
        self.scaler.update()
        with warnings.catch_warnings():  # torch's warning when the first step was skipped
            warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step", UserWarning)
            schedule.step()

    @property
    def skips_steps(self) -> bool:
        """Whether non-finite gradients skip a step here (the scaler's) instead of ending the
        run: then the guard checks only the loss and the weights."""
        return self.scaler is not None

    def state_dict(self) -> dict | None:
        """The scaler's state for a checkpoint (numbers only), or None without one."""
        return None if self.scaler is None else self.scaler.state_dict()

    def load_state_dict(self, state: dict | None) -> None:
        """Restore :meth:`state_dict`'s state; None (a checkpoint of another precision or from
        before this option) leaves a fresh scaler."""
        if self.scaler is not None and state:
            self.scaler.load_state_dict(state)

    def hint(self) -> str:
        """What to try when a run in this precision diverges (for the guard's message)."""
        if self.name == "16-mixed":
            return "; float16 overflows where bfloat16 does not: try train.precision=bf16-mixed"
        return ""
