"""Optimisers and learning-rate schedules named in the protocols."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from ..config import OptimConfig, ScheduleConfig

OPTIMISERS = ("adamw", "adam", "yogi")


def _under(name: str, prefix: str) -> bool:
    """Whether parameter ``name`` is ``prefix`` or lies inside the module ``prefix``."""
    return name == prefix or name.startswith(prefix + ".")


def parameter_groups(
    named_params: Iterable[tuple[str, torch.nn.Parameter]], cfg: OptimConfig
) -> list[dict]:
    """Optimiser parameter groups: one at ``cfg.lr``, plus one per ``cfg.lr_multipliers``
    prefix at ``lr * factor`` (a parameter takes its longest matching prefix; a prefix
    matches a name equal to it or starting with it and a dot). Schedules scale every group
    alike, so the ratios hold throughout training."""
    named_params = list(named_params)
    multipliers = dict(cfg.lr_multipliers)
    for prefix, factor in multipliers.items():
        if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor <= 0:
            raise ValueError(
                f"optim.lr_multipliers[{prefix!r}] must be a positive number, got {factor!r}"
            )
    groups: dict[str | None, list[torch.nn.Parameter]] = {}
    for name, param in named_params:
        matches = [p for p in multipliers if _under(name, p)]
        groups.setdefault(max(matches, key=len) if matches else None, []).append(param)
    unused = [p for p in multipliers if not any(_under(n, p) for n, _ in named_params)]
    if unused:
        names = ", ".join(n for n, _ in named_params[:8])
        raise ValueError(
            f"optim.lr_multipliers prefixes {unused} match no trainable parameter; "
            f"parameter names look like: {names}, ..."
        )
    return [
        {"params": params, "lr": cfg.lr * (multipliers[prefix] if prefix else 1.0)}
        for prefix, params in groups.items()
    ]


def build_optimizer(params, cfg: OptimConfig) -> torch.optim.Optimizer:
    """AdamW / Adam from torch; Yogi (TNP-KR) from the maintained ``pytorch-optimizer``.
    ``params``: parameters, or the groups of :func:`parameter_groups`."""
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


def clip_gradients(
    params: Iterable[torch.nn.Parameter], clip_value: float | None, clip_norm: float | None
) -> None:
    """Clip the gradients of ``params`` in place as a training step does (``train.clip_value``
    and ``train.clip_norm``): each gradient element to ``[-clip_value, clip_value]``, then all
    gradients together to a 2-norm of at most ``clip_norm``; None skips that kind."""
    params = list(params)
    if clip_value is not None:
        torch.nn.utils.clip_grad_value_(params, clip_value)
    if clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(params, clip_norm)


def build_schedule(optimizer: torch.optim.Optimizer, cfg: ScheduleConfig, total_steps: int):
    """Linear warm-up over ``warmup_steps`` then cosine annealing to ``lr * min_lr_ratio``
    (``name="cosine"``), or a constant rate after warm-up (``name="constant"``)."""
    if cfg.name not in ("cosine", "constant"):
        raise ValueError(f"unknown schedule {cfg.name!r}; choose from cosine, constant")
    warmup = cfg.warmup(total_steps)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if cfg.name == "constant":
            return 1.0
        progress = min((step - warmup) / max(total_steps - warmup, 1), 1.0)
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
