"""Each zoo model's safe range: how far beyond its context its calibration holds.

For every model in the zoo folder (or ``--models``): its distance profile
(:func:`tnpx.evaluation.extrapolation.distance_profile`) on ``--batches`` held-out batches of
its own training prior with targets out to 3 context widths
(:func:`tnpx.evaluation.extrapolation.prior_profile_sampler`), each task through
``tnpx.predict``'s unit maps; its safe range and hard limit
(:func:`tnpx.evaluation.extrapolation.safe_range`) go into its card as ``safe_range``
(``tnpx.predict`` warns past the first and refuses past the second), and
``--out/safe-range.{md,json,png}`` show every model's profile.

    python -m experiments.zoo.safe_range                 # every zoo model, its card too
    python -m experiments.zoo.safe_range --models gp1d-v2-tnp --no-cards   # a look only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from experiments.zoo.card_file import DirtyTree, check_clean, write_card
from tnpx.apply import training_domain
from tnpx.checkpoint import load
from tnpx.evaluation import (
    DEFAULT_EDGES,
    distance_profile,
    prior_profile_sampler,
    profile_targets,
    safe_range,
)
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import experiment_of

ZOO = Path("src/tnpx/zoo")
BATCHES = 32  # 512 tasks of batch 16, ~100,000 targets: ~0.01 s.e. on each bin's coverage


def measure(checkpoint: Path, n_batches: int = BATCHES, progress: bool = False) -> dict:
    """A card's ``safe_range`` entry for the model at ``checkpoint``: the range, the limit,
    the criteria, the tasks and the whole profile (one row per distance bin)."""
    cfg = experiment_of(checkpoint)
    if cfg is None:
        raise ValueError(f"{checkpoint}: stores no experiment config, so its prior is unknown")
    model = load(checkpoint).eval()
    sampler = prior_profile_sampler(cfg)
    start = time.perf_counter()
    profile = distance_profile(
        model, sampler, n_batches, training_domain(cfg), DEFAULT_EDGES, progress=progress
    )
    found = safe_range(profile)
    return {
        **found.as_dict(),
        "n_tasks": n_batches * sampler.batch_size,
        "tasks": f"{cfg.data['name']} prior, test split, eval.seed {cfg.eval.seed}, "
        + ", ".join(f"{k} {v}" for k, v in profile_targets(cfg).items()),
        "seconds": time.perf_counter() - start,
        "profile": [vars(b) for b in profile],
    }


def _bins(entry: dict) -> str:
    return " | ".join(f"{b['coverage95']:.3f}" if b["n"] else "–" for b in entry["profile"])


def report(entries: dict[str, dict], commit: str, command: str, plot: str) -> str:
    """The markdown results file: every model's coverage and mean std per distance bin."""
    first = next(iter(entries.values()))
    labels = ["inside"] + [f"({b['low']:g}, {b['high']:g}]" for b in first["profile"][1:]]
    head = "| model | safe range | hard limit | " + " | ".join(labels) + " |"
    rule = "|" + " --- |" * (len(labels) + 3)
    cov = [
        f"| `{n}` | {e['widths']:g} | {e['hard_limit']:g} | {_bins(e)} |"
        for n, e in entries.items()
    ]
    std = [
        f"| `{n}` | " + " | ".join(f"{b['mean_std']:.3f}" for b in e["profile"]) + " |"
        for n, e in entries.items()
    ]
    far = [
        f"| `{n}` | " + " | ".join(f"{100 * b['beyond_5sd']:.1f}" for b in e["profile"]) + " |"
        for n, e in entries.items()
    ]
    ll = [
        f"| `{n}` | " + " | ".join(f"{b['ll']:.3g}" for b in e["profile"]) + " |"
        for n, e in entries.items()
    ]
    short_head = "| model | " + " | ".join(labels) + " |"
    short_rule = "|" + " --- |" * (len(labels) + 1)
    return "\n".join(
        [
            "# The zoo's safe range: calibration against distance beyond the context",
            "",
            "**What**: each shipped model's 95 % interval coverage (the share of held-out "
            "targets inside its central 95 % interval; calibrated = 0.95) against the target's "
            "distance outside the context's input range, in context-range widths (the distance "
            "`tnpx.predict` warns by). Each task goes through `tnpx.predict`'s unit maps (the "
            "context's range onto the training domain, outputs standardised by the context), "
            "so these are the numbers a user gets. Tasks: "
            f"{first['n_tasks']} per model, {first['tasks']}.",
            "",
            f"**Command**: `{command}`, commit `{commit}`.",
            "",
            "**Protocol**: not a paper experiment (the zoo's safe range). The *safe range* is the "
            f"furthest bin edge up to which every bin's coverage is ≥ {first['min_coverage']} "
            f"and no bin's mean std is below {first['shrink']}× the previous bin's; the *hard "
            f"limit* the same with coverage ≥ {first['floor_coverage']}. The cards record "
            "both; `tnpx.predict` warns past the first and refuses past the second unless "
            "`allow_extrapolation=True`. No GP oracle column: the oracle does not see the "
            "context-standardised tasks (its hyper-parameters are the prior's).",
            "",
            f"**Hardware**: {hardware()}; {sum(e['seconds'] for e in entries.values()):.0f} s "
            "in all.",
            "",
            "95 % coverage per distance bin (widths):",
            "",
            head,
            rule,
            *cov,
            "",
            "Mean predicted std per bin, in context-std units (a std that shrinks with "
            "distance is the defect this measures):",
            "",
            short_head,
            short_rule,
            *std,
            "",
            "Targets beyond 5 predicted standard deviations, % per bin:",
            "",
            short_head,
            short_rule,
            *far,
            "",
            "LL per target point per bin, in the tasks' units:",
            "",
            short_head,
            short_rule,
            *ll,
            "",
            f"![coverage and std against distance]({plot})",
            "",
            "**Reading**: " + reading(entries),
            "",
        ]
    )


def reading(entries: dict[str, dict]) -> str:
    """Which models are calibrated how far, from the numbers."""
    parts = []
    for name, e in entries.items():
        worst = min(
            (b for b in e["profile"] if b["n"] and b["high"] <= 1.0),
            key=lambda b: b["coverage95"],
        )
        parts.append(
            f"`{name}` is safe to {e['widths']:g} widths (hard limit {e['hard_limit']:g}); "
            f"its lowest coverage within one width is {worst['coverage95']:.3f} at "
            f"({worst['low']:g}, {worst['high']:g}]"
        )
    return "; ".join(parts) + "."


def plot(entries: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_c, ax_s) = plt.subplots(1, 2, figsize=(11, 4))
    for name, e in entries.items():
        bins = [b for b in e["profile"] if b["n"]]
        mid = [(b["low"] + b["high"]) / 2 for b in bins]
        ax_c.plot(mid, [b["coverage95"] for b in bins], "o-", label=name)
        ax_s.plot(mid, [b["mean_std"] for b in bins], "o-", label=name)
    ax_c.axhline(0.95, color="k", lw=0.8, ls="--")
    ax_c.axhline(next(iter(entries.values()))["min_coverage"], color="r", lw=0.8, ls=":")
    ax_c.set(xlabel="distance beyond the context (context widths)", ylabel="95% coverage",
             title="calibration (dashed: 0.95; dotted: safe-range floor)")  # fmt: skip
    ax_s.set(xlabel="distance beyond the context (context widths)", yscale="log",
             ylabel="mean predicted std (context-std units)", title="predicted std")  # fmt: skip
    ax_c.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="zoo names (default: every model in --zoo)")
    parser.add_argument("--zoo", default=str(ZOO), help="the zoo folder (cards written there)")
    parser.add_argument("--batches", type=int, default=BATCHES)
    parser.add_argument("--out", default="results/pretrained")
    parser.add_argument("--no-cards", action="store_true", help="measure, write no card")
    parser.add_argument(
        "--allow-dirty", action="store_true", help="write cards from uncommitted code (marked)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    zoo = Path(args.zoo)
    names = args.models or sorted(
        p.stem for p in zoo.glob("*.json") if p.with_suffix(".pt").exists()
    )
    commit, command = git_commit(), command_line()
    if not args.no_cards:
        try:
            check_clean(commit, "the safe range into the cards", args.allow_dirty)
        except DirtyTree as err:
            print(f"not measured: {err}", file=sys.stderr)
            return 2
    entries = {}
    for name in names:
        entry = measure(zoo / f"{name}.pt", args.batches, progress=True)
        entry.update(commit=commit, command=command)
        entries[name] = entry
        print(f"{name}: safe to {entry['widths']:g} widths, hard limit {entry['hard_limit']:g}")
        if not args.no_cards:
            card_path = zoo / f"{name}.json"
            card = json.loads(card_path.read_text())
            card["safe_range"] = entry
            write_card(card_path, card, args.allow_dirty)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "safe-range.json").write_text(json.dumps(entries, indent=1) + "\n")
    plot(entries, out / "safe-range.png")
    (out / "safe-range.md").write_text(report(entries, commit, command, "safe-range.png"))
    print(f"wrote {out / 'safe-range.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
