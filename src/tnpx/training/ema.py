"""An exponential moving average of the weights (``train.ema_decay``), one lever of
time to accuracy: validation, ``best.pt`` and the final ``model.pt`` use the averaged weights,
while the optimiser keeps stepping the raw ones.

After each optimiser step ``w_ema <- decay * w_ema + (1 - decay) * w`` (buffers too); the first
update copies the weights. The averaging is torch's own (``torch.optim.swa_utils``), kept in the
resumable checkpoint so a resumed run ends as an uninterrupted one.
"""

from __future__ import annotations

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from ..models import NeuralProcess


class WeightAverage:
    """The averaged copy of ``model``; ``module`` is a :class:`NeuralProcess` like the model."""

    def __init__(self, model: NeuralProcess, decay: float):
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"ema_decay must be in [0, 1), got {decay}")
        self.decay = decay
        self._averaged = AveragedModel(
            model, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=True
        )
        for p in self._averaged.parameters():  # never trained itself: no gradients kept
            p.requires_grad_(False)

    @property
    def module(self) -> NeuralProcess:
        return self._averaged.module

    @property
    def updates(self) -> int:
        """How many steps have been averaged so far."""
        return int(self._averaged.n_averaged.item())

    @torch.no_grad()
    def update(self, model: NeuralProcess) -> None:
        """Average in the weights ``model`` has after this step."""
        self._averaged.update_parameters(model)

    def state_dict(self) -> dict:
        return {"decay": self.decay, "averaged": self._averaged.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if float(state["decay"]) != self.decay:
            raise ValueError(
                f"the checkpoint averaged weights with ema_decay {state['decay']}, "
                f"the config asks for {self.decay}"
            )
        self._averaged.load_state_dict(state["averaged"])
