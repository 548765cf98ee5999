"""Does our ordering of models match the paper's? Spearman ρ and the pairs swapped; and which
models beat the no-input reference row."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from experiments.kit import pm
from experiments.paper_tables.specs import REFERENCE, TableSpec


def ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman rank correlation (Pearson correlation of the tie-averaged ranks)."""
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    var = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return cov / var if var > 0 else float("nan")


@dataclass
class Swap:
    """A pair the paper orders one way (``better`` is better there) and we the other."""

    better: str  # in the paper
    worse: str
    margin: float  # how much better ``worse`` is than ``better`` in our cells (> 0)
    se: float  # s.e. of that difference (independent cells)

    @property
    def significant(self) -> bool:
        return self.margin > 2 * self.se


def ordering(spec: TableSpec, kernel: str, cells: dict) -> dict:
    """Spearman ρ between our numbers and the paper's over the rows with both, the pairs the
    paper orders (ties skipped) and the ones we order the other way. Works on LL (higher is
    better) whatever the table's metric: the paper's NLLs are negated."""
    sign = -1.0 if spec.metric == "nll" else 1.0
    models = [
        m for m in spec.models if (kernel, m) in cells and spec.paper_value(m, kernel) is not None
    ]
    ours = {m: cells[kernel, m] for m in models}
    paper_ll = {m: sign * spec.paper[m][kernel] for m in models}
    swaps, n_pairs = [], 0
    for a, b in itertools.combinations(models, 2):
        if paper_ll[a] == paper_ll[b]:
            continue
        n_pairs += 1
        better, worse = (a, b) if paper_ll[a] > paper_ll[b] else (b, a)
        margin = ours[worse].metrics.ll - ours[better].metrics.ll
        if margin > 0:
            se = math.hypot(ours[better].nll_se, ours[worse].nll_se)
            swaps.append(Swap(better, worse, margin, se))
    rho = (
        spearman([ours[m].metrics.ll for m in models], [paper_ll[m] for m in models])
        if len(models) > 1
        else float("nan")
    )
    return {"models": models, "spearman": rho, "pairs": n_pairs, "swaps": swaps}


def ordering_sentence(spec: TableSpec, kernel: str, cells: dict) -> str:
    """One sentence: is the paper's ordering of models reproduced for this column?"""
    o = ordering(spec, kernel, cells)
    label = spec.columns[kernel]
    if len(o["models"]) < 2:
        return f"**{label}**: fewer than two models run, no ordering to compare."
    swaps = sorted(o["swaps"], key=lambda s: -s.margin / max(s.se, 1e-12))
    n_sig = sum(s.significant for s in swaps)
    if not swaps:
        verdict = "the paper's ordering is reproduced"
    elif n_sig == 0:
        verdict = "the paper's ordering is reproduced up to noise (no swap exceeds 2 s.e.)"
    else:
        verdict = f"the paper's ordering is NOT reproduced ({n_sig} swaps exceed 2 s.e.)"
    listed = "; ".join(
        f"{s.worse} beats {s.better} by {pm(s.margin, s.se)}{' *' if s.significant else ''}"
        for s in swaps
    )
    return (
        f"**{label}**: Spearman ρ = {o['spearman']:.2f} between our {spec.metric_name}s and the "
        f"paper's over {len(o['models'])} models; {len(swaps)} of {o['pairs']} pairs the paper "
        f"orders are swapped, so {verdict}."
        + (f" Swapped (paper's better model second): {listed}." if swaps else "")
    )


def reference_sentence(spec: TableSpec, kernel: str, cells: dict) -> str:
    """One sentence: which trained models are ahead of, level with or behind the
    :data:`REFERENCE` row (the context's moments at every target), at 2 s.e. of the
    difference; "" where the table has no such row or cell."""
    ref = cells.get((kernel, REFERENCE))
    if ref is None:
        return ""
    groups: dict[str, list[str]] = {"ahead": [], "level": [], "behind": []}
    for label, row in spec.rows.items():
        cell = cells.get((kernel, label))
        if cell is None or not row.trained:
            continue
        margin = cell.metrics.ll - ref.metrics.ll
        noise = 2 * math.hypot(cell.nll_se, ref.nll_se)
        group = "ahead" if margin > noise else "behind" if margin < -noise else "level"
        groups[group].append(f"{label} {margin:+.3f}")
    if not any(groups.values()):
        return ""
    listed = {name: ", ".join(labels) or "none" for name, labels in groups.items()}
    return (
        f"Against the {REFERENCE} reference ({spec.metric_name} "
        f"{ref.value(spec.metric):.3f}), LL per target gained by the trained models: ahead by "
        f"more than 2 s.e.: {listed['ahead']}; level: {listed['level']}; behind: "
        f"{listed['behind']}."
    )
