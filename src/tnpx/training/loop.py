"""Training loop: one process or many (``torchrun`` + DDP), resumable, reproducible.

Each step's batch is a pure function of ``(seed, step, rank)``, and a checkpoint holds the
model, optimiser and schedule state, so a run killed at any point and resumed from its last
checkpoint ends with exactly the weights of an uninterrupted run.

Run directory (``train.out_dir``): ``config.yaml``, ``metrics.csv``, ``tensorboard/``,
``checkpoints/last.pt`` (training state, written atomically every ``checkpoint_every``
steps and on SIGTERM/SIGINT) and ``model.pt`` (final weights). This module is the loop; its
parts are modules of their own: the set-up (:mod:`~tnpx.training.session`, with the helpers of
:mod:`~tnpx.training.setup`), the step (:mod:`~tnpx.training.step`), validation
(:mod:`~tnpx.training.validation`), the metrics log and progress bar
(:mod:`~tnpx.training.progress`), why a run stops (:mod:`~tnpx.training.stopping`) and the
files on disk (:mod:`~tnpx.training.state`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch.distributed as dist

from ..checkpoint import load
from ..config import ExperimentConfig
from ..data import TaskSampler
from ..models import NeuralProcess
from .batches import BatchStream
from .guard import TrainingDiverged
from .optim import is_schedule_free
from .progress import Progress
from .session import Session, open_session

# importable from here, as before
from .setup import StopFlag, build_train_sampler, initialise_from, resolve_device  # noqa: F401
from .state import experiment_of, recorded_seconds, save_final_model  # noqa: F401
from .step import train_step
from .stopping import Stop, StopRules, patience_message
from .validation import validate, validation_ll  # noqa: F401


@dataclass
class TrainResult:
    model: NeuralProcess
    out_dir: Path
    steps_done: int
    final_loss: float
    stopped_early: bool
    train_seconds: float  # wall time of the training steps, summed over resumed runs


def fit(
    cfg: ExperimentConfig,
    resume: bool = False,
    sampler: TaskSampler | None = None,
    stop_at: int | None = None,
    max_seconds: float | None = None,
) -> TrainResult:
    """Train the model ``cfg`` describes; returns the trained model and where its files are.

    Args:
        cfg: the experiment config.
        resume: continue from ``<out_dir>/checkpoints/last.pt`` if it exists; a run that has
            already finished (its checkpoint at the last step and ``model.pt`` written) is
            returned as it is, writing nothing.
        sampler: a task sampler to use instead of the one ``cfg.data`` names (tests).
        stop_at: checkpoint and stop after this many steps (e.g. a job's time slice); the
            schedule still runs over ``cfg.train.steps``, and ``resume`` continues the run.
        max_seconds: checkpoint and stop at the end of the first step that ends this many
            seconds (wall clock) after this call's training began: a long run in slices.

    Raises:
        TrainingDiverged: the loss, a gradient or a weight became NaN/Inf (the last good
            checkpoint is kept: the guard runs after every step, before any checkpoint).
    """
    # The signal handlers go in first, so a SIGTERM that arrives while the run is still being
    # set up also ends in a checkpoint and a clean exit, not a killed process.
    if max_seconds is not None and max_seconds <= 0:
        raise ValueError(f"max_seconds must be > 0, got {max_seconds}")
    with StopFlag() as stop:
        return _fit(cfg, resume, sampler, stop_at, stop, max_seconds)


def _fit(
    cfg: ExperimentConfig,
    resume: bool,
    sampler: TaskSampler | None,
    stop_at: int | None,
    stop: StopFlag,
    max_seconds: float | None = None,
) -> TrainResult:
    run = open_session(cfg, resume, sampler)
    if run.finished:  # resumed after its end: the result is its model.pt
        return TrainResult(
            run.model, run.out_dir, run.start, float("nan"), False, run.seconds_before
        )
    why, done, loss = _run_steps(run, StopRules(stop, stop_at, max_seconds))
    if not why.interrupted:
        run.checkpoint(done)  # the training iterate, which a resumed run continues from
    if is_schedule_free(run.optimizer):  # the result is the weights it evaluates
        run.optimizer.eval()
    if not why.interrupted and run.main:
        save_final_model(
            run.evaluated, run.out_dir, cfg, run.sampler, run.best, done, run.elapsed()
        )
    if run.world > 1:
        dist.barrier()
    return TrainResult(run.evaluated, run.out_dir, done, loss, why.interrupted, run.elapsed())


def _run_steps(run: Session, rules: StopRules) -> tuple[Stop, int, float]:
    """Train from ``run.start`` to the last step or an earlier stop; returns why it ended, the
    steps done and the last step's loss."""
    progress = Progress(run)
    run.model.train()
    why, done, loss = Stop.FINISHED, run.start, float("nan")
    with BatchStream(run.sampler, run.rank, run.cfg.train.prefetch) as batches:
        for step in range(run.start, run.cfg.train.steps):
            try:
                loss = train_step(run, batches.get(step).to(run.device), step).item()
            except TrainingDiverged:
                progress.close()  # so the error starts on a line of its own
                raise
            done = step + 1
            progress.step(loss)
            stopping = _after_step(run, progress, batches, rules, done, loss)
            if stopping is not None:
                why = stopping
                break
    progress.close()
    return why, done, loss


def _after_step(
    run: Session, progress: Progress, batches: BatchStream, rules: StopRules, done: int, loss: float
) -> Stop | None:
    """Log, validate, keep the best weights and checkpoint as due after step ``done``;
    returns why the run stops here, if it does (an interrupted run is checkpointed)."""
    train = run.cfg.train
    if done % train.log_every == 0 or done == train.steps:
        rate = progress.rate()
        val = ""
        if run.main and (done % train.val_every == 0 or done == train.steps):
            val = validate(run, batches, done)
            progress.show_validation(loss, val)
        lr = run.schedule.get_last_lr()[0]
        progress.write(done, loss=loss, lr=lr, steps_per_s=round(rate, 3), val_ll=val)
    if run.best.stopped:  # patience: a finished run, with its best validated weights
        if run.main:
            print(patience_message(run.best, done))
        return Stop.PATIENCE
    if done % train.checkpoint_every == 0:
        run.checkpoint(done)
    why = rules.interruption(done, train.steps, time.perf_counter() - run.t_start)
    if why is not None:
        run.checkpoint(done)
        if run.main:
            progress.close_bar()
            rate = (done - run.start) / max(time.perf_counter() - run.t_start, 1e-9)
            print(rules.message(why, done, train.steps, rate))
    return why


def train_or_load(cfg: ExperimentConfig) -> tuple[NeuralProcess, float | None]:
    """The trained model of ``cfg``: loaded from ``<out_dir>/model.pt`` when the run has
    finished, otherwise trained (resuming from its last checkpoint). Returns the model and the
    wall time of its training steps, summed over resumed runs (``None`` if not recorded).

    Raises:
        RuntimeError: training was stopped (signal or ``stop_at``) before it finished.
    """
    out_dir = Path(cfg.train.out_dir)
    if not (out_dir / "model.pt").exists():
        result = fit(cfg, resume=True)
        if result.stopped_early:
            raise RuntimeError(
                f"training {out_dir} stopped at step {result.steps_done} of "
                f"{cfg.train.steps}; run again to resume"
            )
    return load(out_dir / "model.pt").eval(), recorded_seconds(out_dir)
