"""Optimisers and learning-rate schedules named in the protocols."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch

from ..config import OptimConfig, ScheduleConfig
from ..config.sections import OPTIMISERS


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
    """AdamW / Adam from torch; Yogi (TNP-KR) and schedule-free AdamW (Defazio et al. 2024,
    "The Road Less Scheduled") from the maintained ``pytorch-optimizer``. ``params``:
    parameters, or the groups of :func:`parameter_groups`.

    Schedule-free AdamW trains one sequence of weights and evaluates an average of another
    (:func:`evaluation_weights` switches between them); it replaces the decaying schedule, so
    it takes ``schedule.name: constant`` (the warm-up still applies)."""
    name = cfg.name.lower()
    kw = {"lr": cfg.lr, "betas": tuple(cfg.betas), "weight_decay": cfg.weight_decay}
    if name == "adamw":
        return torch.optim.AdamW(params, **kw)
    if name == "adam":
        return torch.optim.Adam(params, **kw)
    if name == "yogi":
        from pytorch_optimizer import Yogi

        return Yogi(params, **kw)
    if name == "schedulefree-adamw":
        from pytorch_optimizer import ScheduleFreeAdamW

        # warmup_steps=0: the warm-up is build_schedule's, on the same group "lr" it reads
        return ScheduleFreeAdamW(params, **kw, warmup_steps=0)
    raise ValueError(f"unknown optimiser {cfg.name!r}; choose from {', '.join(OPTIMISERS)}")


def is_schedule_free(optimizer: torch.optim.Optimizer) -> bool:
    """Whether ``optimizer`` keeps separate training and evaluation weights (schedule-free)."""
    return all(callable(getattr(optimizer, m, None)) for m in ("train", "eval")) and all(
        "train_mode" in group for group in optimizer.param_groups
    )


@contextmanager
def evaluation_weights(optimizer: torch.optim.Optimizer) -> Iterator[None]:
    """Within the block the parameters hold the weights to evaluate and save: a schedule-free
    optimiser's average ``x`` (its training iterate ``y`` interpolates ``x`` and ``z``). After
    it they hold the training iterate again, bit for bit (copied back, not re-interpolated, so
    validating changes nothing about training). Other optimisers: no change."""
    if not is_schedule_free(optimizer):
        yield
        return
    params = [p for group in optimizer.param_groups for p in group["params"]]
    training = [p.detach().clone() for p in params]
    optimizer.eval()
    try:
        yield
    finally:
        optimizer.train()  # its mode flags; the weights come from the copies
        with torch.no_grad():
            for p, saved in zip(params, training):
                p.copy_(saved)


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
