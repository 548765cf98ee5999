"""The 1D zoo in one report: every ``gp1d-*`` card in ``src/tnpx/zoo/``, the first models' and
the long runs', on the single-kernel prior (a) and the composite prior (b) against the GP
oracle; the part of each gap that no model can remove (``bayes-reference.json``,
:mod:`experiments.bayes.reference`); and zero-shot on measured series beside a GP fitted per
series (for each model the newest ``real-series*.json`` that scored it,
:mod:`experiments.zero_shot.series`). The 2D models' cards (``dim_x: 2``) add a section of their
own (:func:`experiments.zoo.report_2d.zoo_section`).

    python -m experiments.zoo.train --report      # results/pretrained/zoo.{md,json}

The scores are the cards' own (each card names the command and commit that produced it),
except prior (b) for cards that predate it (today's zoo): those are computed here, on the same
test tasks as the long runs' cards.
"""

from __future__ import annotations

import json
from pathlib import Path

from experiments.bayes.report import shortfalls
from experiments.kit import pm_key
from experiments.zoo.cells import (
    generation,
    real_section,
    safe_cells,
    stage_steps,
    train_hours,
)
from experiments.zoo.goals import goals_section
from experiments.zoo.readme import write_readme
from experiments.zoo.report_2d import zoo_cards_2d, zoo_section
from experiments.zoo.score import KERNELS, PRIORS, ROOT, prior_sampler, prior_score
from experiments.zoo.ship import (
    COMPOSITE_MODELS,
    TARGET_GAP,
    WIDE_MODELS,
    real_series_summary,
    repo_relative,
    shipped_run,
)
from tnpx.checkpoint import load
from tnpx.training import last_checkpoint, run_status
from tnpx.zoo import trained_on_composite

REPORT = "zoo"  # results/pretrained/zoo.{md,json,png}


def zoo_cards(zoo: Path) -> dict[str, dict]:
    """The ``gp1d-*`` cards of ``zoo`` by name, in zoo generation order
    (:func:`experiments.zoo.cells.generation`), each generation sorted by name."""
    paths = sorted(zoo.glob("gp1d-*.json"), key=lambda p: (generation(p.stem), p.stem))
    return {p.stem: json.loads(p.read_text()) for p in paths}


def with_priors(cards: dict[str, dict], zoo: Path) -> dict[str, dict]:
    """``cards`` with each prior of :data:`~experiments.zoo.score.PRIORS` scored for the
    cards that lack it (they predate it), on as many tasks as the cards that have it (else 64
    batches); each such entry marked ``"computed_here": True``."""
    out, models = dict(cards), {}
    for key in PRIORS:
        n_tasks = [c[key]["n_tasks"] for c in cards.values() if key in c]
        batch_size = prior_sampler(key).batch_size
        n_batches = n_tasks[0] // batch_size if n_tasks else 64
        for name, card in out.items():
            if key not in card:
                if name not in models:  # each model loaded once, whatever it lacks
                    models[name] = load(zoo / f"{name}.pt").eval()
                entry = prior_score(models[name], key, n_batches)
                out[name] = {**card, key: {**entry, "computed_here": True}}
    return out


def unshipped(zoo: Path, runs: Path) -> list[str]:
    """Lines for the composite- and wide-prior runs without a card in ``zoo``: how far each has
    trained."""
    lines = []
    for name in [*COMPOSITE_MODELS, *WIDE_MODELS]:
        if (zoo / f"{name}.json").exists():
            continue
        folder = runs / shipped_run(name)
        if not last_checkpoint(folder).exists():
            lines.append(f"- `{name}`: not shipped; its long run has no checkpoint yet.")
            continue
        st = run_status(folder)
        lines.append(
            f"- `{name}`: not shipped; its long run (`{repo_relative(folder)}`) is at step "
            f"{st.steps_done:,} of {st.steps_total:,}, and only a finished run is shipped."
        )
    return lines


def summary_rows(cards: dict[str, dict]) -> list[str]:
    rows = [
        "| name | model | params | trained on | steps (batch) | train time | (a) LL | (a) gap "
        f"| goal ≤ {TARGET_GAP} | (a) 95% cov. | (b) LL | (b) gap | (c) LL | (c) gap "
        "| safe range | hard limit | far cov. | card |",
        "|" + " --- |" * 18,
    ]
    for name, c in cards.items():
        a = c["eval"]
        hours, steps = train_hours(c), stage_steps(c)
        met = "met" if a["gap"] <= TARGET_GAP else f"missed by {a['gap'] - TARGET_GAP:.3f}"
        others = " | ".join(
            f"{pm_key(c[key], 'll')} | {pm_key(c[key])}"
            + (" *" if c[key].get("computed_here") else "")
            for key in PRIORS
        )
        prior = f"composite (v{generation(name)})" if trained_on_composite(c) else "single-kernel"
        rows.append(
            f"| `{name}` | {c['model']} | {c['params']:,} | {prior} | {steps} "
            f"({c['batch_size']}) | {hours} | {pm_key(a, 'll')} | {pm_key(a)} | {met} | "
            f"{a['coverage95']:.3f} | {others} | {safe_cells(c)} | "
            f"`{c['commit']}` |"
        )
    return rows


def kernel_rows(cards: dict[str, dict], bayes: dict | None) -> list[str]:
    rows = ["| name | " + " | ".join(KERNELS) + " |", "|" + " --- |" * (len(KERNELS) + 1)]
    for name, c in cards.items():
        cells = " | ".join(pm_key(c["per_kernel"][k]) for k in KERNELS)
        rows.append(f"| `{name}` | {cells} |")
    if bayes is not None:
        cells = " | ".join(pm_key(bayes["per_kernel"][k]) for k in KERNELS)
        n = bayes["per_kernel"][KERNELS[0]]["n_tasks"]
        rows.append(f"| irreducible (Bayes average, {n} tasks each) | {cells} |")
    return rows


def shipped_after(card: dict | None, bayes: dict) -> bool:
    """Whether a card's weights were shipped after the Bayes split was computed (its commit is
    not an ancestor of the split's): the split's row is then of the model's earlier weights."""
    import subprocess

    if not card:
        return False
    ours, theirs = card["commit"].split("+")[0], bayes["commit"].split("+")[0]
    try:
        done = subprocess.run(
            ["git", "merge-base", "--is-ancestor", ours, theirs], cwd=ROOT, capture_output=True
        )
    except OSError:
        return False
    return done.returncode == 1  # 0: an ancestor; 1: not; other: unknown (say nothing)


def split_rows(bayes: dict, cards: dict[str, dict] | None = None) -> list[str]:
    """Each model the Bayes reference scored: its gap = irreducible + its own shortfall (†: of
    weights shipped before the card's, :func:`shipped_after`)."""
    e = bayes["eval"]
    rows = [
        "| name | gap | irreducible | own shortfall | interpolating | extrapolating | periodic |",
        "|" + " --- |" * 7,
    ]
    for name, m in e["models"].items():
        inter, extra, periodic = shortfalls(bayes, name)
        mark = " †" if shipped_after((cards or {}).get(name), bayes) else ""
        rows.append(
            f"| `{name}`{mark} | {pm_key(m)} | {pm_key(e)} | {pm_key(m, 'shortfall')} | "
            f"{inter:.3f} | {extra:.3f} | {periodic:.3f} |"
        )
    return rows


def reading(cards: dict[str, dict], bayes: dict | None) -> str:
    best = min(cards, key=lambda n: cards[n]["eval"]["gap"])
    gap = cards[best]["eval"]["gap"]
    parts = [
        f"The closest to the GP oracle on the single-kernel prior is `{best}`, gap {gap:.3f}: "
        + (
            f"the zoo's goal (≤ {TARGET_GAP}) is met."
            if gap <= TARGET_GAP
            else f"the zoo's goal (≤ {TARGET_GAP}) is missed by {gap - TARGET_GAP:.3f} nats."
        )
    ]
    worst = max(KERNELS, key=lambda k: cards[best]["per_kernel"][k]["gap"])
    parts.append(
        f"Its largest gap is on {worst} tasks ({cards[best]['per_kernel'][worst]['gap']:.3f})."
    )
    if bayes is not None:
        e = bayes["eval"]
        parts.append(
            f"Of any model's gap, {pm_key(e)} is irreducible (the "
            "Bayes-optimal predictive is that far from the oracle, which knows each task's "
            f"hyper-parameters); {worst} {bayes['per_kernel'][worst]['gap']:.3f} of it."
        )
        if best in e["models"] and not shipped_after(cards[best], bayes):
            inter, extra, periodic = shortfalls(bayes, best)
            parts.append(
                f"The rest is `{best}`'s own shortfall, {e['models'][best]['shortfall']:.3f} on "
                f"the reference's tasks: {inter:.3f} interpolating, {extra:.3f} extrapolating, "
                f"{periodic:.3f} on periodic tasks."
            )
    return " ".join(parts)


def report(
    cards: dict[str, dict],
    bayes: dict | None,
    real: dict[str, dict],
    pending: list[str],
    command: str,
    commit: str,
    results: Path | None = None,
) -> str:
    """The markdown report; ``real``: each model's real-series summary (may be empty);
    ``results``: the folder of the result files the zoo's goals are read from (None: no goals
    section)."""
    first = next(iter(cards.values()))
    sections = [
        "# The 1D zoo: every model against the GP oracle on the same tasks",
        "",
        "**What**: every 1D model shipped in `src/tnpx/zoo/`, scored against the GP oracle on "
        f"the same {first['eval']['n_tasks']:,} held-out tasks of each prior, whatever it was "
        "trained on: (a) the single-kernel prior of today's zoo (five kernels, variance 1); (b) "
        "the v2 zoo's composite prior (sums of a trend, a periodic component and rough "
        "variation, per-task output scale and noise), its composite tasks only; (c) the v3 "
        "zoo's prior (wider lengthscales and periods, polynomial trends, locally periodic sums, "
        "near noise-free tasks, 3-256 context points), all its tasks. Metric: LL per target "
        "point (higher is better), mean ± s.e. over tasks; the gap is oracle − model, paired "
        "over tasks (lower is better). The v2 and v3 models are long runs "
        "(`experiments/long_runs/driver.py`) trained on their composite priors, which contain (a).",
        "",
        f"**Command**: `{command}`, commit `{commit}`. The scores are the cards' (`card`: the "
        "commit whose `python -m experiments.zoo.train` or `--ship` wrote it)"
        + (
            "; the (b) and (c) cells marked * were computed by this command (the card predates "
            "the prior)."
            if any(c[k].get("computed_here") for c in cards.values() for k in PRIORS)
            else "."
        ),
        "",
        f"**Protocol or budget**: the zoo's goal, a gap ≤ {TARGET_GAP} nats on (a). Not a paper "
        "experiment: no paper number applies. Training: see each card's `config` and steps.",
        "",
        f"**Hardware**: {first['hardware']} (the cards').",
        "",
        *summary_rows(cards),
        *(["", "Not in the zoo:", "", *pending] if pending else []),
        "",
        f"Gap to the GP oracle per kernel on (a) (256 tasks each; `{REPORT}.png` draws it):",
        "",
        *kernel_rows(cards, bayes),
    ]
    if bayes is not None:
        sections += [
            "",
            f"Each gap split on the first {bayes['eval']['n_tasks']:,} of these tasks "
            f"(`bayes-reference.md`, commit `{bayes['commit']}`): the irreducible part (oracle − "
            "Bayes average) and the model's own shortfall (average − model), overall, on the "
            "targets inside and beyond the context's range, and on periodic tasks:",
            "",
            *split_rows(bayes, cards),
        ]
        if any(shipped_after(cards.get(n), bayes) for n in bayes["eval"]["models"]):
            sections += [
                "",
                "† Re-shipped since the split: the row is of the model's earlier weights (its "
                "card's gaps above are of today's); `python -m experiments.bayes.reference` "
                "recomputes it.",
            ]
    if results is not None:
        fresh = lambda name: bayes is not None and not shipped_after(cards[name], bayes)  # noqa: E731
        sections += goals_section(list(cards), bayes, results, fresh)
    for kind in ("interpolation", "extrapolation"):
        sections += real_section(real, kind, kind)
    sections += ["", f"**Reading**: {reading(cards, bayes)}", ""]
    return "\n".join(sections)


def plot_gaps(cards: dict[str, dict], bayes: dict | None, path: Path) -> Path:
    """Bars: each model's gap to the oracle on (a), overall and per kernel, the irreducible
    part (Bayes average) as a black tick on each group, and the gap goal as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from tnpx.plot import save_figure

    groups = ["all", *KERNELS]
    x = np.arange(len(groups))
    width = 0.8 / len(cards)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for i, (name, c) in enumerate(cards.items()):
        entries = [c["eval"], *(c["per_kernel"][k] for k in KERNELS)]
        ax.bar(
            x - 0.4 + (i + 0.5) * width,
            [e["gap"] for e in entries],
            width,
            yerr=[2 * e["gap_se"] for e in entries],
            label=name,
            capsize=2,
        )
    if bayes is not None:
        floor = [bayes["eval"]["gap"], *(bayes["per_kernel"][k]["gap"] for k in KERNELS)]
        ax.hlines(floor, x - 0.42, x + 0.42, colors="black", label="irreducible (Bayes average)")
    ax.axhline(TARGET_GAP, color="grey", ls="--", lw=1, label=f"goal ({TARGET_GAP})")
    ax.set_xticks(x, groups)
    ax.set_ylabel("gap to the GP oracle (nats per target)")
    ax.set_title("The 1D zoo on the single-kernel prior (a): lower is better; bars ± 2 s.e.")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def write_report(
    zoo: Path, out: Path, runs: Path, command: str, commit: str, readme: Path | None = None
) -> tuple[Path, dict[str, dict]]:
    """Write ``out/zoo.md``, ``out/zoo.json`` (the cards as reported) and ``out/zoo.png``
    (:func:`plot_gaps`), and the zoo tables of ``readme`` when given, the 2D one once a 2D
    card exists (:func:`experiments.zoo.readme.write_readme`); return the report's path and the
    1D cards."""
    cards = with_priors(zoo_cards(zoo), zoo)
    if not cards:
        raise ValueError(f"{zoo}: no gp1d-* cards to report")
    bayes_path = out / "bayes-reference.json"
    bayes = json.loads(bayes_path.read_text()) if bayes_path.is_file() else None
    real = {n: r for n in cards if (r := real_series_summary(n, out)) is not None}
    cards_2d = zoo_cards_2d(zoo)
    text = report(cards, bayes, real, unshipped(zoo, runs), command, commit, out)
    text += zoo_section(cards_2d, out)
    out.mkdir(parents=True, exist_ok=True)
    plot_gaps(cards, bayes, out / f"{REPORT}.png")
    (out / f"{REPORT}.md").write_text(text)
    (out / f"{REPORT}.json").write_text(json.dumps({**cards, **cards_2d}, indent=1) + "\n")
    if readme is not None:
        write_readme(readme, cards, cards_2d)
    return out / f"{REPORT}.md", cards
