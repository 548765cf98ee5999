"""The training batches, sampled one step ahead in a background thread.

A batch is a pure function of ``(seed, step, rank)`` (:func:`tnpx.data.batch_at`), so sampling
the next step's batch while the current step trains changes no number: a run with prefetching
is bit-identical to one without. It can hide the task sampler's cost (for the KR-1 GP data, a
float64 Cholesky per task: ~10 ms of a 50–270 ms step at one thread) where a core is free
(torch ops release the GIL, so the two threads do run at once); on a busy 2-core CPU the
worker competes with the step instead, so the trainer's default is off
(``train.prefetch``).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from ..batch import Batch
from ..data import TaskSampler, batch_at


class BatchStream:
    """``get(step)`` returns ``batch_at(sampler, step, rank)``; with ``prefetch`` the batch of
    ``step + 1`` is being sampled in a worker thread while the caller trains on ``step``.

    Use as a context manager (the worker is shut down on exit), and call :meth:`idle` before
    anything else samples from the same sampler (validation), so the two never overlap."""

    def __init__(self, sampler: TaskSampler, rank: int = 0, prefetch: bool = True):
        self.sampler, self.rank = sampler, rank
        self._pool = ThreadPoolExecutor(max_workers=1) if prefetch else None
        self._ahead: tuple[int, Future] | None = None

    def get(self, step: int) -> Batch:
        """The batch of ``step``; starts sampling ``step + 1``."""
        if self._ahead is not None and self._ahead[0] == step:
            batch = self._ahead[1].result()
        else:
            self.idle()
            batch = batch_at(self.sampler, step, self.rank)
        if self._pool is not None:
            self._ahead = (step + 1, self._pool.submit(batch_at, self.sampler, step + 1, self.rank))
        return batch

    def idle(self) -> None:
        """Wait for the batch being sampled, if any (it is kept for its step)."""
        if self._ahead is not None:
            self._ahead[1].result()

    def __enter__(self) -> BatchStream:
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
