"""The "Limits" section of a model card's page (``docs/hooks/zoo_cards.py`` writes the rest):
each item is read off the card (its held-out scores against the zoo's goal, its safe range,
a 2D card's shifts, its measured series), so no limit of any one model is written by hand."""

from __future__ import annotations

import math
from collections.abc import Callable

import zoo_cards_2d  # docs/hooks/ (MkDocs puts a hook's folder on sys.path to load it)
from card_cells import (
    KERNEL_NAMES,
    SERIES_NAMES,
    in_widths,
    integer,
    is_2d,
    pm,
    scored_on,
    worse_than_gp,
)

TAKES = {  # the Limits' last item, by the first words of the card's trained_on
    "1D": "It takes one input and one output column (1D regression) and ",
    "2D": "It takes two input columns and one output column (2D regression) and ",
}


def miscalibrated_bins(card: dict) -> list[dict]:
    """Safe-range profile bins (beyond the context) whose 95 % coverage is below the card's
    ``min_coverage``."""
    sr = card.get("safe_range") or {}
    least = sr.get("min_coverage", 0.9)
    return [b for b in sr.get("profile", []) if b.get("high", 0) > 0 and b["coverage95"] < least]


def limits(
    card: dict, target_gap: float, bayes: dict | None, link: Callable[[str], str]
) -> list[str]:
    """The card page's "Limits" section: what its scores, its safe range, (2D) its shifts and
    its measured series say it cannot do, and the prior it knows."""
    name = card["name"]
    items = _score_limits(card, target_gap, bayes, link) + _safe_range_limits(card)
    if is_2d(card):
        items += zoo_cards_2d.limits(card)
    worse = [k.split("/")[0] for k in worse_than_gp(card.get("real_series") or {}, "extrapolation")]
    worse = [SERIES_NAMES.get(series, series) for series in worse]
    if worse:
        items.append(
            "On measured series, beyond the context it predicts worse than a GP fitted to the "
            f"series (NLL more than two standard errors above the GP's) on {', '.join(worse)}: "
            "it reverts to the mean where a fitted periodic kernel carries the cycle on. To "
            "extrapolate a seasonal series, fit a GP."
        )
    items.append(
        TAKES.get(card.get("trained_on", "")[:2], "It ")
        + "knows only its training prior; on data unlike it, score it first (`tnpx eval`) or "
        f"fine-tune it (`train.init_from: {name}`)."
    )
    return ["## Limits", "", *(f"- {item}" for item in items), ""]


def _score_limits(card: dict, target_gap: float, bayes: dict | None, link) -> list[str]:
    """The Limits items of the card's held-out scores: its gap against the zoo's goal (a 1D
    model's: the goal is on the single-kernel prior), by kernel, beside the Bayes reference."""
    items = []
    e = card.get("eval")
    if e and "gap" in e and is_2d(card):
        items.append(
            f"Its gap to the GP oracle on {scored_on(card)} is {pm(e, 'gap')} nats per target "
            f"point (the zoo's goal of at most {target_gap:g} is on the 1D single-kernel prior)."
        )
    elif e and "gap" in e:
        if e["gap"] <= target_gap:
            items.append(
                f"**Gap goal met**: {pm(e, 'gap')} nats on the single-kernel prior against "
                f"the zoo's goal of at most {target_gap:g}."
            )
        else:
            items.append(
                f"**Misses the gap goal**: its gap to the GP oracle on the single-kernel prior is "
                f"{pm(e, 'gap')} nats per target point, {e['gap'] - target_gap:.3f} above "
                f"the zoo's goal of at most {target_gap:g}."
            )
    if not e or "gap" not in e:
        items.append(
            "No held-out score is recorded on this card: its gap to the GP oracle is unknown."
        )
    per = card.get("per_kernel") or {}
    if per:
        worst = max(per, key=lambda k: per[k].get("gap", -math.inf))
        best = min(per, key=lambda k: per[k].get("gap", math.inf))
        items.append(
            f"Its largest gap is on {KERNEL_NAMES.get(worst, worst)} tasks "
            f"({pm(per[worst], 'gap')}), its smallest on {KERNEL_NAMES.get(best, best)} "
            f"({pm(per[best], 'gap')})."
        )
    ref = (bayes or {}).get("eval", {})
    mine = ref.get("models", {}).get(card["name"])
    if mine and "gap" in ref:
        items.append(
            f"Not all of the gap can be closed: the prior's Bayes-optimal predictive is "
            f"{pm(ref, 'gap')} from the oracle on {integer(ref.get('n_tasks'))} tasks of the "
            "single-kernel prior, so "
            f"{pm(mine, 'shortfall')} of this model's gap on them is its own "
            f"([the Bayes reference]({link('reproductions/pretrained/bayes-reference.md')}))."
        )
    if e and "coverage95" in e:
        items.append(
            f"On held-out tasks of {scored_on(card)} its 95 % intervals cover "
            f"{e['coverage95']:.3f} of the targets (calibrated: 0.95)."
        )
    return items


def _safe_range_limits(card: dict) -> list[str]:
    """The Limits items of the card's safe range: how far its calibration holds, and where its
    intervals collapse."""
    items = []
    sr = card.get("safe_range")
    if sr:
        bad = miscalibrated_bins(card)
        if sr["widths"] == 0:
            where = (
                "**Not calibrated beyond its context at all**: already in the first bin outside "
                "the context's range its 95 % coverage is below "
                f"{sr.get('min_coverage', 0.9):g}, so `tnpx.predict` warns for every target "
                "outside the context's range"
            )
        else:
            where = (
                f"**Calibrated only up to {in_widths(sr['widths'])} beyond its context**: past it "
                f"the 95 % coverage falls below {sr.get('min_coverage', 0.9):g}"
            )
        if bad:
            lowest = min(bad, key=lambda b: b["coverage95"])
            where += (
                f" (lowest: {lowest['coverage95']:.3f} at {lowest['low']:g}–{lowest['high']:g} "
                "widths)"
            )
        where += (
            f"; beyond {in_widths(sr['hard_limit'])} its predictions are refused unless you pass "
            "`allow_extrapolation=True`."
        )
        items.append(where)
        profile = sr.get("profile") or []
        collapsed = [i for i, b in enumerate(profile) if b in bad and b.get("beyond_5sd", 0) > 0.1]
        if collapsed:
            i = collapsed[0]
            first = profile[i]
            shrinks = i > 0 and first.get("mean_std", 0) < profile[i - 1].get("mean_std", 0)
            items.append(
                f"From {first['low']:g} widths out it is confidently wrong: "
                f"{first['beyond_5sd']:.0%} of targets lie beyond 5 predicted standard "
                "deviations"
                + (", and its predicted std shrinks instead of growing." if shrinks else ".")
            )
    else:
        items.append("Its safe range was not measured: `tnpx.predict` warns beyond one width.")
    return items
