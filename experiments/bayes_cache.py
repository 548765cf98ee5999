"""The Bayes average's per-target densities kept between runs of
``experiments/pretrained_bayes.py``: the average costs ~16 min of one core on the reference's
tasks, a model's scores seconds, so a newly shipped model is scored against densities an
earlier run computed, for the same task under the same rule."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from pathlib import Path

import torch

from tnpx import gp_average
from tnpx.batch import Batch
from tnpx.data import GPConfig
from tnpx.gp_average import HyperGrid, average_log_likelihood

CACHE = "bayes-average.pt"  # in pretrained_bayes.py's --out, beside the report


class AverageCache:
    """The Bayes average's per-target log densities (``[tasks, n_tgt]`` float64), keyed by
    what determines them: the rule (:mod:`tnpx.gp_average`'s source, the grid options and the
    prior it integrates over) and the batch's tensors. A changed rule, prior or task is a
    different key, so it is computed afresh.

    Args:
        path: the cache file (written by :meth:`save` with the entries this run used, so it
            holds what the report beside it needs); ``None`` keeps nothing.
        commit: the commit computing new entries, recorded beside each.
        reuse: read ``path``'s entries if it exists (else start empty and overwrite it).
    """

    def __init__(self, path: Path | None, commit: str = "unknown", reuse: bool = True) -> None:
        self.path, self.commit = path, commit
        self.entries: dict[str, dict] = {}
        if reuse and path is not None and path.exists():
            self.entries = torch.load(path, weights_only=True)
        self.earlier = set(self.entries)  # keys from earlier runs
        self.used: set[str] = set()
        self.computed = 0
        self.reused: dict[str, int] = {}  # commit -> batches reused

    @staticmethod
    def key(batch: Batch, grid: dict, prior: GPConfig) -> str:
        digest = hashlib.sha256(inspect.getsource(gp_average).encode())
        digest.update(json.dumps(grid, sort_keys=True).encode())
        digest.update(json.dumps(dataclasses.asdict(prior), sort_keys=True, default=str).encode())
        for t in (batch.xc, batch.yc, batch.xt, batch.yt, batch.mask_c):
            digest.update(b"none" if t is None else t.contiguous().numpy().tobytes())
        return digest.hexdigest()

    def average(
        self, batch: Batch, grid: dict, prior: GPConfig, hyper_grid: HyperGrid
    ) -> torch.Tensor:
        """Per-target log densities of the average on ``batch`` (:func:`average_log_likelihood`
        with ``hyper_grid``, built from ``prior`` and the options ``grid``), reused when
        cached."""
        key = self.key(batch, grid, prior)
        self.used.add(key)
        if key in self.entries:
            entry = self.entries[key]
            if key in self.earlier:  # (a batch met twice in one run is not a reuse)
                self.reused[entry["commit"]] = self.reused.get(entry["commit"], 0) + 1
            return entry["average"]
        value = average_log_likelihood(batch, hyper_grid, per_target=True)
        self.entries[key] = {"average": value, "commit": self.commit}
        self.computed += 1
        return value

    def save(self) -> None:
        if self.path is not None:
            torch.save({k: v for k, v in self.entries.items() if k in self.used}, self.path)

    def summary(self) -> dict:
        return {"computed_batches": self.computed, "reused_batches": self.reused}
