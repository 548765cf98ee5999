"""The lab's small shared kit: a mean and its standard error over a list of numbers, the same
for paired differences, the table cells that print them (``-0.457 ± 0.009``), and a study's
provenance (:class:`Provenance`: the command, commit, hardware, wall time and load it names).

Every study writes its numbers through these, so a results file's cells read the same
whichever study wrote them. Over a tensor of per-task scores, use
:func:`tnpx.evaluation.protocol.mean_se` instead (the package's, on tensors); the fitted-GP
baseline lives in :mod:`experiments.zero_shot.fitted_gp`, and atomic writes in
:func:`tnpx.output_files.atomic_write`.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Sequence

from tnpx.provenance import command_line, git_commit, hardware


def mean_se(values: Sequence[float], single: float = math.nan) -> tuple[float, float]:
    """The mean of ``values`` and its standard error (sample standard deviation over the
    square root of their number); ``single`` is the standard error of one value (none can be
    estimated: NaN by default)."""
    values = [float(v) for v in values]
    n = len(values)
    se = statistics.stdev(values) / math.sqrt(n) if n > 1 else single
    return statistics.fmean(values), se


def paired_mean_se(ours: Sequence[float], theirs: Sequence[float]) -> tuple[float, float]:
    """Mean ± standard error of ``ours - theirs``, paired item by item (the same tasks, splits
    or windows); the standard error of a single pair is 0."""
    return mean_se([a - b for a, b in zip(ours, theirs, strict=True)], single=0.0)


def rounded(obj, significant: int = 7):
    """``obj`` (JSON-like: dicts, lists, numbers, strings) with every float rounded to
    ``significant`` digits: per-task scores saved for pairing keep far more precision than
    their differences' s.e. needs, at half the bytes of full floats."""
    if isinstance(obj, float):
        return float(f"{obj:.{significant}g}")
    if isinstance(obj, dict):
        return {k: rounded(v, significant) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [rounded(v, significant) for v in obj]
    return obj


def pm(mean: float, se: float, digits: int = 3) -> str:
    """The table cell ``mean ± se`` with ``digits`` decimals: ``-0.457 ± 0.009``."""
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def pm_key(entry: dict, key: str = "gap") -> str:
    """``entry[key] ± entry[key_se]``, three decimals (the cards' and results' pairs)."""
    return pm(entry[key], entry[f"{key}_se"])


def pm_units(pair: tuple[float, float]) -> str:
    """A ``(mean, se)`` pair in a measured quantity's units: three decimals, one from 10 up
    (series in ppm or metres)."""
    mean, se = pair
    return pm(mean, se, 3 if abs(mean) < 10 else 1)


def pm_small(pair: tuple[float, float]) -> str:
    """A ``(mean, se)`` pair with three decimals, or two significant digits below 0.01 (a GP's
    relative RMSE on a smooth function is ~1e-4, which three decimals would print as 0.000)."""
    mean, se = pair
    if abs(mean) < 0.01:
        return f"{mean:.1e} ± {se:.1e}"
    return pm(mean, se)


class Provenance:
    """What a results file says about the run that wrote it. Made when the study starts: the
    code it runs (``commit``, not HEAD when it ends), its command line and the load average
    then; :meth:`record` adds the hardware and the wall time when it ends."""

    def __init__(self) -> None:
        self.command, self.commit = command_line(), git_commit()
        self.started, self.load_average = time.perf_counter(), os.getloadavg()[0]

    def record(self) -> dict:
        """``command``, ``commit``, ``hardware``, ``wall_s``, ``load_average`` (at the start)."""
        return {
            "command": self.command,
            "commit": self.commit,
            "hardware": hardware(),
            "wall_s": time.perf_counter() - self.started,
            "load_average": self.load_average,
        }
