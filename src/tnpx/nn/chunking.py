"""Processing targets in chunks: conditionally independent targets need no joint memory."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils.checkpoint import checkpoint


def map_target_chunks(
    fn: Callable[..., torch.Tensor], xt: torch.Tensor, chunk_size: int, *args
) -> torch.Tensor:
    """``fn(xt[:, chunk], *args)`` per chunk of ``chunk_size`` targets, concatenated on dim 1.

    Targets are conditionally independent given the context, so chunking changes nothing but
    memory. With gradients on and more than one chunk, each chunk is recomputed in the backward
    pass (activation checkpointing), so training memory is bounded by a chunk as well.
    """
    n_tgt = xt.shape[1]
    if chunk_size >= n_tgt:
        return fn(xt, *args)
    grad = torch.is_grad_enabled()
    outs = []
    for start in range(0, n_tgt, chunk_size):
        part = xt[:, start : start + chunk_size]
        outs.append(checkpoint(fn, part, *args, use_reentrant=False) if grad else fn(part, *args))
    return torch.cat(outs, 1)
