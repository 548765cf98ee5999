"""The report of ``experiments/zero_shot/co2_gaps.py``: ``<stem>.md`` in RESULTS.md's order (what,
command, protocol, hardware, tables, a reading) and the raw run as ``<stem>.json``."""

from __future__ import annotations

import json
import re
from pathlib import Path

from experiments.kit import paired_mean_se, pm_units
from experiments.zero_shot.co2_gaps import HIDDEN, KINDS, N_RUNS, RUN_WEEKS, WINDOW
from experiments.zero_shot.series_report import GP
from tnpx.output_files import atomic_write
from tnpx.zoo import list_pretrained, model_card

HEAD = (
    "model | RMSE (ppm) | NLL | 95 % coverage | >5σ % | std at gaps (ppm) | "
    "std at context inputs (ppm) | coverage, std floored at GP noise | NLL, floored"
)


def _table(summary: dict, labels: list[str]) -> list[str]:
    """One row per label: scores (mean ± s.e. over windows; shares pooled over targets) and
    the diagnosis (medians over windows; the floored what-if for the models only)."""
    rows = ["| " + HEAD + " |", "|" + " --- |" * len(HEAD.split(" | "))]
    for lab in labels:
        s = summary[lab]
        floored = (
            [f"{s['floored_coverage95']:.2f}", f"{s['floored_nll']:.3f}"]
            if "floored_nll" in s
            else ["-", "-"]
        )
        cells = [
            f"`{lab}`" if lab != GP else lab,
            pm_units(s["rmse"]),
            pm_units(s["nll"]),
            f"{s['coverage95']:.2f}",
            f"{100 * s['beyond_5sd']:.1f}",
            f"{s['std_gap']:.3f}",
            f"{s['std_ctx']:.3f}",
            *floored,
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def noise_reading(run: dict) -> str:
    """Per model: the noise it assumes (its std at the context's inputs) over the fitted GP's
    noise std, and both over the context's std (the noise-to-signal ratio the priors draw)."""
    parts = []
    for kind in KINDS:
        s = run["results"][kind]["summary"]
        ratios = ", ".join(
            f"`{lab}` {s[lab]['std_ctx'] / s['gp_noise']:.2f}" for lab in run["labels"] if lab != GP
        )
        parts.append(
            f"{kind}: GP noise {s['gp_noise']:.3f} ppm = {s['gp_noise'] / s['ctx_std']:.3f} of "
            f"the context's std ({s['ctx_std']:.2f} ppm); each model's std at its context inputs "
            f"over the GP's noise: {ratios}"
        )
    return "; ".join(parts) + "."


LOW_NOISE = 0.6  # a model whose std at its context inputs is below this share of the GP's noise


def calibration_reading(run: dict) -> str:
    """Per model: its coverage and NLL beside the fitted GP's in each kind, and whether it
    assumes less than :data:`LOW_NOISE` of the GP's noise (with the what-if's coverage)."""
    parts = []
    for lab in (lab for lab in run["labels"] if lab != GP):
        cells = []
        for kind in KINDS:
            s = run["results"][kind]["summary"]
            diff, se = paired(run, kind, lab, "nll")
            low = s[lab]["std_ctx"] < LOW_NOISE * s["gp_noise"]
            cells.append(
                f"{kind}: coverage {s[lab]['coverage95']:.2f} (GP {s[GP]['coverage95']:.2f}), "
                f"NLL {diff:+.3f} ± {se:.3f} from the GP's"
                + (
                    f", assumes {s[lab]['std_ctx']:.2f} ppm of noise against the GP's "
                    f"{s['gp_noise']:.2f} (floored at it: coverage "
                    f"{s[lab]['floored_coverage95']:.2f})"
                    if low
                    else ""
                )
            )
        parts.append(f"`{lab}`: " + "; ".join(cells))
    return ". ".join(parts) + "."


def paired(run: dict, kind: str, model: str, metric: str) -> tuple[float, float]:
    """Mean ± s.e. over the windows of ``model``'s metric less the fitted GP's."""
    windows = [w["scores"] for w in run["results"][kind]["windows"]]
    return paired_mean_se([w[model][metric] for w in windows], [w[GP][metric] for w in windows])


def prior_noise(run: dict) -> str:
    """Each zoo model's training noise, as its card words it (``noise std ...`` clauses)."""
    parts = []
    for lab, spec in run["models"].items():
        if spec in list_pretrained(include_retired=True):
            clauses = re.findall(
                r"(?:\d+(?:\.\d+)? of all tasks near noise-free )?\(?noise std [^;)]*",
                model_card(spec)["trained_on"],
            )
            parts.append(
                f"`{lab}`: " + "; ".join(c.lstrip("(") + (")" if "(" in c else "") for c in clauses)
            )
    return "Training noise, from the cards: " + " | ".join(parts) + "." if parts else ""


def markdown(run: dict) -> str:
    """The report's text (RESULTS.md's order)."""
    labels = run["labels"]
    models = ", ".join(f"`{lab}`" for lab in labels if lab != GP)
    lines = [
        "# Filling gaps in the weekly Mauna Loa CO₂ record: the zoo against a fitted GP",
        "",
        f"**What**: the zoo's 1D models ({models}) zero-shot through `tnpx.predict` (units "
        "mapped from the context) against a GPyTorch GP fitted to each window "
        "(`experiments/zero_shot/fitted_gp.py`: RBF + periodic + Matérn + Gaussian noise, by "
        "the marginal likelihood), filling gaps in the weekly CO₂ record. Per target week, in "
        "ppm: RMSE (lower is better), Gaussian NLL (lower is better), 95 % coverage (0.95 is "
        "calibrated), share beyond 5 predicted σ; mean ± s.e. over windows, shares pooled over "
        "targets. Diagnosis (medians over windows): the predicted std at the gaps, the "
        "predicted std at the context's own inputs (the noise a model assumes), and the "
        "coverage and NLL had the model's std been floored at the fitted GP's noise std (a "
        f"what-if, not a fix). Data: {run['source']}.",
        "",
        f"**Command**: `{run['command']}`, commit `{run['commit']}` (recorded at start).",
        "",
        "**Protocol or budget**: not a paper experiment; zero-shot (nothing fitted to the data "
        f"but the GP). {run['n_windows']} windows per kind of {WINDOW} consecutive weeks at "
        f"random starts (seeded): `scattered` hides a random {HIDDEN:.0%} of a window's weeks "
        f"(targets: those inside the context's range); `runs` hides {N_RUNS} runs of "
        f"{RUN_WEEKS} consecutive weeks.",
        "",
        f"**Hardware and time**: {run['hardware']}; {run['wall_s'] / 60:.1f} min for the whole "
        f"table; load average {run['load_average']:.1f} at the start.",
        "",
    ]
    for kind in KINDS:
        lines += [f"## Gaps: {kind}", "", *_table(run["results"][kind]["summary"], labels), ""]
    lines += [
        "## Reading",
        "",
        f"Noise: {noise_reading(run)}",
        "",
        prior_noise(run),
        "",
        calibration_reading(run),
        "",
    ]
    return "\n".join(lines)


def write_report(run: dict, stem: Path) -> str:
    """Write ``<stem>.json`` and ``<stem>.md``; return the markdown."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    text = markdown(run)
    for suffix, content in ((".json", json.dumps(run, indent=1) + "\n"), (".md", text)):
        with atomic_write(stem.with_suffix(suffix)) as tmp:
            tmp.write_text(content)
    return text
