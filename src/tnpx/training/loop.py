"""Training loop: one process or many (``torchrun`` + DDP), resumable, reproducible.

Each step's batch is a pure function of ``(seed, step, rank)``, and a checkpoint holds the
model, optimiser and schedule state, so a run killed at any point and resumed from its last
checkpoint ends with exactly the weights of an uninterrupted run.

Run directory (``train.out_dir``): ``config.yaml``, ``metrics.csv``, ``tensorboard/``,
``checkpoints/last.pt`` (training state, written atomically every ``checkpoint_every``
steps and on SIGTERM/SIGINT) and ``model.pt`` (final weights). Reading and writing the
checkpoint and the metrics log is :mod:`tnpx.training.state`, setting a run up (device,
sampler, checks, fine-tuning's weights) :mod:`tnpx.training.setup`; this module is the loop.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from ..checkpoint import load, save
from ..config import ExperimentConfig, config_to_yaml
from ..data import TaskSampler, batch_at
from ..models import NeuralProcess, build_model
from ..weight_init import initialise
from .batches import BatchStream
from .best import BestSoFar
from .ema import WeightAverage
from .guard import TrainingDiverged, all_finite, what_diverged
from .optim import (
    build_optimizer,
    build_schedule,
    clip_gradients,
    evaluation_weights,
    is_schedule_free,
    parameter_groups,
)
from .setup import (
    StopFlag,
    build_train_sampler,
    check_data_dims,
    check_missing_outputs,
    distributed,
    initialise_from,
    resolve_device,
)
from .state import (  # noqa: F401 (experiment_of: importable from here, as before)
    MetricLog,
    experiment_of,
    last_checkpoint,
    recorded_best,
    recorded_ema,
    recorded_seconds,
    remove_stale_temporaries,
    restore_training_state,
    save_training_state,
)


@dataclass
class TrainResult:
    model: NeuralProcess
    out_dir: Path
    steps_done: int
    final_loss: float
    stopped_early: bool
    train_seconds: float  # wall time of the training steps, summed over resumed runs


class _Objective(torch.nn.Module):
    """``model.training_loss(batch)`` as a module's forward, so that DDP (which hooks the
    forward of the module it wraps) sees the whole loss computation."""

    def __init__(self, model: NeuralProcess):
        super().__init__()
        self.model = model

    def forward(self, batch) -> torch.Tensor:
        return self.model.training_loss(batch)


@torch.no_grad()
def validation_ll(
    model: NeuralProcess, sampler: TaskSampler, n_batches: int, device: torch.device
) -> float:
    """Mean LL per target on ``n_batches`` fixed held-out batches (split ``val``)."""
    was_training = model.training
    model.eval()
    lls = [
        model.log_likelihood(batch_at(sampler, i, split="val").to(device)) for i in range(n_batches)
    ]
    model.train(was_training)
    return torch.cat(lls).mean().item()


def _kept(ckpt_path: Path) -> str:
    """What a diverged run leaves to resume from, for its message."""
    return f"last good checkpoint: {ckpt_path}" if ckpt_path.exists() else "no checkpoint yet"


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
    rank, world = distributed()
    device = resolve_device(cfg.train.device)
    if device.type == "cuda" and world > 1:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    out_dir = Path(cfg.train.out_dir)
    ckpt_path = last_checkpoint(out_dir)
    main = rank == 0
    if main:
        out_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(out_dir)  # left by a write that was killed
        (out_dir / "config.yaml").write_text(config_to_yaml(cfg))
    sampler = sampler or build_train_sampler(cfg)
    check_data_dims(cfg, sampler)

    torch.manual_seed(cfg.train.seed)  # identical initial weights on every rank
    model = build_model(
        cfg.model["name"],
        cfg.model.get("dim_x", 1),
        cfg.model.get("dim_y", 1),
        **cfg.model_options(),
    ).to(device)
    check_missing_outputs(cfg, sampler, model)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not named:
        raise ValueError(f"model {cfg.model['name']!r} has no trainable parameters")
    params = [p for _, p in named]
    optimizer = build_optimizer(parameter_groups(named, cfg.optim), cfg.optim)
    schedule = build_schedule(optimizer, cfg.schedule, cfg.train.steps)
    start, seconds_before = 0, 0.0
    resuming = resume and ckpt_path.exists()
    if cfg.train.init_from and not resuming:
        initialise_from(model, cfg.train.init_from)
    elif not resuming:
        initialise(model, cfg.train.weight_init)
    best = BestSoFar.from_config(
        cfg.train.keep_best, cfg.train.patience, recorded_best(ckpt_path) if resuming else None
    )
    if best.patience is not None and world > 1:
        raise ValueError("train.patience needs a single process (validation runs on rank 0)")
    if resuming:
        start, seconds_before = restore_training_state(ckpt_path, model, optimizer, schedule)
        done_before = start >= cfg.train.steps or best.stopped
        if done_before and (out_dir / "model.pt").exists():
            if main:
                print(f"{out_dir}: finished ({start} of {cfg.train.steps} steps); nothing to do")
            # The run's result is its model.pt (the best or averaged weights, if it kept them)
            model.load_state_dict(load(out_dir / "model.pt").state_dict())
            return TrainResult(model, out_dir, start, float("nan"), False, seconds_before)
        if main:
            print(f"resuming from {ckpt_path} at step {start}")
    ema = _weight_average(cfg, model, ckpt_path if resuming else None, main)
    evaluated = ema.module if ema is not None else model  # what validation and model.pt use
    objective: torch.nn.Module = _Objective(model)
    if world > 1:  # gradients are averaged across processes inside the wrapper's backward
        objective = torch.nn.parallel.DistributedDataParallel(
            objective, device_ids=[device.index] if device.type == "cuda" else None
        )

    t_start = time.perf_counter()

    def elapsed() -> float:
        return seconds_before + time.perf_counter() - t_start

    def checkpoint(step: int) -> None:
        if main:
            save_training_state(
                ckpt_path, model, optimizer, schedule, step, elapsed(), cfg, best.state(),
                ema.state_dict() if ema is not None else None,
            )  # fmt: skip

    log = MetricLog(out_dir, main, start)
    bar = _progress_bar(cfg, start) if main and cfg.train.progress else None
    model.train()
    with BatchStream(sampler, rank, cfg.train.prefetch) as batches:
        loss_value, stopped, step = float("nan"), False, start
        t_last, steps_since = time.perf_counter(), 0
        for step in range(start, cfg.train.steps):
            batch = batches.get(step).to(device)
            loss = objective(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            clip_gradients(params, cfg.train.clip_value, cfg.train.clip_norm)
            optimizer.step()
            schedule.step()
            if not all_finite(loss, params):  # before any checkpoint of this step's weights
                log.close()
                if bar is not None:  # so the error starts on a line of its own
                    bar.close()
                raise TrainingDiverged(
                    f"{what_diverged(loss, named)} at step {step}; {_kept(ckpt_path)}"
                )
            if ema is not None:
                ema.update(model)
            loss_value, steps_since = loss.item(), steps_since + 1
            done = step + 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
            if done % cfg.train.log_every == 0 or done == cfg.train.steps:
                now = time.perf_counter()
                rate = steps_since / max(now - t_last, 1e-9)
                t_last, steps_since = now, 0
                val = ""
                if main and (done % cfg.train.val_every == 0 or done == cfg.train.steps):
                    batches.idle()  # the sampler serves one thread at a time
                    with evaluation_weights(optimizer):  # schedule-free: its average
                        val = validation_ll(evaluated, sampler, cfg.train.val_batches, device)
                        if best.enabled and best.update(done, val):
                            save(evaluated, out_dir / "best.pt", experiment=config_to_yaml(cfg))
                    if bar is not None:
                        bar.set_postfix(loss=f"{loss_value:.3f}", val_ll=f"{val:.3f}")
                log.write(
                    done,
                    loss=loss_value,
                    lr=schedule.get_last_lr()[0],
                    steps_per_s=round(rate, 3),
                    val_ll=val,
                )
            if best.stopped:  # patience: a finished run, with its best validated weights
                if main:
                    print(
                        f"stopped at step {done}: no better validation LL in "
                        f"{best.patience} validations (best {best.best_ll:.4f} at step "
                        f"{best.best_step})"
                    )
                break
            if done % cfg.train.checkpoint_every == 0:
                checkpoint(done)
            out_of_time = (  # the last step ends the run normally, whatever the clock says
                max_seconds is not None
                and done < cfg.train.steps
                and time.perf_counter() - t_start >= max_seconds
            )
            if stop.requested or done == stop_at or out_of_time:
                checkpoint(done)
                stopped = True
                if main:
                    if bar is not None:
                        bar.close()
                    why = (
                        "by signal"
                        if stop.requested
                        else "as asked (stop_at)"
                        if done == stop_at
                        else f"at the time budget ({max_seconds / 60:.4g} min)"
                    )
                    rate = (done - start) / max(time.perf_counter() - t_start, 1e-9)
                    print(
                        f"stopped {why} at step {done} of {cfg.train.steps} "
                        f"({rate:.3g} steps/s this session); resume with --resume"
                    )
                break
    if bar is not None:
        bar.close()
    log.close()
    steps_done = step + 1 if cfg.train.steps > start else start
    if not stopped:
        checkpoint(steps_done)  # the training iterate, which a resumed run continues from
    if is_schedule_free(optimizer):  # the result is the weights it evaluates
        optimizer.eval()
    if not stopped and main:
        _save_final_model(evaluated, out_dir, cfg, sampler, best, steps_done, elapsed())
    if world > 1:
        dist.barrier()
    return TrainResult(evaluated, out_dir, steps_done, loss_value, stopped, elapsed())


def _weight_average(
    cfg: ExperimentConfig, model: NeuralProcess, resumed_from: Path | None, main: bool
) -> WeightAverage | None:
    """The run's weight average (``train.ema_decay``), restored from a resumed checkpoint."""
    if cfg.train.ema_decay is None:
        return None
    ema = WeightAverage(model, cfg.train.ema_decay)
    state = recorded_ema(resumed_from) if resumed_from is not None else None
    if state is not None:
        ema.load_state_dict(state)
    elif resumed_from is not None and main:  # a run that averaged nothing before: from here
        print(f"{resumed_from} holds no weight average; averaging starts at this step")
    return ema


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


def _save_final_model(
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
        extra["normalisation"] = normalisation
    save(model, out_dir / "model.pt", **extra)


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
