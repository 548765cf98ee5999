"""experiments/zoo/readme.py: the README's zoo tables (1D, and 2D once one ships) are the zoo
report's, and the report's cards are the shipped ones (so a model shipped without
`python -m experiments.zoo.train --report` fails here), and each table is written between its
markers and nowhere else."""

from __future__ import annotations

import json

import pytest

import tnpx
from experiments.zoo.readme import (
    BEGIN,
    BEGIN_2D,
    END,
    END_2D,
    readme_rows,
    readme_table,
    readme_table_2d,
    write_readme,
)
from experiments.zoo.score import ROOT
from tnpx.zoo import model_card

REPORT = ROOT / "results" / "pretrained" / "zoo.json"


def _reported_1d() -> dict[str, dict]:
    cards = json.loads(REPORT.read_text())
    return {name: c for name, c in cards.items() if c.get("dim_x", 1) == 1}


def _reported_2d() -> dict[str, dict]:
    cards = json.loads(REPORT.read_text())
    return {name: c for name, c in cards.items() if c.get("dim_x", 1) == 2}


def test_the_readme_table_is_the_zoo_reports():
    assert readme_rows(ROOT / "README.md") == readme_table(_reported_1d())


def test_the_readme_2d_table_is_the_zoo_reports():
    """No 2D table before a 2D model is reported; the report's table once one is."""
    rows = readme_rows(ROOT / "README.md", BEGIN_2D, END_2D)
    assert rows == readme_table_2d(_reported_2d())


def _card_2d(name: str, gap: float, widths: float) -> dict:
    """A 2D card with the fields the README's 2D table reads (the pipeline's schema:
    tests/experiments/test_zoo_ship_2d.py)."""
    shifts = {
        n: {"name": n, "ll": [ll, 0.02], "oracle_ll": [ll + gap, 0.02]}
        for n, ll in [("unshifted", -0.7), ("translated +10", -0.71), ("density x2", -0.5)]
    }
    return {
        "name": name, "model": "te-tnp-rope", "params": 338_802, "steps": 18_000,
        "batch_size": 16, "dim_x": 2, "eval": {"gap": gap, "gap_se": 0.01},
        "shifts": {"conditions": shifts}, "safe_range": {"widths": widths},
    }  # fmt: skip


def test_the_2d_table_is_written_between_its_markers_best_first(tmp_path):
    cards_2d = {"gp2d-b": _card_2d("gp2d-b", 0.4, 0), "gp2d-a": _card_2d("gp2d-a", 0.3, 1.5)}
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\n{END}\n\nmiddle\n{BEGIN_2D}\n| old |\n{END_2D}\nafter\n")
    write_readme(readme, _reported_1d(), cards_2d)
    rows = readme_rows(readme, BEGIN_2D, END_2D)
    assert rows == readme_table_2d(cards_2d) and "| old |" not in readme.read_text()
    table = "\n".join(rows)
    assert readme.read_text().endswith(f"middle\n{BEGIN_2D}\n{table}\n{END_2D}\nafter\n")
    assert rows[0].count("|") == rows[1].count("|") == rows[2].count("|") == 8  # 7 columns
    assert rows[2] == (
        "| `gp2d-a` | TE-TNP with rotary attention, 339k parameters, 18,000 steps of 16 on the "
        "2D composite prior | 0.300 ± 0.010 | -0.700 (-0.400) | -0.710 (-0.410) | "
        "-0.500 (-0.200) | 1.5 context widths |"
    )
    assert rows[3].startswith("| `gp2d-b` |") and rows[3].endswith("| the context's range |")


def test_a_2d_card_needs_the_2d_markers_and_the_readme_is_left_alone(tmp_path):
    readme = tmp_path / "README.md"
    text = f"{BEGIN}\n{END}\n"
    readme.write_text(text)
    write_readme(readme, _reported_1d(), {})  # no 2D card: no 2D markers needed
    written = readme.read_text()
    with pytest.raises(ValueError, match="2D zoo table"):
        write_readme(readme, _reported_1d(), {"gp2d-a": _card_2d("gp2d-a", 0.3, 1)})
    assert readme.read_text() == written
    assert readme_rows(readme, BEGIN_2D, END_2D) == []


def test_the_zoo_report_has_every_shipped_1d_model_as_shipped():
    reported = _reported_1d()
    shipped = [
        n for n in tnpx.list_pretrained(include_retired=True) if model_card(n).get("dim_x", 1) == 1
    ]
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
