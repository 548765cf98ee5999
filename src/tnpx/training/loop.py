"""Training loop: one process or many (``torchrun`` + DDP), resumable, reproducible.

Each step's batch is a pure function of ``(seed, step, rank)``, and a checkpoint holds the
model, optimiser and schedule state, so a run killed at any point and resumed from its last
checkpoint ends with exactly the weights of an uninterrupted run.

Run directory (``train.out_dir``): ``config.yaml``, ``metrics.csv``, ``tensorboard/``,
``checkpoints/last.pt`` (training state, written atomically every ``checkpoint_every``
steps and on SIGTERM/SIGINT) and ``model.pt`` (final weights). Reading and writing the
checkpoint and the metrics log is :mod:`tnpx.training.state`; this module is the loop.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from ..checkpoint import load, save, state_mismatch
from ..config import ExperimentConfig, config_to_yaml
from ..data import TaskSampler, batch_at, build_sampler
from ..models import NeuralProcess, build_model
from ..models.base import missing_outputs_refusal
from ..weight_init import initialise
from .batches import BatchStream
from .best import BestSoFar
from .guard import TrainingDiverged, all_finite, what_diverged
from .optim import build_optimizer, build_schedule, clip_gradients, parameter_groups
from .state import (  # noqa: F401 (experiment_of: importable from here, as before)
    MetricLog,
    experiment_of,
    last_checkpoint,
    recorded_best,
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


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("train.device=cuda but no CUDA device is available")
    return torch.device(name)


def build_train_sampler(cfg: ExperimentConfig) -> TaskSampler:
    return build_sampler(
        cfg.data["name"], cfg.data.get("batch_size", 16), cfg.train.seed, **cfg.data_options()
    )


def _distributed() -> tuple[int, int]:
    """(rank, world size); initialises the process group under ``torchrun``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
    return (dist.get_rank(), world) if world > 1 else (0, 1)


class _Objective(torch.nn.Module):
    """``model.training_loss(batch)`` as a module's forward, so that DDP (which hooks the
    forward of the module it wraps) sees the whole loss computation."""

    def __init__(self, model: NeuralProcess):
        super().__init__()
        self.model = model

    def forward(self, batch) -> torch.Tensor:
        return self.model.training_loss(batch)


class _StopFlag:
    """Turns SIGTERM/SIGINT into a request to checkpoint and stop at the end of the step."""

    def __init__(self):
        self.requested = False
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def _handle(self, signum, frame):
        self.requested = True

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


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


def check_data_dims(cfg: ExperimentConfig, sampler: TaskSampler) -> None:
    """The model section's ``dim_x``/``dim_y`` must match the data's inputs and outputs.

    Raises:
        ValueError: they differ (one line naming both and the keys to set).
    """
    want = (cfg.model.get("dim_x", 1), cfg.model.get("dim_y", 1))
    got = (getattr(sampler, "dim_x", want[0]), getattr(sampler, "dim_y", want[1]))
    if got != want:
        raise ValueError(
            f"data {cfg.data['name']!r} has {got[0]} input(s) and {got[1]} output(s) but the "
            f"model section says dim_x={want[0]}, dim_y={want[1]}: set model.dim_x={got[0]} "
            f"model.dim_y={got[1]}"
        )


def check_missing_outputs(
    cfg: ExperimentConfig, sampler: TaskSampler, model: NeuralProcess
) -> None:
    """Data with missing output values (a sampler's ``missing_outputs``, e.g. a table with
    gaps) needs a model that reads them.

    Raises:
        ValueError: the model does not (one line: the option to set, or the models that can).
    """
    if getattr(sampler, "missing_outputs", False) and not model.reads_missing_outputs:
        why = missing_outputs_refusal(model)
        raise ValueError(f"data {cfg.data['name']!r} has missing output values and {why}")


def initialise_from(model: NeuralProcess, source: str) -> None:
    """Copy the weights of checkpoint ``source`` (a path or a pretrained model's name) into
    ``model``, which must have the same architecture (fine-tuning, ``train.init_from``).

    Raises:
        ValueError: the checkpoint holds another model, or one of another size (one line).
    """
    from ..zoo import checkpoint_file

    path = checkpoint_file(source)
    donor = load(path)
    if type(donor) is not type(model):
        raise ValueError(
            f"train.init_from={source}: the checkpoint holds a {type(donor).__name__}, "
            f"the config builds a {type(model).__name__}"
        )
    mismatch = state_mismatch(donor.state_dict(), model.state_dict())
    if mismatch:
        raise ValueError(f"train.init_from={source}: {mismatch} (set the model section to match)")
    model.load_state_dict(donor.state_dict())


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
    with _StopFlag() as stop:
        return _fit(cfg, resume, sampler, stop_at, stop, max_seconds)


def _fit(
    cfg: ExperimentConfig,
    resume: bool,
    sampler: TaskSampler | None,
    stop_at: int | None,
    stop: _StopFlag,
    max_seconds: float | None = None,
) -> TrainResult:
    rank, world = _distributed()
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
            return TrainResult(model, out_dir, start, float("nan"), False, seconds_before)
        if main:
            print(f"resuming from {ckpt_path} at step {start}")
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
                ckpt_path, model, optimizer, schedule, step, elapsed(), cfg, best.state()
            )

    log = MetricLog(out_dir, main, start)
    bar = None
    if main and cfg.train.progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=cfg.train.steps,
            initial=start,
            desc=f"train {cfg.model['name']}",
            dynamic_ncols=True,
            mininterval=0.5,
        )
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
                    val = validation_ll(model, sampler, cfg.train.val_batches, device)
                    if best.enabled and best.update(done, val):
                        save(model, out_dir / "best.pt", experiment=config_to_yaml(cfg))
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
        checkpoint(steps_done)
        if main:
            # The totals too, so a finished run's folder needs no checkpoints/last.pt.
            trained = {"steps": steps_done, "seconds": elapsed()}
            if best.enabled and (out_dir / "best.pt").exists():
                model.load_state_dict(load(out_dir / "best.pt").state_dict())
                trained |= {"best_step": best.best_step, "best_val_ll": best.best_ll,
                            "early_stopped": best.stopped}  # fmt: skip
            extra = {"experiment": config_to_yaml(cfg), "trained": trained}
            normalisation = getattr(sampler, "normalisation", None)
            if normalisation is not None:  # a user's data: predict maps with it (checkpoint.py)
                extra["normalisation"] = normalisation
            save(model, out_dir / "model.pt", **extra)
    if world > 1:
        dist.barrier()
    return TrainResult(model, out_dir, steps_done, loss_value, stopped, elapsed())


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
