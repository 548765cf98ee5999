"""zoo.md's 2D part (:func:`zoo_section`): every 2D card's prior and shift scores, safe range
and measured fields, written from the cards ``experiments/zoo/ship_2d.py`` ships."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.kit import pm_key
from experiments.zoo.cells import (
    near_coverage,
    real_section,
    safe_cells,
    shift_cell,
    shift_names,
    stage_steps,
    table_head,
    train_hours,
)
from experiments.zoo.ship_2d import real_fields_summary


def zoo_cards_2d(zoo: Path) -> dict[str, dict]:
    """The cards of ``zoo`` whose models take two inputs (``dim_x: 2``), by name."""
    cards = {p.stem: json.loads(p.read_text()) for p in sorted(zoo.glob("*.json"))}
    return {name: card for name, card in cards.items() if card.get("dim_x") == 2}


def summary_rows(cards: dict[str, dict]) -> list[str]:
    """One row per 2D card: size, training, its prior's LL beside the oracle's, each shift's
    LL (the oracle's in brackets), the safe range and the card's commit."""
    names = shift_names(cards)
    rows = table_head(
        ["name", "model", "params", "steps (batch)", "train time", "prior LL", "oracle LL", "gap"]
        + [f"{n} LL (oracle)" for n in names]
        + ["safe range", "hard limit", "far cov.", "card"]
    )
    for name, c in cards.items():
        e, moved = c["eval"], c["shifts"]["conditions"]
        cells = [shift_cell(moved[n]) for n in names]
        rows.append(
            f"| `{name}` | {c['model']} | {c['params']:,} | {stage_steps(c)} ({c['batch_size']}) "
            f"| {train_hours(c)} | {pm_key(e, 'll')} | {e['oracle_ll']:.3f} | {pm_key(e)} | "
            + " | ".join(cells)
            + f" | {safe_cells(c)} | `{c['commit']}` |"
        )
    return rows


def zoo_section(cards: dict[str, dict], results: Path) -> str:
    """zoo.md's 2D part (empty without 2D cards): :func:`summary_rows`, then per context size
    the measured fields beside the GP fitted per window, for each model that the newest
    ``results/real-fields-2d*.json`` scored (:func:`real_fields_summary`)."""
    if not cards:
        return ""
    first = next(iter(cards.values()))
    lines = [
        "## The 2D zoo",
        "",
        f"**What**: every 2D model in the zoo on {first['eval']['n_tasks']:,} held-out "
        "tasks of its own prior (`gp2d-composite`) beside the GP oracle, and on "
        f"{first['shifts']['n_tasks']} of them under BSA-TNP's shifts (`shifts-2d.md`: the "
        "whole field translated; the points' density doubled and halved), LL per target point "
        "(higher is better). Safe range: as for the 1D models, with targets beyond the context "
        "on both axes (distance: the largest over the input columns).",
        "",
        *summary_rows(cards),
    ]
    real = {n: r for n in cards if (r := real_fields_summary(n, results)) is not None}
    sizes = {key.split("/")[1] for r in real.values() for key in r if "/" in key}
    for n in sorted(sizes, key=int):
        lines += real_section(real, n, f"{n} context points", "fields", "window", "windows")
    lines += [
        "",
        "**Reading**: " + " ".join(reading(name, c, real.get(name)) for name, c in cards.items()),
    ]
    return "\n".join(["", *lines, ""])


def reading(name: str, card: dict, fields: dict | None) -> str:
    """One 2D card in words: its gap on its prior, each shift's change of LL (paired, mean ±
    s.e.), its safe range, and how often its mean NLL on measured fields is below the fitted
    GP's (``fields``: :func:`real_fields_summary`, or None)."""
    e, moved = card["eval"], card["shifts"]["conditions"]
    changes = "; ".join(
        f"{n} {c['change'][0]:+.3f} ± {c['change'][1]:.3f}"
        for n, c in moved.items()
        if n != "unshifted"
    )
    text = (
        f"`{name}` is {pm_key(e)} nats per target point from the GP oracle on its prior. Its LL "
        f"changes under the shifts, paired over the same tasks: {changes} (the oracle's: "
        f"{max(abs(c['oracle_change'][0]) for c in moved.values()):.3f} at most)."
    )
    sr = card.get("safe_range")
    if sr:
        text += (
            f" Its 95 % interval was measured to hold out to {sr['widths']:g} context widths "
            "beyond the context (its lowest coverage within one width of it: "
            f"{near_coverage(sr):.3f})."
        )
    if fields:
        cells = [k for k in fields if "/" in k]
        lower = [
            k for k in cells if fields[k]["model"]["nll"][0] < fields[k]["fitted GP"]["nll"][0]
        ]
        text += (
            f" On measured fields its mean NLL is below the fitted GP's in {len(lower)} of "
            f"{len(cells)} field and context-size cells ({', '.join(lower) or 'none'}); "
            "`real-fields-2d.md` tests each difference paired over its windows."
        )
    return text
