"""The README's zoo table, written from the zoo report's cards (issue 33: "the README's zoo section
is rewritten from those results"), never by hand.

``python -m experiments.pretrained --report`` writes it between the README's two markers
(:data:`BEGIN`, :data:`END`) from the same 1D cards as ``results/pretrained/zoo.json``, so the
README, the report and the shipped cards cannot drift apart (tests/test_zoo_readme.py checks
the README against ``zoo.json`` and ``zoo.json`` against the shipped cards).
"""

from __future__ import annotations

from pathlib import Path

from experiments.pretrained_eval import PRIORS
from experiments.zoo_format import generation, pm

BEGIN = "<!-- zoo table: written by `python -m experiments.pretrained --report` -->"
END = "<!-- end of zoo table -->"
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
    return (
        f"{MODEL_WORDS.get(card['model'], card['model'])}, {card['params'] / 1000:.0f}k "
        f"parameters, {steps:,} steps of {card['batch_size']} on the "
        f"{TRAINED_ON[generation(card['name'])]}"
    )


def calibrated_words(card: dict) -> str:
    """How far beyond the context the card's 95 % interval was measured to hold."""
    sr = card.get("safe_range")
    if not sr:
        return "not measured"
    if sr["widths"] == 0:
        return "the context's range"
    return f"{sr['widths']:g} context widths"


def readme_table(cards: dict[str, dict]) -> list[str]:
    """The table's lines, best first by the gap on the single-kernel prior (a): each model's
    gap to the GP oracle on the zoo's three shared priors and its safe range."""
    rows = [
        "| model | what | single-kernel gap | composite gap | v3 prior gap | calibrated out to |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in sorted(cards, key=lambda n: cards[n]["eval"]["gap"]):
        c = cards[name]
        gaps = " | ".join(pm(c[key]) if key in c else "—" for key in ("eval", *PRIORS))
        rows.append(f"| `{name}` | {trained_words(c)} | {gaps} | {calibrated_words(c)} |")
    return rows


def write_readme(path: Path, cards: dict[str, dict]) -> None:
    """Replace the table between ``path``'s markers with :func:`readme_table` of ``cards``.

    Raises:
        ValueError: ``path`` lacks the markers, in order, once each (nothing is written).
    """
    text = path.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"{path}: needs the lines {BEGIN!r} and {END!r}, once each, in order")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    path.write_text("\n".join([head + BEGIN, *readme_table(cards), END]) + tail)


def readme_rows(path: Path) -> list[str]:
    """The table's lines as ``path`` has them (between its markers)."""
    text = path.read_text()
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n").splitlines()
