"""The Bayes reference's report (``bayes-reference.md``) from a result of
:func:`experiments.bayes.reference.run`: the split of each model's gap to the oracle into the
irreducible part and its own shortfall, overall, per kernel and per region."""

from __future__ import annotations

from experiments.bayes.cache import CACHE
from experiments.kit import pm, pm_key
from experiments.zoo.score import KERNELS

TARGET_GAP = 0.15  # the zoo's gap goal on this prior


def shortfalls(result: dict, name: str) -> tuple[float, float, float]:
    """Model ``name``'s shortfall (average − model) interpolating, extrapolating and on
    periodic tasks, from a :func:`run` result."""
    e = result["eval"]
    return (
        e["interpolation"]["models"][name]["shortfall"],
        e["extrapolation"]["models"][name]["shortfall"],
        result["per_kernel"]["periodic"]["models"][name]["shortfall"],
    )


def reading(result: dict) -> str:
    e, conv = result["eval"], result["convergence"]
    worst = max(KERNELS, key=lambda k: result["per_kernel"][k]["gap"])
    shift = conv["fine"]["average_ll"] - conv["coarse"]["average_ll"]
    parts = [
        f"Knowing each task's hyper-parameters is worth {pm_key(e)} nats "
        "per target point on this prior: the part of any model's gap to the oracle that no "
        f"model seeing only the context can remove (the zoo's goal: a gap <= {TARGET_GAP}).",
        f"The largest part is on {worst} tasks ({result['per_kernel'][worst]['gap']:.3f}).",
        f"A finer rule moves the average's LL by {shift:+.4f} on "
        f"{conv['fine']['n_tasks']} tasks"
        + (
            ", so the rule is fine enough for these figures."
            if abs(shift) <= max(0.005, e["gap_se"])
            else f": the rule's own error is of that order (s.e. {e['gap_se']:.3f})."
        ),
    ]
    for name, m in e["models"].items():
        inter, extra, periodic = shortfalls(result, name)
        parts.append(
            f"`{name}`'s gap of {m['gap']:.3f} is {m['shortfall']:.3f} its own shortfall "
            f"({inter:.3f} interpolating, {extra:.3f} extrapolating; {periodic:.3f} on periodic "
            "tasks)."
        )
    return " ".join(parts)


def duration(seconds: float) -> str:
    """``seconds`` in minutes from two minutes on."""
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def timing(result: dict) -> str:
    """This run's time, and where the average's densities came from."""
    seconds, cache = result["seconds"], result.get("average_cache", {})
    text = (
        f"{duration(seconds['total'])} in all ({duration(seconds['overall'])} for the "
        f"{result['eval']['n_tasks']:,} tasks of the first row)"
    )
    reused = cache.get("reused_batches", {})
    if not reused:
        return text + "."
    commits = ", ".join(f"`{c}` ({n})" for c, n in sorted(reused.items()))
    return (
        f"{text}; the Bayes average's densities were computed here for "
        f"{cache['computed_batches']} batches and reused for {sum(reused.values())} from "
        f"`{CACHE}`, computed by this command at the commits {commits} (batches in brackets) "
        "for the same tasks and the same rule."
    )


def _kernel_rows(result: dict) -> list[tuple[str, dict]]:
    return [(k, result["per_kernel"][k]) for k in KERNELS]


def table(first: str, entries: list[tuple[str, dict]]) -> list[str]:
    """Markdown rows: per entry the oracle, the average, its gap, and each model's gap with its
    shortfall in brackets."""
    names = list(entries[0][1]["models"])
    rows = [
        f"| {first} | GP oracle LL | Bayes average LL | gap (oracle − average) | "
        + " | ".join(f"`{n}` gap (shortfall)" for n in names)
        + " |",
        "|" + " --- |" * (4 + len(names)),
    ]
    for label, entry in entries:
        cells = [
            f"{label} ({entry['n_tasks']:,})",
            pm(entry["oracle_ll"], entry["oracle_ll_se"]),
            pm(entry["average_ll"], entry["average_ll_se"]),
            pm(entry["gap"], entry["gap_se"]),
        ]
        cells += [f"{m['gap']:.3f} ({pm_key(m, 'shortfall')})" for m in entry["models"].values()]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def report(result: dict, command: str, commit: str) -> str:
    e, g, conv = result["eval"], result["grid"], result["convergence"]
    entries = [("all kernels", e), *_kernel_rows(result)]
    rows = table("tasks", entries)
    regions = table(
        "targets",
        [
            (f"{label}, {region}", entry[region])
            for label, entry in entries
            for region in ("interpolation", "extrapolation")
        ],
    )
    return f"""# The zoo's single-kernel prior: how close to the GP oracle a model can get

**What**: the Bayes-optimal predictive of the single-kernel prior that the zoo is scored on
(`{result["config"]}`: five kernels, lengthscale log-U[0.1, 2], period U[0.5, 2], noise std
log-U[0.01, 0.3], variance 1; 1–100 context points on [-2, 2], 100 targets on [-3, 3]): GPs
averaged over the kernel and every hyper-parameter, weighted by their evidence on the context
(`tnpx.gp.average`: an adaptive midpoint rule starting from {g["n_lengthscale"]} lengthscale ×
{g["n_period"]} frequency cells, split where the posterior mass is until the evidence estimate
moves by less than {g["tolerance"]:g} nats in two rounds running, and {g["n_noise"]} noise
levels). Metric: LL per target point (higher is better), mean ± s.e.
over tasks. The GP oracle knows each task's kernel, hyper-parameters and noise; the average
knows only the prior, as a trained model does, so its gap (oracle − average, paired over tasks)
is the part of any model's gap that training cannot remove. Each model's gap (oracle − model)
is beside it, and in brackets its shortfall (average − model): what training can still win.

**Command**: `{command}`, commit `{commit}`.

**Protocol or budget**: the zoo cards' test tasks (test split, `eval.seed`), their first
{result["batches"]} batches of {result["batch_size"]} (the cards score 64), per kernel a
quarter as many of that kernel's tasks. Not a paper experiment: no paper number applies.
Convergence: the first {conv["batches"]} batches again with twice as many cells on every axis
and a tolerance of {conv["grid"]["tolerance"]:g}.

**Hardware and time**: {result["hardware"]}; {timing(result)}

{chr(10).join(rows)}

The same tasks, their targets inside the context's range [-2, 2] (interpolation) and beyond it
(extrapolation), each task's mean over those targets:

{chr(10).join(regions)}

Convergence ({conv["fine"]["n_tasks"]} tasks): average LL {conv["coarse"]["average_ll"]:.4f} with
the rule above, {conv["fine"]["average_ll"]:.4f} with the finer one.

**Reading**: {reading(result)}
"""
