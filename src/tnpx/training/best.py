"""Keeping the best validated weights and stopping when validation stops improving.

``train.keep_best``: at every validation whose LL beats every earlier one, the weights are
written to ``<out_dir>/best.pt``, and the run's ``model.pt`` holds those weights, not the last
step's. ``train.patience = N`` (implies ``keep_best``): the run ends after ``N`` validations in
a row without a better LL, as a finished run (``model.pt`` written, resuming does nothing).
The record of the best so far travels in the training checkpoint, so a resumed run continues
the count exactly.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass


@dataclass
class BestSoFar:
    """The best validation so far: its LL and step, validations since, whether the run
    stopped for patience. ``enabled``: keep_best or patience is set."""

    enabled: bool = False
    patience: int | None = None
    best_ll: float = -math.inf
    best_step: int = 0
    since: int = 0
    stopped: bool = False

    @classmethod
    def from_config(cls, keep_best: bool, patience: int | None, state: dict | None = None):
        """A tracker for the run's options, continued from a checkpoint's ``state``."""
        tracker = cls(enabled=keep_best or patience is not None, patience=patience)
        if state:
            tracker.best_ll = float(state["best_ll"])
            tracker.best_step = int(state["best_step"])
            tracker.since = int(state["since"])
            tracker.stopped = bool(state.get("stopped", False))
        return tracker

    def update(self, step: int, val_ll: float) -> bool:
        """Record a validation at ``step``; True if it is the best so far."""
        if val_ll > self.best_ll:
            self.best_ll, self.best_step, self.since = val_ll, step, 0
            return True
        self.since += 1
        if self.patience is not None and self.since >= self.patience:
            self.stopped = True
        return False

    def state(self) -> dict:
        """What a checkpoint stores of it."""
        return {k: v for k, v in asdict(self).items() if k not in ("enabled", "patience")}
