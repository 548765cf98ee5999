"""Test coverage far from nominal, flagged with its likely causes, overall and by context size.

A calibrated model's 95 % intervals cover about 95 % of the held-out targets. ``tnpx eval``
reports the coverage; this module says when it is far off: below :data:`LOW` (0.85) the model
is overconfident (its intervals too narrow: a score that looks good can still be wrong where it
matters), above :data:`HIGH` (0.99) underconfident. Coverage is also binned by the number of
context points (1, 2, 3, 4, then 5-8, 9-16, ...): small contexts are where meta-learned models
are most often overconfident, and a bin is flagged when it holds at least :data:`MIN_TASKS`
tasks (fewer: reported, too noisy to flag).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..data import TaskSampler

NOMINAL, LOW, HIGH = 0.95, 0.85, 0.99
MIN_TASKS = 5


@dataclass
class CoverageBin:
    """The tasks with ``lo..hi`` context points (both included): how many, and the mean of
    their 95 % coverage (each task's share of its observed target values inside its interval)."""

    lo: int
    hi: int
    n_tasks: int
    coverage: float

    @property
    def label(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"

    def as_dict(self) -> dict:
        return asdict(self)


def context_bins(n_ctx: np.ndarray) -> list[tuple[int, int]]:
    """The bins ``(lo, hi)`` that hold some of ``n_ctx [tasks]``: 1, 2, 3, 4, then powers of two
    (5-8, 9-16, ...), so the small contexts where calibration fails are each on their own."""
    top = int(max(np.max(n_ctx), 1))
    edges = [(k, k) for k in range(1, 5)]
    while edges[-1][1] < top:
        edges.append((edges[-1][1] + 1, 2 * edges[-1][1]))
    if np.any(np.asarray(n_ctx) < 1):
        edges.insert(0, (0, 0))
    return [(lo, hi) for lo, hi in edges if np.any((n_ctx >= lo) & (n_ctx <= hi))]


def coverage_by_context(covered: np.ndarray, n_ctx: np.ndarray) -> list[CoverageBin]:
    """``covered [tasks]`` (per-task 95 % coverage) binned by ``n_ctx [tasks]``
    (:func:`context_bins`)."""
    covered, n_ctx = np.asarray(covered, np.float64), np.asarray(n_ctx)
    out = []
    for lo, hi in context_bins(n_ctx):
        inside = (n_ctx >= lo) & (n_ctx <= hi)
        out.append(CoverageBin(lo, hi, int(inside.sum()), float(covered[inside].mean())))
    return out


def likely_causes(sampler: TaskSampler, small_contexts: bool, binned: bool = True) -> list[str]:
    """What most often makes a model's intervals too narrow on held-out tasks, the one this
    sampler's split makes likely first (a held-out period or region with its coordinate as an
    input lies outside the training range); ``binned``: a coverage by context size is shown."""
    causes = []
    outside = _split_input(sampler)
    if outside:
        causes.append(
            f"test inputs outside the training range: the test split is held out along "
            f"{outside!r}, which is an input, so the model extrapolates there (train without it "
            f"in x, or score a test box inside the training range)"
        )
    else:
        causes.append(
            "test inputs outside the training range (a held-out period or region whose "
            "coordinate is an input)"
        )
    few = "too few context points" + " (see the coverage by context size)" * binned
    causes.insert(0 if small_contexts else len(causes), few)
    causes.append("a shift between the training and the test data (another period, region, sensor)")
    return causes


def _split_input(sampler: TaskSampler) -> str | None:
    """The input the test split is held out along, when there is one (a grid's ``split_dim``,
    a table's time ``split_column``)."""
    if type(sampler).__name__ == "GridSampler":
        config, x, dims = sampler.config, list(sampler.x), sampler.data.dims
        if config.val_select or config.test_select:
            held = [d for d in (config.test_select or {}) if d in x]
            return ", ".join(held) or None
        dim = config.split_dim or ("time" if "time" in dims else dims[0])
        return dim if dim in x else None
    table = getattr(sampler, "table_config", None)
    if table is not None and table.split_by == "time" and table.split_column in sampler.x_cols:
        return table.split_column
    return None


def coverage_flags(
    coverage: float, bins: list[CoverageBin], sampler: TaskSampler | None = None
) -> list[str]:
    """One line per flag: the overall 95 % ``coverage`` below :data:`LOW` or above
    :data:`HIGH`, then each context-size bin below :data:`LOW` (with at least
    :data:`MIN_TASKS` tasks), then the likely causes (``sampler``'s split first); empty for a
    calibrated model."""
    low_bins = [b for b in bins if b.n_tasks >= MIN_TASKS and b.coverage < LOW]
    lines = []
    if coverage < LOW:
        lines.append(
            f"overconfident: 95% intervals cover {coverage:.3f} of the test targets (nominal "
            f"{NOMINAL}, flagged below {LOW}): the predictive std is too small"
        )
    elif coverage > HIGH:
        lines.append(
            f"underconfident: 95% intervals cover {coverage:.3f} of the test targets (nominal "
            f"{NOMINAL}, flagged above {HIGH}): the predictive std is too large"
        )
    if low_bins:
        where = ", ".join(f"{b.coverage:.2f} at {b.label}" for b in low_bins)
        lines.append(f"overconfident at small contexts: coverage {where} context points")
    if any(line.startswith("overconfident") for line in lines):
        small = bool(low_bins) and low_bins[0].lo <= 4
        causes = likely_causes(sampler, small, bool(bins)) if sampler is not None else []
        lines += [f"likely cause: {c}" for c in causes]
    return lines


def format_coverage_bins(bins: list[CoverageBin]) -> str:
    """A markdown table of :func:`coverage_by_context`, bins below :data:`LOW` marked."""
    lines = ["| context points | tasks | 95% coverage |", "| --- | ---: | ---: |"]
    for b in bins:
        mark = " (low)" if b.coverage < LOW and b.n_tasks >= MIN_TASKS else ""
        lines.append(f"| {b.label} | {b.n_tasks} | {b.coverage:.3f}{mark} |")
    return "\n".join(lines)
