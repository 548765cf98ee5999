"""The parts of a zoo card's page that only a 2D model's card has (``dim_x: 2``, shipped by
``experiments/zoo/ship_2d.py``): its scores under BSA-TNP's shifts of its own prior
(``shifts``), its measured elevation fields beside a fitted GP (``real_fields``, where a 1D card
has ``real_series``), their Limits items, and the 2D models' table of the zoo's overview.

A results page is linked only where the site will carry it (``docs/hooks/pages.py`` copies
``results/**/*.md``), else the zoo's scores, which hold every shipped card's rows. Called by
``docs/hooks/zoo_cards.py``; the formatting both share is ``docs/hooks/card_cells.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from card_cells import code, index_row, measured_table, num, table, worse_than_gp

RESULTS = Path(__file__).resolve().parents[2] / "results"
ZOO_SCORES = "reproductions/pretrained/zoo.md"  # results/pretrained/zoo.md: its 2D part
SHIFTS = "reproductions/pretrained/shifts-2d.md"  # experiments/zero_shot/shifts.py's
FIELD_NAMES = {"jacksboro": "Jacksboro fault", "topobathy": "Vancouver Island"}
DENSITY_WORDS = {2.0: "twice", 0.5: "half"}


def results_link(text: str, page: str, link: Callable[[str], str]) -> str:
    """``[text](page)`` where the site will carry ``page`` (``reproductions/X.md``: the file
    ``results/X.md``), else a link to the zoo's scores."""
    if (RESULTS / page.removeprefix("reproductions/")).is_file():
        return f"[{text}]({link(page)})"
    return f"[the zoo's scores]({link(ZOO_SCORES)})"


def _mean_se(pair: list[float] | None) -> str:
    """A ``[mean, s.e.]`` pair (as ``experiments.zero_shot.shifts`` writes them), as
    ``mean ± s.e.``; '—' if absent."""
    return "—" if not pair else f"{num(pair[0])} ± {num(pair[1])}"


def _is_base(row: dict) -> bool:
    """Whether a shift condition is the unshifted prior, which the others change from."""
    return not row.get("shift") and row.get("scale", 1.0) == 1.0


def condition_text(row: dict) -> str:
    """What a shift condition does to the tasks, from its ``shift`` and ``scale`` (the sampler's
    ``scale = 1/sqrt(F)`` for density factor ``F``)."""
    if row.get("shift"):
        return (
            f"every input moved by {row['shift']:+g} on both axes, far beyond the training box; "
            "the tasks are the same (their kernels see differences of inputs only), so a "
            "translation-equivariant model scores as unshifted"
        )
    scale = row.get("scale", 1.0)
    if scale == 1.0:
        return "the prior as trained"
    density = round(1 / scale**2, 6)
    how = DENSITY_WORDS.get(density, f"{density:g} times")
    beyond = ", the inputs reaching beyond the training box" if scale > 1 else ""
    return (
        f"the points {how} as dense: the same tasks on a domain {scale:.2f} times as "
        f"wide with as many points (every lengthscale {scale:.2f} times as long{beyond})"
    )


def shifts(card: dict, link: Callable[[str], str]) -> list[str]:
    """The "Shifts" section: a row per condition of the card's ``shifts`` (model and oracle LL,
    the change from unshifted, coverage), and what each condition is."""
    out = ["## Shifts", ""]
    found = card.get("shifts") or {}
    rows = found.get("conditions") or {}
    if not rows:
        return out + ["Not on this card (it has no `shifts`).", ""]
    out += [
        f"BSA-TNP's shifts of its own prior, on {found.get('n_tasks', '?')} held-out tasks (eval "
        f"seed {found.get('eval_seed', '?')}): each condition holds the same tasks, only placed "
        "elsewhere, so the change from the unshifted LL is paired over them (± one standard "
        "error). LL per target point, in nats; the GP oracle's beside it moves too where a "
        "condition makes the tasks easier or harder.",
        "",
        *table(
            ["condition", "LL", "GP oracle LL", "change", "oracle's change", "95 % coverage"],
            [
                [
                    name,
                    _mean_se(r.get("ll")),
                    _mean_se(r.get("oracle_ll")),
                    "—" if _is_base(r) else _mean_se(r.get("change")),
                    "—" if _is_base(r) else _mean_se(r.get("oracle_change")),
                    num(r.get("coverage95")),
                ]
                for name, r in rows.items()
            ],
        ),
        "",
        *(f"- *{name}*: {condition_text(r)}." for name, r in rows.items()),
        "",
        f"Every 2D model under the same shifts: {results_link('the shifts', SHIFTS, link)}.",
        "",
    ]
    return out


def real_fields(card: dict, link: Callable[[str], str]) -> list[str]:
    """The "Measured fields" section: per field and context size, the card's ``real_fields``
    RMSE and NLL beside the fitted GP's."""
    real = card.get("real_fields")
    out = ["## Measured fields", ""]
    if not real:
        return out + ["Not on this card (it has no `real_fields`).", ""]
    page = f"reproductions/pretrained/{Path(real.get('file', '?')).stem}.md"
    out += [
        "Zero-shot on measured elevation fields it never saw (shipped in matplotlib), beside a "
        "GPyTorch GP fitted to each context, in metres; mean ± s.e. over "
        f"{real.get('n_windows', '?')} windows of each field. Each window's targets are the "
        "same for every context size.",
        "",
        *measured_table(
            real, ["field", "context points"], lambda f, n: [FIELD_NAMES.get(f, f), n], " (m)"
        ),
        "",
        f"From `results/pretrained/{real.get('file', '?')}` (commit {code(real.get('commit'))}); "
        f"the full table: {results_link('measured fields', page, link)}.",
        "",
    ]
    return out


def limits(card: dict) -> list[str]:
    """The Limits items of a 2D card's shifts (a condition that widens the gap to the oracle by
    more than two standard errors) and measured fields (where a fitted GP predicts better)."""
    items = []
    rows = (card.get("shifts") or {}).get("conditions") or {}
    base = next((r for r in rows.values() if _is_base(r)), None)
    if base and base.get("gap"):
        gap, se = base["gap"]
        wider = [
            f"{name}: {_mean_se(r['gap'])}"
            for name, r in rows.items()
            if r.get("gap") and r["gap"][0] - gap > 2 * math.hypot(r["gap"][1], se)
        ]
        if wider:
            items.append(
                "Under BSA-TNP's shifts its gap to the GP oracle widens by more than two standard "
                f"errors from {_mean_se(base['gap'])} unshifted ({'; '.join(wider)}; nats per "
                "target point)."
            )
    worse: dict[str, list[str]] = {}
    for key in worse_than_gp(card.get("real_fields") or {}):
        field, n = key.split("/", 1)
        worse.setdefault(FIELD_NAMES.get(field, field), []).append(n)
    if worse:
        where = "; ".join(f"{f} with {', '.join(n)} context points" for f, n in worse.items())
        items.append(
            "On measured fields it predicts worse than a GP fitted to each window (NLL more than "
            f"two standard errors above the GP's): {where}. There, fit a GP."
        )
    return items


def index_section(cards: dict[str, dict]) -> list[str]:
    """The zoo overview's table of the 2D models (none without 2D cards)."""
    if not cards:
        return []
    rows = [index_row(name, c, [c.get("eval") or {}]) for name, c in cards.items()]
    header = ["model", "architecture", "prior", "training", "gap, own 2D prior"]
    return [
        "Zero-shot stand-ins for 2D GP regression (two input columns, one output), each scored "
        "on its own 2D prior (`gp2d-composite`); its page adds its scores under BSA-TNP's "
        "shifts of that prior and on measured elevation fields.",
        "",
        *table([*header, "safe range / hard limit (widths)"], rows),
        "",
    ]
