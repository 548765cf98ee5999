"""What the zoo's card pages share (``zoo_cards.py`` for every card, ``zoo_cards_2d.py`` for a
2D card's own sections): number and table formatting, facts read off a card (its prior, its
total steps and time), the measured-data table beside a fitted GP, and the overview's row."""

from __future__ import annotations

import math
from collections.abc import Callable

GP = "fitted GP"  # real_series / real_fields: the GPyTorch GP fitted per series or window
KERNEL_NAMES = {  # the single-kernel prior's kernels, as a page names them
    "rbf": "RBF",
    "matern12": "Matérn-1/2",
    "matern32": "Matérn-3/2",
    "matern52": "Matérn-5/2",
    "periodic": "periodic",
}
SERIES_NAMES = {  # the measured series (results/pretrained/real-series*), as a page names them
    "sunspots": "sunspots",
    "nile": "the Nile",
    "elnino": "El Niño",
    "co2": "CO₂",
}


def num(x, digits: int = 3) -> str:
    """A score: fixed decimals, or three significant digits when large or tiny; '—' if absent."""
    if x is None:
        return "—"
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if x != 0 and abs(x) < 10**-digits:
        return f"{x:.1e}"
    return f"{x:.{digits}f}"


def pm(entry: dict, key: str) -> str:
    """``value ± s.e.`` of ``entry[key]`` (s.e. from ``key_se``), or the value alone."""
    if key not in entry:
        return "—"
    se = entry.get(f"{key}_se")
    return num(entry[key]) if se is None else f"{num(entry[key])} ± {num(se)}"


def hours(seconds) -> str:
    if not seconds:
        return "not recorded"
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{seconds / 60:.0f} min"


def integer(x) -> str:
    return "—" if x is None else f"{int(x):,}"


def code(x) -> str:
    return f"`{x}`" if x else "—"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def in_widths(x: float) -> str:
    """A distance in context-range widths."""
    return f"{x:g} width" + ("" if x == 1 else "s")


def is_2d(card: dict) -> bool:
    """Whether the card's model takes two inputs (``experiments/zoo/ship_2d.py``'s)."""
    return card.get("dim_x", 1) == 2


def prior_kind(card: dict) -> str:
    """'2D composite' for a 2D model; 'composite' when the model trained on the mixture prior (its
    ``trained_on`` sentence reads "a mixture", as ``tnpx.zoo.trained_on_composite`` tests), and
    'v3 composite' when that mixture is the v3 prior's (its sentence names polynomial trends,
    which only the v3 prior has), else 'single-kernel'."""
    text = card.get("trained_on")
    if not text:
        return "not recorded"
    if is_2d(card):
        return "2D composite"
    if "a mixture" not in text:
        return "single-kernel"
    return "v3 composite" if "polynomial trend" in text else "composite"


def scored_on(card: dict) -> str:
    """The prior of the card's ``eval``: a 1D model's is the single-kernel one."""
    return "its own 2D prior" if is_2d(card) else "the single-kernel prior"


def all_steps(card: dict) -> int | None:
    """Training steps over every stage (``steps_total`` where the card has stages)."""
    return card.get("steps_total", card.get("steps"))


def all_seconds(card: dict) -> float | None:
    return card.get("train_s_total", card.get("train_s"))


def measured_table(
    real: dict, first: list[str], label: Callable[[str, str], list[str]], unit: str = ""
) -> list[str]:
    """A card's measured-data scores (``real_series``, ``real_fields``) as a table: a row per key
    ``NAME/KIND``, its first cells ``label(NAME, KIND)`` under the headers ``first``, then the
    model's RMSE (header suffix ``unit``) and NLL beside the fitted GP's (mean ± s.e.) and the
    GP's time over the model's."""
    rows = []
    for key, entry in real.items():
        if not (isinstance(entry, dict) and "/" in key):
            continue
        m, g = entry.get("model", {}), entry.get(GP, {})
        speed = (
            f"{g['seconds'] / m['seconds']:.0f}×" if m.get("seconds") and g.get("seconds") else "—"
        )
        scores = [both(m, "rmse"), both(g, "rmse"), both(m, "nll"), both(g, "nll"), speed]
        rows.append([*label(*key.split("/", 1)), *scores])
    header = [f"RMSE{unit}", f"{GP} RMSE{unit}", "NLL", f"{GP} NLL", "GP time / model time"]
    return table([*first, *header], rows)


def worse_than_gp(real: dict, kind: str = "") -> list[str]:
    """The keys ``NAME/KIND`` of ``real`` (of ``kind`` only, if given) on which the model's NLL
    is more than two standard errors above the fitted GP's."""
    worse = []
    for key, v in real.items():
        if not (isinstance(v, dict) and "/" in key and key.endswith(f"/{kind}" if kind else "")):
            continue
        m, g = v.get("model", {}).get("nll"), v.get(GP, {}).get("nll")
        if m and g and m[0] - g[0] > 2 * math.hypot(m[1], g[1]):
            worse.append(key)
    return worse


def both(entry: dict, metric: str) -> str:
    """``entry[metric]``, a [mean, s.e.] pair, as ``mean ± s.e.``; '—' if absent."""
    v = entry.get(metric)
    return "—" if not v else f"{sig(v[0])} ± {sig(v[1])}"


def sig(x: float) -> str:
    """Three significant digits (14.0, 0.520); whole numbers from 100."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:#.3g}"


def index_row(name: str, card: dict, scores: list[dict]) -> list[str]:
    """A model's row of the zoo's overview: its card's link, size, prior, training, the gap of
    each of ``scores`` (its ``eval`` entries) and its safe range."""
    sr = card.get("safe_range") or {}
    return [
        f"[`{name}`]({name}.md)",
        f"{code(card.get('model'))}, {integer(card.get('params'))} parameters",
        prior_kind(card),
        f"{integer(all_steps(card))} steps, {hours(all_seconds(card))}",
        *(pm(e, "gap") for e in scores),
        "—" if not sr else f"{sr['widths']:g} / {sr['hard_limit']:g}",
    ]
