"""Setting up a training run before its first step: the device, the process group under
``torchrun``, the task sampler a config names, the checks of the config against its data and
model (one line each), the starting weights of a fine-tune (``train.init_from``), and the
signal handlers that turn SIGTERM/SIGINT into a checkpoint and a clean stop. The loop that
runs the steps is :mod:`tnpx.training.loop`.
"""

from __future__ import annotations

import os
import signal

import torch
import torch.distributed as dist

from ..checkpoint import load, state_mismatch
from ..config import ExperimentConfig
from ..data import TaskSampler, build_sampler
from ..models import NeuralProcess
from ..models.registry import missing_outputs_refusal


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


def distributed() -> tuple[int, int]:
    """(rank, world size); initialises the process group under ``torchrun``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
    return (dist.get_rank(), world) if world > 1 else (0, 1)


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


class StopFlag:
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
