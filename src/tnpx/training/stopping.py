"""Why a training run ends (:class:`Stop`), the requests that end it early
(:class:`StopRules`: a signal, ``stop_at``, ``max_seconds``) and the lines it prints."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .best import BestSoFar
from .setup import StopFlag


class Stop(Enum):
    FINISHED = "finished"  # every step done
    PATIENCE = "patience"  # no better validation in train.patience validations: finished too
    SIGNAL = "by signal"  # SIGTERM/SIGINT
    STOP_AT = "as asked (stop_at)"
    OUT_OF_TIME = "at the time budget"  # max_seconds

    @property
    def interrupted(self) -> bool:
        """Stopped before the run ended: checkpointed, to be resumed (no ``model.pt``)."""
        return self in (Stop.SIGNAL, Stop.STOP_AT, Stop.OUT_OF_TIME)


@dataclass
class StopRules:
    """What may interrupt a run: a signal (``flag``), reaching step ``stop_at``, or
    ``max_seconds`` of this call's training."""

    flag: StopFlag
    stop_at: int | None = None
    max_seconds: float | None = None

    def interruption(self, done: int, steps: int, seconds: float) -> Stop | None:
        """Why to stop after step ``done`` of ``steps``, ``seconds`` into this call, if so."""
        if self.flag.requested:
            return Stop.SIGNAL
        if done == self.stop_at:
            return Stop.STOP_AT
        # the last step ends the run normally, whatever the clock says
        if self.max_seconds is not None and done < steps and seconds >= self.max_seconds:
            return Stop.OUT_OF_TIME
        return None

    def message(self, why: Stop, done: int, steps: int, rate: float) -> str:
        """The line an interrupted run prints (``rate``: steps/s of this call)."""
        words = why.value
        if why is Stop.OUT_OF_TIME:
            words = f"{words} ({self.max_seconds / 60:.4g} min)"
        return (
            f"stopped {words} at step {done} of {steps} "
            f"({rate:.3g} steps/s this session); resume with --resume"
        )


def patience_message(best: BestSoFar, done: int) -> str:
    """The line a run stopped for patience prints."""
    return (
        f"stopped at step {done}: no better validation LL in "
        f"{best.patience} validations (best {best.best_ll:.4f} at step "
        f"{best.best_step})"
    )
