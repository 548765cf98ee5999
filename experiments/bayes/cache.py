"""The Bayes average's per-target densities kept between runs of
``experiments/bayes/reference.py``: the average costs ~25 s of one core per batch of 16 tasks,
a model's scores seconds, so a newly shipped model is scored against densities an earlier run
computed, for the same task under the same rule. Each newly computed batch is written at once
(atomically), so a run that is stopped resumes where it stopped."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from collections.abc import Iterable
from pathlib import Path

import torch

from tnpx.batch import Batch
from tnpx.gp import HyperGrid, average_log_likelihood
from tnpx.output_files import atomic_write

CACHE = "bayes-average.pt"  # in experiments.bayes.reference's --out, beside the report
# The rule's modules, whose source is part of each key: tnpx.gp.average and tnpx.gp.hyper_grid.
RULE_MODULES = (inspect.getmodule(average_log_likelihood), inspect.getmodule(HyperGrid))


def rule_text(hyper_grid: HyperGrid) -> str:
    """What the average reads of its prior and options: every field of ``hyper_grid``."""
    fields = {f.name: getattr(hyper_grid, f.name) for f in dataclasses.fields(hyper_grid)}
    fields["noises"] = fields["noises"].tolist()  # float64 -> exact decimal via repr
    return json.dumps(fields, sort_keys=True)


class AverageCache:
    """The Bayes average's per-target log densities (``[tasks, n_tgt]`` float64), keyed by
    what determines them: the rule (the source of :mod:`tnpx.gp.average` and
    :mod:`tnpx.gp.hyper_grid`, and the :class:`HyperGrid` it integrates over, i.e. the prior as
    the rule reads it and the grid options) and the batch's tensors. A changed rule, prior or
    task is a different key, so it is computed afresh; a prior field the rule does not read
    (how tasks are drawn) is no part of the key, since the tasks' own tensors are.

    Args:
        path: the cache file. Each newly computed entry is written to it at once, beside the
            file's earlier entries (so a stopped run resumes); :meth:`save` then keeps only
            the entries this run used, what the report beside it needs. ``None`` keeps nothing.
        commit: the commit computing new entries, recorded beside each.
        reuse: read ``path``'s entries if it exists (else start empty and overwrite it: a
            stopped ``reuse=False`` run resumes with ``reuse=True``).
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
    def key(batch: Batch, hyper_grid: HyperGrid) -> str:
        average_rule, grid_rule = RULE_MODULES
        digest = hashlib.sha256(inspect.getsource(average_rule).encode())
        digest.update(inspect.getsource(grid_rule).encode())
        digest.update(rule_text(hyper_grid).encode())
        for t in (batch.xc, batch.yc, batch.xt, batch.yt, batch.mask_c):
            digest.update(b"none" if t is None else t.contiguous().numpy().tobytes())
        return digest.hexdigest()

    def missing(self, batches: Iterable[Batch], hyper_grid: HyperGrid, seen: set[str]) -> int:
        """How many of ``batches`` a run would compute under ``hyper_grid``: neither cached nor
        in ``seen``, the keys met earlier in the same run (added to it)."""
        count = 0
        for batch in batches:
            key = self.key(batch, hyper_grid)
            count += key not in self.entries and key not in seen
            seen.add(key)
        return count

    def average(self, batch: Batch, hyper_grid: HyperGrid) -> torch.Tensor:
        """Per-target log densities of the average on ``batch`` (:func:`average_log_likelihood`
        with ``hyper_grid``), reused when cached, else computed and written at once."""
        key = self.key(batch, hyper_grid)
        self.used.add(key)
        if key in self.entries:
            entry = self.entries[key]
            if key in self.earlier:  # (a batch met twice in one run is not a reuse)
                self.reused[entry["commit"]] = self.reused.get(entry["commit"], 0) + 1
            return entry["average"]
        value = average_log_likelihood(batch, hyper_grid, per_target=True)
        self.entries[key] = {"average": value, "commit": self.commit}
        self.computed += 1
        self._write(self.entries)
        return value

    def save(self) -> None:
        """Keep only the entries this run used (the run is complete). A run that computed
        nothing and used every entry leaves the file as it was: git keeps every version of a
        binary file, and this one would differ only in its bytes, not its numbers."""
        kept = {k: v for k, v in self.entries.items() if k in self.used}
        if self.computed == 0 and kept.keys() == self.earlier:
            return
        self._write(kept)

    def _write(self, entries: dict[str, dict]) -> None:
        if self.path is not None:
            with atomic_write(self.path) as tmp:  # a stop mid-write leaves the last file
                torch.save(entries, tmp)

    def summary(self) -> dict:
        return {"computed_batches": self.computed, "reused_batches": self.reused}
