"""The task batch passed between samplers, models, training and evaluation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import torch

from .input_checks import values_checked


@dataclass
class Batch:
    """A batch of meta-learning tasks.

    Attributes:
        xc: context inputs ``[batch, n_ctx, dim_x]``.
        yc: context outputs ``[batch, n_ctx, dim_y]``.
        xt: target inputs ``[batch, n_tgt, dim_x]``.
        yt: target outputs ``[batch, n_tgt, dim_y]`` (``None`` when unknown).
        mask_c: optional ``[batch, n_ctx]`` bool, True = a real observation.
        info: per-task side information, e.g. the GP hyper-parameters that generated each
            task (``kernel``, ``lengthscale``, ``period``, ``noise_ctx``, ``noise_tgt``), used
            by ``gp-oracle``. Values are tensors with the batch as first dimension, or strings.
        mask_t: optional ``[batch, n_tgt]`` bool, True = a real target (tasks with different
            numbers of targets padded to one size); scores average over real targets only.
        mask_yc: optional ``[batch, n_ctx, dim_y]`` bool, True = an observed output value: a
            context point may miss some of its outputs (a user's table with gaps). ``yc`` holds
            0.0 where one is missing (never NaN). None: every output observed. Only models that
            read missing outputs take a False (``NeuralProcess.missing_outputs_support``).
        mask_yt: optional ``[batch, n_tgt, dim_y]`` bool, the same for targets: a missing
            target output counts in no score (:func:`observed_score`); ``yt`` holds 0.0 there.
            Padded points (``mask_c`` / ``mask_t`` False) are True in both output masks.

    ``mask_t``, ``mask_yc`` and ``mask_yt`` come last, so that positional construction
    without them keeps working.
    """

    xc: torch.Tensor
    yc: torch.Tensor
    xt: torch.Tensor
    yt: torch.Tensor | None = None
    mask_c: torch.Tensor | None = None
    info: dict = field(default_factory=dict)
    mask_t: torch.Tensor | None = None
    mask_yc: torch.Tensor | None = None
    mask_yt: torch.Tensor | None = None

    @property
    def batch_size(self) -> int:
        return self.xc.shape[0]

    def to(self, device: torch.device | str) -> Batch:
        """Return a copy with every tensor moved to ``device``."""

        def move(v):
            return v.to(device) if isinstance(v, torch.Tensor) else v

        kwargs = {f.name: move(getattr(self, f.name)) for f in fields(self) if f.name != "info"}
        return Batch(**kwargs, info={k: move(v) for k, v in self.info.items()})

    def select(self, index: slice | torch.Tensor) -> Batch:
        """Return the tasks ``index`` (a slice or index tensor over the batch)."""

        def take(v):
            return v[index] if isinstance(v, torch.Tensor) else v

        kwargs = {f.name: take(getattr(self, f.name)) for f in fields(self) if f.name != "info"}
        return Batch(**kwargs, info={k: take(v) for k, v in self.info.items()})


def target_mean(values: torch.Tensor, mask_t: torch.Tensor | None) -> torch.Tensor:
    """Per-task mean of ``values [batch, n_tgt, ...]`` over targets (and any trailing
    dimensions), ``[batch]``: over the real targets only where ``mask_t [batch, n_tgt]`` is given.

    Raises:
        ValueError: ``mask_t`` is not bool, has the wrong shape, or leaves a task no target.
    """
    dims = tuple(range(1, values.dim()))
    if mask_t is None:
        return values.mean(dims)
    b, n_tgt = values.shape[:2]
    check_mask(mask_t, (b, n_tgt), "mask_t")
    real = mask_t.sum(1)
    # a host read: skipped for a training step's trusted batches (tnpx.input_checks)
    if values_checked(mask_t) and not bool((real > 0).all()):
        task = int((real == 0).nonzero()[0, 0])
        raise ValueError(f"mask_t: task {task} has no real target (a row of False)")
    keep = mask_t.reshape(b, n_tgt, *([1] * (values.dim() - 2)))
    # where, not a product: a padded target's value may be anything, NaN included
    total = torch.where(keep, values, torch.zeros((), dtype=values.dtype, device=values.device))
    per_target = math.prod(values.shape[2:])  # entries per target (e.g. output dims)
    return total.sum(dims) / (real * per_target).to(values.dtype)


def partly_missing(mask_y: torch.Tensor | None) -> bool:
    """Whether an output mask (``Batch.mask_yc`` / ``mask_yt``) marks any value missing."""
    return mask_y is not None and not bool(mask_y.all())


def observed_score(
    values: torch.Tensor, mask_t: torch.Tensor | None, mask_yt: torch.Tensor | None
) -> torch.Tensor:
    """Per-task score per target ``[batch]`` of ``values [batch, n_tgt, dim_y]`` (log-densities):
    summed over each target's observed outputs, averaged over the real targets with at least
    one observed output. Where ``mask_yt`` marks nothing missing, exactly
    ``target_mean(values.sum(-1), mask_t)`` (the score of complete data, bit for bit).
    ``values [batch, n_tgt]`` is already per target (outputs scored jointly: the
    ``lowrank-gaussian`` likelihood): averaged over real targets, no output may be missing.

    Raises:
        ValueError: a mask of the wrong shape or dtype, or a task left no scored target.
    """
    if values.dim() == 2:
        if partly_missing(mask_yt):
            raise ValueError(
                "mask_yt: a joint score over each target's outputs (likelihood "
                "lowrank-gaussian) cannot leave missing outputs out"
            )
        return target_mean(values, mask_t)
    if not partly_missing(mask_yt):
        return target_mean(values.sum(-1), mask_t)
    keep = _observed(values, mask_t, mask_yt)
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    # where, not a product: a missing value's log-density may be anything
    return target_mean(torch.where(keep, values, zero).sum(-1), keep.any(-1))


def observed_mean(
    values: torch.Tensor, mask_t: torch.Tensor | None, mask_yt: torch.Tensor | None
) -> torch.Tensor:
    """Per-task mean ``[batch]`` of ``values [batch, n_tgt, dim_y]`` (coverage indicators) over
    the observed outputs of real targets; where ``mask_yt`` marks nothing missing, exactly
    ``target_mean(values, mask_t)``."""
    if not partly_missing(mask_yt):
        return target_mean(values, mask_t)
    keep = _observed(values, mask_t, mask_yt)
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    return torch.where(keep, values, zero).sum((1, 2)) / keep.sum((1, 2)).to(values.dtype)


def output_means(
    values: torch.Tensor, mask_t: torch.Tensor | None, mask_yt: torch.Tensor | None
) -> torch.Tensor:
    """Per task and output, the mean of ``values [batch, n_tgt, dim_y]`` (squared errors) over
    the real targets where that output is observed, ``[batch, dim_y]``: NaN where a task has no
    observed value of an output. Where ``mask_yt`` marks nothing missing, exactly
    ``target_mean(values[..., d], mask_t)`` per output ``d``."""
    if not partly_missing(mask_yt):
        return torch.stack(
            [target_mean(values[..., d], mask_t) for d in range(values.shape[-1])], -1
        )
    keep = mask_yt if mask_t is None else mask_yt & mask_t[..., None]
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    return torch.where(keep, values, zero).sum(1) / keep.sum(1).to(values.dtype)


def _observed(values: torch.Tensor, mask_t, mask_yt: torch.Tensor) -> torch.Tensor:
    """``[batch, n_tgt, dim_y]``: the observed outputs of real targets, every task keeping one."""
    b, n_tgt = values.shape[:2]
    check_mask(mask_yt, tuple(values.shape), "mask_yt")
    keep = mask_yt
    if mask_t is not None:
        check_mask(mask_t, (b, n_tgt), "mask_t")
        keep = keep & mask_t[..., None]
    empty = ~keep.flatten(1).any(1)
    if values_checked(keep) and bool(empty.any()):  # as in target_mean
        task = int(empty.nonzero()[0, 0])
        raise ValueError(f"mask_yt: task {task} has no observed output at a real target")
    return keep


def check_mask(mask, shape: tuple[int, ...], name: str) -> None:
    """A ``ValueError`` unless ``mask`` is a bool tensor of ``shape``."""
    want = ", ".join(str(n) for n in shape)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"{name}: expected a bool tensor of shape [{want}], got {got}")
    if tuple(mask.shape) != shape:
        raise ValueError(f"{name}: expected shape [{want}], got {list(mask.shape)}")


__all__ = [
    "Batch",
    "check_mask",
    "observed_mean",
    "observed_score",
    "output_means",
    "partly_missing",
    "target_mean",
]
