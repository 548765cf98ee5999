"""Optimisers and learning-rate schedules named in the protocols."""

from __future__ import annotations

import math

import torch

from .config import OptimConfig, ScheduleConfig

OPTIMISERS = ("adamw", "adam", "yogi")


def build_optimizer(params, cfg: OptimConfig) -> torch.optim.Optimizer:
    """AdamW / Adam from torch; Yogi (TNP-KR) from the maintained ``pytorch-optimizer``."""
    name = cfg.name.lower()
    kw = {"lr": cfg.lr, "betas": tuple(cfg.betas), "weight_decay": cfg.weight_decay}
    if name == "adamw":
        return torch.optim.AdamW(params, **kw)
    if name == "adam":
        return torch.optim.Adam(params, **kw)
    if name == "yogi":
        from pytorch_optimizer import Yogi

        return Yogi(params, **kw)
    raise ValueError(f"unknown optimiser {cfg.name!r}; choose from {', '.join(OPTIMISERS)}")


def build_schedule(optimizer: torch.optim.Optimizer, cfg: ScheduleConfig, total_steps: int):
    """Linear warm-up over ``warmup_steps`` then cosine annealing to ``lr * min_lr_ratio``
    (``name="cosine"``), or a constant rate after warm-up (``name="constant"``)."""
    if cfg.name not in ("cosine", "constant"):
        raise ValueError(f"unknown schedule {cfg.name!r}; choose from cosine, constant")
    warmup = max(cfg.warmup_steps, 0)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if cfg.name == "constant":
            return 1.0
        progress = min((step - warmup) / max(total_steps - warmup, 1), 1.0)
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
