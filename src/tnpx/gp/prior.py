"""Exact joint draws of zero-mean GP functions: the one Cholesky draw the GP priors share.

The draw's linear algebra runs on one CPU thread (:func:`one_thread`): MKL's Cholesky splits
its blocks by the thread count, so a 384-point KR-3 task drawn at 2 threads differed from one
drawn at 1 thread by ~1e-10 (1.2e-7 after the cast to float32), and a test set depended on
the machine it was drawn on. One thread is the count every test and committed experiment
draws at, so their tasks are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_thread(device: torch.device) -> Iterator[None]:
    """Run the block's CPU ops on one torch thread and restore the count after (``device``
    not a CPU: nothing changes). The count is the calling thread's (OpenMP's and MKL's
    are per thread), so a sampler in a prefetch thread leaves the training step's alone."""
    threads = torch.get_num_threads()
    if device.type != "cpu" or threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def joint_draw(
    g: torch.Generator, covariance: torch.Tensor, jitter: float | torch.Tensor
) -> torch.Tensor:
    """Joint samples ``f`` ``[b, n, 1]`` of zero-mean GPs with covariance ``[b, n, n]``.

    ``jitter`` (a float, or ``[b, 1, 1]`` per task) is added to the diagonal before the
    Cholesky factor ``L``; ``f = L z`` with ``z ~ N(0, I)`` drawn with ``g`` in the
    covariance's dtype (float64 in the samplers). The same ``g`` gives the same bits at any
    torch thread count (:func:`one_thread`)."""
    b, n = covariance.shape[0], covariance.shape[-1]
    eye = torch.eye(n, dtype=covariance.dtype)
    with one_thread(covariance.device):
        chol = torch.linalg.cholesky(covariance + jitter * eye)
        z = torch.randn(b, n, 1, generator=g, dtype=covariance.dtype)
        return chol @ z
