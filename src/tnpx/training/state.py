"""A training run's bookkeeping on disk: the resumable checkpoint, the final model and the
metrics log.

``<out_dir>/checkpoints/last.pt`` holds the model record (:func:`tnpx.checkpoint.model_record`)
plus ``train_state`` (step, optimiser and schedule state, training seconds so far) and the
experiment config as YAML; ``<out_dir>/metrics.csv`` (and ``tensorboard/`` when installed) the
logged metrics. The training loop itself is :mod:`tnpx.training.loop`.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ..checkpoint import (
    CheckpointError,
    atomic_save,
    experiment_from_record,
    load,
    model_from_record,
    model_record,
    read_checkpoint,
    save,
    state_mismatch,
)
from ..config import ExperimentConfig, config_to_yaml
from ..config.parsing import first_line
from ..models import NeuralProcess
from .best import BestSoFar

if TYPE_CHECKING:  # the sampler's type only: reading a run's state needs no data
    from ..data import TaskSampler


def last_checkpoint(out_dir: Path) -> Path:
    """Where a run keeps its resumable training state."""
    return out_dir / "checkpoints" / "last.pt"


def run_files(out_dir: Path) -> list[Path]:
    """The files that show ``out_dir`` holds a run: its checkpoint and its final model."""
    return [last_checkpoint(out_dir), out_dir / "model.pt"]


def claim_run_folder(out_dir: Path, resume: bool, overwrite: bool) -> None:
    """Make ``out_dir`` ready for a run, never silently over an earlier one: a folder that
    holds a run is refused unless the run is resumed, or ``overwrite`` asks to train afresh
    (its checkpoint and model are then removed, so no later resume picks up the old run).

    Raises:
        ValueError: ``out_dir`` holds a run and neither ``resume`` nor ``overwrite`` is set,
            or ``resume`` is set where there is a final model but no checkpoint to continue.
    """
    checkpoint, final = run_files(out_dir)
    if resume and not checkpoint.exists() and final.exists():
        raise ValueError(
            f"{out_dir} holds {final.name} but no checkpoint to resume from; "
            "pass --overwrite (overwrite=True in tnpx.train) to train afresh over it"
        )
    found = [f for f in (checkpoint, final) if f.exists()]
    if resume or not found:
        return
    if not overwrite:
        raise ValueError(
            f"{out_dir} already holds a run ({found[0]}); pass --resume to continue it or "
            "--overwrite to train afresh over it (resume=True / overwrite=True in tnpx.train)"
        )
    for f in found:
        f.unlink(missing_ok=True)  # torchrun: every rank claims the folder


def remove_stale_temporaries(out_dir: Path) -> list[Path]:
    """Delete the temporary files of checkpoint writes that were killed mid-write
    (:func:`tnpx.checkpoint.atomic_save` names them ``.NAME.*.tmp``); returns them."""
    stale = []
    for target in run_files(out_dir):
        if target.parent.is_dir():
            stale += sorted(target.parent.glob(f".{target.name}.*.tmp"))
    for f in stale:
        f.unlink(missing_ok=True)
    return stale


def save_training_state(
    path: Path,
    model: NeuralProcess,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    step: int,
    seconds: float,
    cfg: ExperimentConfig,
    best: dict | None = None,
    ema: dict | None = None,
    scaler: dict | None = None,
) -> None:
    """Write (atomically) everything a resumed run needs to continue after ``step``
    (``best``: the best validation so far, :class:`tnpx.training.best.BestSoFar`'s state;
    ``ema``: the averaged weights, :class:`tnpx.training.ema.WeightAverage`'s state;
    ``scaler``: ``16-mixed``'s gradient scaler, :mod:`tnpx.training.precision`)."""
    train_state = {
        "step": step,
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "seconds": seconds,
        **({"best": best} if best else {}),
        **({"ema": ema} if ema else {}),
        **({"scaler": scaler} if scaler else {}),
    }
    record = {**model_record(model), "train_state": train_state, "experiment": config_to_yaml(cfg)}
    atomic_save(record, path)


def save_final_model(
    model: NeuralProcess,
    out_dir: Path,
    cfg: ExperimentConfig,
    sampler: TaskSampler,
    best: BestSoFar,
    steps_done: int,
    seconds: float,
) -> None:
    """``<out_dir>/model.pt`` of a finished run: the last step's weights, or the best
    validated ones under ``keep_best``, with the experiment and the training totals."""
    # The totals too, so a finished run's folder needs no checkpoints/last.pt.
    trained = {"steps": steps_done, "seconds": seconds}
    if best.enabled and (out_dir / "best.pt").exists():
        model.load_state_dict(load(out_dir / "best.pt").state_dict())
        trained |= {"best_step": best.best_step, "best_val_ll": best.best_ll,
                    "early_stopped": best.stopped}  # fmt: skip
    extra = {"experiment": config_to_yaml(cfg), "trained": trained}
    normalisation = getattr(sampler, "normalisation", None)
    if normalisation is not None:  # a user's data: predict maps with it (checkpoint.py)
        from .range_limits import with_range_limits  # reading a run's state needs no data

        extra["normalisation"] = with_range_limits(model, sampler, normalisation, cfg)
    save(model, out_dir / "model.pt", **extra)


def restore_training_state(
    path: Path,
    model: NeuralProcess,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
) -> tuple[int, float]:
    """Load the state :func:`save_training_state` wrote into ``model``, ``optimizer`` and
    ``schedule``; returns the step to continue from and the training seconds so far.

    Raises:
        CheckpointError: the file is no training checkpoint, or is one of another model or
            optimiser set-up than the config's (the message names the first difference).
    """
    record = read_checkpoint(path)
    train_state = record.get("train_state")
    if not isinstance(train_state, dict):
        raise CheckpointError(
            f"{path}: holds a model but no training state, so a run cannot resume from it; "
            "train afresh with --overwrite"
        )
    # The weights go through model_from_record (the one place a checkpoint's state dict is
    # read into a model), then into the trainer's own model, which the optimiser holds.
    saved = model_from_record(record, path).state_dict()
    mismatch = state_mismatch(saved, model.state_dict())
    if mismatch:
        raise CheckpointError(f"{path}: cannot resume: the config's model differs: {mismatch}")
    model.load_state_dict(saved)
    try:
        optimizer.load_state_dict(train_state["optimizer"])
        schedule.load_state_dict(train_state["schedule"])
        return int(train_state["step"]), float(train_state.get("seconds", 0.0))
    except (KeyError, ValueError, TypeError, RuntimeError) as err:
        raise CheckpointError(
            f"{path}: cannot resume: its optimiser or schedule state does not fit the "
            f"config's ({first_line(err)})"
        ) from err


def recorded_ema(path: Path) -> dict | None:
    """The averaged weights' state a training checkpoint stores (None if none)."""
    return read_checkpoint(path).get("train_state", {}).get("ema")


def recorded_scaler(path: Path) -> dict | None:
    """The gradient scaler's state a training checkpoint stores (None if none: another
    precision, or a checkpoint from before ``train.precision``)."""
    return read_checkpoint(path).get("train_state", {}).get("scaler")


def recorded_best(path: Path) -> dict | None:
    """The best-validation state a training checkpoint stores (None if none)."""
    return read_checkpoint(path).get("train_state", {}).get("best")


def recorded_progress(out_dir: Path) -> tuple[int, float | None] | None:
    """``(steps, seconds)`` a run has trained, summed over resumed slices: from its
    ``checkpoints/last.pt``, else from the totals a finished run's ``model.pt`` records (a
    finished run's folder may keep ``model.pt`` alone); None if neither says."""
    last = last_checkpoint(out_dir)
    if last.exists():
        state = read_checkpoint(last).get("train_state", {})
        return int(state.get("step", 0)), state.get("seconds")
    final = Path(out_dir) / "model.pt"
    if not final.exists():
        return None
    trained = read_checkpoint(final).get("trained")
    if trained:
        return int(trained["steps"]), trained.get("seconds")
    # Finished before model.pt recorded its totals, its last.pt since removed: the steps of
    # its metrics log and the time summed over the log's intervals (validation time excluded).
    return logged_progress(Path(out_dir) / "metrics.csv")


def logged_progress(path: Path) -> tuple[int, float | None] | None:
    """``(steps, seconds)`` from a ``metrics.csv``: its last step and each logged interval's
    steps over its speed, summed (None for the seconds where a row has no speed)."""
    if not path.is_file():
        return None
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    total, previous = 0.0, 0
    for row in rows:
        if not row.get("steps_per_s"):
            return int(rows[-1]["step"]), None
        total += (int(row["step"]) - previous) / float(row["steps_per_s"])
        previous = int(row["step"])
    return previous, total


def recorded_seconds(out_dir: Path) -> float | None:
    """The wall time of a run's training steps, summed over resumed runs (None if unknown)."""
    progress = recorded_progress(out_dir)
    return None if progress is None else progress[1]


def experiment_of(path: str | Path) -> ExperimentConfig | None:
    """The experiment config stored in a checkpoint, if it has one."""
    return experiment_from_record(read_checkpoint(path))


class MetricLog:
    """Metrics to ``metrics.csv`` and, if tensorboard is installed, TensorBoard."""

    FIELDS = ["step", "loss", "lr", "steps_per_s", "val_ll"]

    def __init__(self, out_dir: Path, enabled: bool, start_step: int):
        """A run starting at ``start_step`` keeps the rows logged up to that step (a resumed
        run re-does the steps after its checkpoint) and drops the rest."""
        self.enabled = enabled
        self.writer = None
        if not enabled:
            return
        self.path = out_dir / "metrics.csv"
        kept = []
        if self.path.exists() and start_step > 0:
            with self.path.open(newline="") as f:
                kept = [row for row in list(csv.reader(f))[1:] if int(row[0]) <= start_step]
        with self.path.open("w", newline="") as f:
            csv.writer(f).writerows([self.FIELDS, *kept])
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(out_dir / "tensorboard"))
        except ImportError:  # tensorboard is optional
            self.writer = None

    def write(self, step: int, **values) -> None:
        if not self.enabled:
            return
        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow([step] + [values.get(k, "") for k in self.FIELDS[1:]])
        if self.writer is not None:
            for k, v in values.items():
                if v != "" and v is not None:
                    self.writer.add_scalar(k, v, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
