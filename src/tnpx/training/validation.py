"""Validation during training: the mean LL on fixed held-out batches, and the best weights
it finds (``train.keep_best``, :mod:`tnpx.training.best`)."""

from __future__ import annotations

import torch

from ..checkpoint import save
from ..config import config_to_yaml
from ..data import TaskSampler, batch_at
from ..models import NeuralProcess
from .batches import BatchStream
from .optim import evaluation_weights
from .session import Session


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


def validate(run: Session, batches: BatchStream, done: int) -> float:
    """The validation LL of ``run``'s evaluated weights after step ``done``; writes
    ``best.pt`` when the run keeps its best weights and these beat every earlier one."""
    batches.idle()  # the sampler serves one thread at a time
    with evaluation_weights(run.optimizer):  # schedule-free: its average
        val = validation_ll(run.evaluated, run.sampler, run.cfg.train.val_batches, run.device)
        if run.best.enabled and run.best.update(done, val):
            save(run.evaluated, run.out_dir / "best.pt", experiment=config_to_yaml(run.cfg))
    return val
