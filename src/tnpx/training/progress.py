"""What a training run shows of its steps: the rows of ``metrics.csv`` (and TensorBoard,
:class:`tnpx.training.state.MetricLog`), a progress bar (``train.progress``), and the rate of
steps between two rows."""

from __future__ import annotations

import time

from ..config import ExperimentConfig
from .session import Session
from .state import MetricLog


class Progress:
    """The metric log and progress bar of ``run`` (both on rank 0 only)."""

    def __init__(self, run: Session):
        self.log = MetricLog(run.out_dir, run.main, run.start)
        self.bar = (
            _progress_bar(run.cfg, run.start) if run.main and run.cfg.train.progress else None
        )
        self._t_last, self._steps = time.perf_counter(), 0

    def step(self, loss: float) -> None:
        """Count a step that ended with ``loss``."""
        self._steps += 1
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(loss=f"{loss:.3f}", refresh=False)

    def rate(self) -> float:
        """Steps per second since the last call (or the start); starts the next count."""
        now = time.perf_counter()
        rate = self._steps / max(now - self._t_last, 1e-9)
        self._t_last, self._steps = now, 0
        return rate

    def show_validation(self, loss: float, val_ll: float) -> None:
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.3f}", val_ll=f"{val_ll:.3f}")

    def write(self, step: int, **values) -> None:
        """A row of ``metrics.csv`` (:attr:`MetricLog.FIELDS`)."""
        self.log.write(step, **values)

    def close_bar(self) -> None:
        """End the bar's line, so what is printed next starts on a line of its own."""
        if self.bar is not None:
            self.bar.close()

    def close(self) -> None:
        self.close_bar()
        self.log.close()


def _progress_bar(cfg: ExperimentConfig, start: int):
    """A tqdm bar over the run's steps, starting at ``start``."""
    from tqdm.auto import tqdm

    return tqdm(
        total=cfg.train.steps,
        initial=start,
        desc=f"train {cfg.model['name']}",
        dynamic_ncols=True,
        mininterval=0.5,
    )
