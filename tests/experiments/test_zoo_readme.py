"""experiments/zoo_readme.py: the README's zoo table is the zoo report's, and the report's cards
are the shipped ones (so a model shipped without `python -m experiments.pretrained --report`
fails here), and the table is written between its markers and nowhere else."""

from __future__ import annotations

import json

import pytest

import tnpx
from experiments.pretrained_eval import ROOT
from experiments.zoo_readme import BEGIN, END, readme_rows, readme_table, write_readme
from tnpx.zoo import model_card

REPORT = ROOT / "results" / "pretrained" / "zoo.json"


def _reported_1d() -> dict[str, dict]:
    cards = json.loads(REPORT.read_text())
    return {name: c for name, c in cards.items() if c.get("dim_x", 1) == 1}


def test_the_readme_table_is_the_zoo_reports():
    assert readme_rows(ROOT / "README.md") == readme_table(_reported_1d())


def test_the_zoo_report_has_every_shipped_1d_model_as_shipped():
    reported = _reported_1d()
    shipped = [n for n in tnpx.list_pretrained() if model_card(n).get("dim_x", 1) == 1]
    assert sorted(reported) == sorted(shipped)
    for name in shipped:
        card = model_card(name)
        # the report adds the priors a card predates, marked; everything else is the card's
        ours = {k: v for k, v in reported[name].items() if not _computed_here(v)}
        assert ours == card, name


def _computed_here(entry) -> bool:
    return isinstance(entry, dict) and entry.get("computed_here") is True


def test_the_table_is_written_between_its_markers_only(tmp_path):
    cards = _reported_1d()
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{BEGIN}\n| old |\n{END}\n\nafter\n")
    write_readme(readme, cards)
    text = readme.read_text()
    assert text.startswith("# x\n\nbefore\n") and text.endswith(f"{END}\n\nafter\n")
    assert readme_rows(readme) == readme_table(cards) and "| old |" not in text
    write_readme(readme, cards)  # idempotent
    assert readme.read_text() == text
    best = min(cards, key=lambda n: cards[n]["eval"]["gap"])
    assert readme_table(cards)[2].startswith(f"| `{best}` |")  # best first


@pytest.mark.parametrize(
    "text", ["no markers\n", f"{END}\n{BEGIN}\n", f"{BEGIN}\n{BEGIN}\n{END}\n"]
)
def test_a_readme_without_its_markers_is_refused_and_left_alone(tmp_path, text):
    readme = tmp_path / "README.md"
    readme.write_text(text)
    with pytest.raises(ValueError, match="needs the lines"):
        write_readme(readme, _reported_1d())
    assert readme.read_text() == text


def test_the_demo_shows_the_zoos_best_model():
    """`make demo`'s zero-shot model is the README table's first row: the smallest gap on the
    single-kernel prior (a) among the 1D models calibrated beyond the context."""
    from tnpx.demo.zero_shot import ZERO_SHOT_MODEL

    cards = {
        n: c for n, c in _reported_1d().items() if c.get("safe_range", {}).get("widths", 0) > 0
    }
    assert ZERO_SHOT_MODEL == min(cards, key=lambda n: cards[n]["eval"]["gap"])
    assert readme_rows(ROOT / "README.md")[2].startswith(f"| `{ZERO_SHOT_MODEL}` |")
