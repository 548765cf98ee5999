"""One call of :func:`tnpx.training.loop.fit`, set up: the objects the run trains with and how
far it has come (:class:`Session`), built by :func:`open_session`.

The set-up keeps a run reproducible: the seed, then the model, its starting weights and, when
resuming, the checkpoint's state, always in that order, so the random numbers drawn are the
same whether a run is fresh, resumed or spread over processes. The helpers it calls (device,
sampler, checks, fine-tuning's weights) are :mod:`tnpx.training.setup`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..checkpoint import load
from ..config import ExperimentConfig, config_to_yaml
from ..data import TaskSampler
from ..models import NeuralProcess, build_model
from ..weight_init import initialise
from .best import BestSoFar
from .compiled import CompiledObjective
from .ema import WeightAverage
from .optim import build_optimizer, build_schedule, parameter_groups
from .precision import StepPrecision
from .setup import (
    build_train_sampler,
    check_data_dims,
    check_missing_outputs,
    distributed,
    initialise_from,
    resolve_device,
)
from .state import (
    last_checkpoint,
    recorded_best,
    recorded_ema,
    recorded_scaler,
    remove_stale_temporaries,
    restore_training_state,
    save_training_state,
)

CPU = torch.device("cpu")


@dataclass
class Session:
    """A run as one call of ``fit`` trains it: its parts, and where it started.

    ``start``/``seconds_before``: the step this call starts at and the training seconds of the
    calls before it (a resumed run); ``finished``: a resumed run that had already ended, whose
    ``model`` holds its ``model.pt`` (there is nothing to train); ``t_start``: when this call's
    training began (``time.perf_counter``)."""

    cfg: ExperimentConfig
    rank: int
    world: int
    device: torch.device
    sampler: TaskSampler
    model: NeuralProcess
    named: list[tuple[str, torch.nn.Parameter]]  # the trainable parameters
    optimizer: torch.optim.Optimizer
    schedule: torch.optim.lr_scheduler.LRScheduler
    best: BestSoFar
    start: int = 0
    seconds_before: float = 0.0
    finished: bool = False
    ema: WeightAverage | None = None
    # the loss as a module (DDP over processes), or through torch.compile (train.compile)
    objective: torch.nn.Module | CompiledObjective | None = None
    # train.precision's autocast and scaler (float32 until open_session sets the config's)
    precision: StepPrecision = field(default_factory=lambda: StepPrecision("32", CPU))
    t_start: float = 0.0
    params: list[torch.nn.Parameter] = field(init=False)

    def __post_init__(self) -> None:
        self.params = [p for _, p in self.named]

    @property
    def main(self) -> bool:
        """Rank 0: the process that writes the run's files and validates."""
        return self.rank == 0

    @property
    def out_dir(self) -> Path:
        return Path(self.cfg.train.out_dir)

    @property
    def ckpt_path(self) -> Path:
        return last_checkpoint(self.out_dir)

    @property
    def evaluated(self) -> NeuralProcess:
        """The weights validation and ``model.pt`` use: the average's, if the run keeps one."""
        return self.ema.module if self.ema is not None else self.model

    def elapsed(self) -> float:
        """Training seconds so far, summed over resumed calls."""
        return self.seconds_before + time.perf_counter() - self.t_start

    def checkpoint(self, step: int) -> None:
        """Write the resumable state after ``step`` (rank 0 only)."""
        if self.main:
            ema = self.ema.state_dict() if self.ema is not None else None
            save_training_state(
                self.ckpt_path, self.model, self.optimizer, self.schedule, step, self.elapsed(),
                self.cfg, self.best.state(), ema, self.precision.state_dict(),
            )  # fmt: skip


class _Objective(torch.nn.Module):
    """``model.training_loss(batch)`` as a module's forward, so that DDP (which hooks the
    forward of the module it wraps) sees the whole loss computation."""

    def __init__(self, model: NeuralProcess):
        super().__init__()
        self.model = model

    def forward(self, batch) -> torch.Tensor:
        return self.model.training_loss(batch)


def open_session(cfg: ExperimentConfig, resume: bool, sampler: TaskSampler | None) -> Session:
    """Set up the run ``cfg`` describes (continued from its checkpoint when ``resume`` and
    there is one); writes ``config.yaml`` into the run folder."""
    rank, world = distributed()
    device = resolve_device(cfg.train.device)
    if device.type == "cuda" and world > 1:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    out_dir = Path(cfg.train.out_dir)
    ckpt_path = last_checkpoint(out_dir)
    if rank == 0:
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
    optimizer = build_optimizer(parameter_groups(named, cfg.optim), cfg.optim)
    schedule = build_schedule(optimizer, cfg.schedule, cfg.train.steps)
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
    run = Session(cfg, rank, world, device, sampler, model, named, optimizer, schedule, best)
    run.precision = StepPrecision(cfg.train.precision, device)
    if resuming:
        _resume(run)
        if run.finished:
            return run
        run.precision.load_state_dict(recorded_scaler(ckpt_path))  # None: a fresh scaler
    run.ema = _weight_average(cfg, model, ckpt_path if resuming else None, run.main)
    run.objective = _Objective(model)
    if world > 1:  # gradients are averaged across processes inside the wrapper's backward
        run.objective = torch.nn.parallel.DistributedDataParallel(
            run.objective, device_ids=[device.index] if device.type == "cuda" else None
        )
    if cfg.train.compile:
        run.objective = CompiledObjective(run.objective)
    run.t_start = time.perf_counter()
    return run


def _resume(run: Session) -> None:
    """Continue ``run`` from its checkpoint; a run that had already finished (checkpoint at
    its end and ``model.pt`` written) gets its ``model.pt`` weights and ``finished`` set."""
    run.start, run.seconds_before = restore_training_state(
        run.ckpt_path, run.model, run.optimizer, run.schedule
    )
    steps = run.cfg.train.steps
    done_before = run.start >= steps or run.best.stopped
    if done_before and (run.out_dir / "model.pt").exists():
        if run.main:
            print(f"{run.out_dir}: finished ({run.start} of {steps} steps); nothing to do")
        # The run's result is its model.pt (the best or averaged weights, if it kept them)
        run.model.load_state_dict(load(run.out_dir / "model.pt").state_dict())
        run.finished = True
    elif run.main:
        print(f"resuming from {run.ckpt_path} at step {run.start}")


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
