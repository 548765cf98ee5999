"""The README's zoo tables, written from the zoo report's cards ("the README's zoo
section is rewritten from those results"), never by hand.

``python -m experiments.zoo.train --report`` writes the 1D table between the README's two
markers (:data:`BEGIN`, :data:`END`) and, once a 2D model is shipped, the 2D table between its
own (:data:`BEGIN_2D`, :data:`END_2D`), from the same cards as ``results/pretrained/zoo.json``,
so the README, the report and the shipped cards cannot drift apart
(tests/experiments/test_zoo_readme.py checks the README against ``zoo.json`` and ``zoo.json``
against the shipped cards).
"""

from __future__ import annotations

from pathlib import Path

from experiments.kit import pm_key
from experiments.zoo.cells import generation, shift_cell, shift_names, table_head
from experiments.zoo.score import PRIORS
from tnpx.zoo import RETIRED

BEGIN = "<!-- zoo table: written by `python -m experiments.zoo.train --report` -->"
END = "<!-- end of zoo table -->"
BEGIN_2D = "<!-- 2D zoo table: written by `python -m experiments.zoo.train --report` -->"
END_2D = "<!-- end of 2D zoo table -->"
PRIOR_2D_WORDS = "2D composite prior"
MODEL_WORDS = {
    "tnp": "TNP",
    "te-tnp": "TE-TNP",
    "te-tnp-rope": "TE-TNP with rotary attention",
}
TRAINED_ON = {  # a 1D model's generation -> its training prior in words
    1: "single-kernel prior",
    2: "v2 composite prior",
    3: "v3 prior, fine-tuned from v2",
}


def trained_words(card: dict) -> str:
    """What a card's model is and how it was trained, in a few words."""
    steps = card.get("steps_total", card["steps"])
    prior = PRIOR_2D_WORDS if card.get("dim_x") == 2 else TRAINED_ON[generation(card["name"])]
    return (
        f"{MODEL_WORDS.get(card['model'], card['model'])}, {card['params'] / 1000:.0f}k "
        f"parameters, {steps:,} steps of {card['batch_size']} on the {prior}"
    )


def calibrated_words(card: dict) -> str:
    """How far beyond the context the card's 95 % interval was measured to hold."""
    sr = card.get("safe_range")
    if not sr:
        return "not measured"
    if sr["widths"] == 0:
        return "the context's range"
    return f"{sr['widths']:g} context widths"


def model_cell(name: str) -> str:
    """A model's name in a table; a retired one (``tnpx.zoo.RETIRED``) says so."""
    return f"`{name}` (retired: use `{RETIRED[name]}`)" if name in RETIRED else f"`{name}`"


def readme_table(cards: dict[str, dict]) -> list[str]:
    """The table's lines, best first by the gap on the single-kernel prior (a): each model's
    gap to the GP oracle on the zoo's three shared priors and its safe range."""
    rows = [
        "| model | what | single-kernel gap | composite gap | v3 prior gap | calibrated out to |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in sorted(cards, key=lambda n: cards[n]["eval"]["gap"]):
        c = cards[name]
        gaps = " | ".join(pm_key(c[key]) if key in c else "—" for key in ("eval", *PRIORS))
        rows.append(f"| {model_cell(name)} | {trained_words(c)} | {gaps} | {calibrated_words(c)} |")
    return rows


def readme_table_2d(cards: dict[str, dict]) -> list[str]:
    """The 2D table's lines (none without 2D cards), best first by the gap on each model's own
    prior: that gap, the LL under each of BSA-TNP's shifts beside the GP oracle's on the same
    tasks (``shifts-2d.md``), and the safe range."""
    if not cards:
        return []
    names = shift_names(cards)
    shifts = [f"LL {n} (oracle)" for n in names]
    rows = table_head(["model", "what", "gap on its prior", *shifts, "calibrated out to"])
    for name in sorted(cards, key=lambda n: cards[n]["eval"]["gap"]):
        c = cards[name]
        cells = " | ".join(shift_cell(c["shifts"]["conditions"][n]) for n in names)
        rows.append(
            f"| `{name}` | {trained_words(c)} | {pm_key(c['eval'])} | {cells} | "
            f"{calibrated_words(c)} |"
        )
    return rows


def _replace_block(text: str, path: Path, begin: str, end: str, lines: list[str]) -> str:
    """``text`` with the lines between ``begin`` and ``end`` replaced by ``lines``.

    Raises:
        ValueError: ``text`` lacks the markers, in order, once each.
    """
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{path}: needs the lines {begin!r} and {end!r}, once each, in order")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return "\n".join([head + begin, *lines, end]) + tail


def write_readme(
    path: Path, cards: dict[str, dict], cards_2d: dict[str, dict] | None = None
) -> None:
    """Replace the table between ``path``'s markers with :func:`readme_table` of ``cards``, and
    when ``cards_2d`` holds a card, the 2D table between its markers with
    :func:`readme_table_2d` of them.

    Raises:
        ValueError: ``path`` lacks a table's markers, in order, once each (nothing is written).
    """
    text = _replace_block(path.read_text(), path, BEGIN, END, readme_table(cards))
    if cards_2d:
        text = _replace_block(text, path, BEGIN_2D, END_2D, readme_table_2d(cards_2d))
    path.write_text(text)


def readme_rows(path: Path, begin: str = BEGIN, end: str = END) -> list[str]:
    """A table's lines as ``path`` has them (between its markers; none without the markers)."""
    text = path.read_text()
    if begin not in text:
        return []
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n").splitlines()
