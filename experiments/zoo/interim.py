"""The interim report on the zoo's long runs still training (``python -m experiments.zoo.train
--interim``): each run's latest checkpoint scored on the first test batches of the zoo's shared
priors, beside the shipped models, with the Bayes reference's irreducible part of the gap. A
progress check, not a result."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.kit import pm
from experiments.long_runs.driver import FOLDER as LONG_RUNS
from experiments.zoo.score import KERNELS, ROOT, score
from experiments.zoo.ship import COMPOSITE_MODELS, TARGET_GAP, repo_relative, shipped_run
from tnpx.checkpoint import load
from tnpx.training import last_checkpoint, run_status

INTERIM_BATCHES = 8  # 128 tasks per prior (32 per kernel): a progress check, not a result
BAYES_REFERENCE = ROOT / "results" / "pretrained" / "bayes-reference.json"  # bayes/reference.py


def _scores(path: Path, n_batches: int) -> dict:
    return score(load(path), n_batches)


def _row(label: str, steps: str, s: dict) -> str:
    e, c = s["eval"], s["eval_composite"]
    kernels = " | ".join(f"{s['per_kernel'][k]['gap']:.3f}" for k in KERNELS)
    return (
        f"| {label} | {steps} | {e['n_tasks']} | {e['ll']:.3f} | {e['gap']:.3f} ± "
        f"{e['gap_se']:.3f} | {kernels} | {c['ll']:.3f} | {pm(c['gap'], c['gap_se'])} |"
    )


def interim(
    runs: dict[str, Path], references: dict[str, Path], n_batches: int = INTERIM_BATCHES
) -> str:
    """A markdown progress report: each run's latest checkpoint (``checkpoints/last.pt``)
    and the ``references`` (name -> checkpoint: today's zoo) scored on the same
    ``n_batches`` test batches of priors (a) and (b). Says which runs are unfinished."""
    lines, rows = [], []
    for name, folder in runs.items():
        if not (folder / "config.yaml").is_file() or not last_checkpoint(folder).exists():
            lines.append(f"- `{name}`: not started (no checkpoint in {repo_relative(folder)})")
            continue
        st = run_status(folder)
        done = "finished" if st.finished else "UNFINISHED"
        hours = "" if st.train_hours is None else f", {st.train_hours:.1f} h trained"
        lines.append(
            f"- `{name}`: {done}, checkpoint at step {st.steps_done:,} of {st.steps_total:,} "
            f"({100 * st.steps_done / st.steps_total:.0f}%{hours})"
        )
        steps = f"{st.steps_done:,} / {st.steps_total:,}"
        rows.append(_row(f"`{name}` (interim)", steps, _scores(last_checkpoint(folder), n_batches)))
    for name, path in references.items():
        rows.append(_row(f"`{name}`", "shipped", _scores(path, n_batches)))
    header = [
        "| model | steps | tasks | (a) LL | (a) gap | "
        + " | ".join(KERNELS)
        + " | (b) LL | (b) gap |",
        "|" + " --- |" * (len(KERNELS) + 7),
    ]
    return "\n".join(
        [
            "# v2 zoo long runs: interim check of unfinished runs (NOT a result)",
            "",
            *lines,
            "",
            f"Gap to the GP oracle (nats per target point, lower is better; goal <= "
            f"{TARGET_GAP}) on the first {n_batches} test batches: (a) the single-kernel "
            "prior of today's zoo (per kernel: a quarter of the batches each), (b) the "
            "v2 composite prior's composite tasks: the zoo's shared priors "
            "(`experiments/zoo/score.py`), so every row has the same tasks.",
            "",
            *(header + rows if rows else ["(no checkpoint to score yet)"]),
            *irreducible_note(BAYES_REFERENCE),
        ]
    )


def irreducible_note(path: Path) -> list[str]:
    """Lines citing the Bayes-average reference at ``path`` (``experiments/bayes/reference.py``):
    how much of prior (a)'s gap no model can remove. None when it has not been computed."""
    if not path.is_file():
        return []
    ref = json.loads(path.read_text())
    e = ref["eval"]
    kernels = ", ".join(f"{k} {ref['per_kernel'][k]['gap']:.3f}" for k in KERNELS)
    return [
        "",
        f"Of (a)'s gap, {pm(e['gap'], e['gap_se'])} is irreducible: the Bayes-optimal "
        f"predictive (GPs averaged over the prior's hyper-parameters) is that far from the "
        f"oracle on the first {e['n_tasks']:,} of the cards' test tasks ({kernels}; "
        f"`{repo_relative(path)}`). The rest of a model's gap is its own shortfall.",
    ]


def composite_runs(root: Path = LONG_RUNS) -> dict[str, Path]:
    """The composite-prior zoo names and the folders of the long runs they ship (last stages)
    under ``root``."""
    return {name: root / shipped_run(name) for name in COMPOSITE_MODELS}
