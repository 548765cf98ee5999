"""A zoo card page names the model's likelihood (issue 52, item 6): in words for the Gaussian
options, by name for another family, "not recorded" on a card from before the field; linked to
the families' page."""

from __future__ import annotations

import posixpath
from functools import partial
from pathlib import Path

import pytest

import tnpx

HOOKS = Path(__file__).resolve().parents[2] / "docs" / "hooks"
link = partial(posixpath.relpath, start="zoo")  # as docs/hooks/pages.py links from zoo/


@pytest.fixture
def zoo_cards(monkeypatch):
    """docs/hooks/zoo_cards.py, imported as MkDocs imports it (its folder on sys.path)."""
    monkeypatch.syspath_prepend(str(HOOKS))
    monkeypatch.delenv("TNPX_ZOO", raising=False)
    import zoo_cards

    return zoo_cards


def test_a_page_names_its_likelihood_in_words_and_links_the_families(zoo_cards):
    card = tnpx.zoo.model_card("gp1d-v2-tnp")
    page = zoo_cards.card_page(card, 0.15, None, link)
    row = "| likelihood | Gaussian, a mean and a std per target (`heteroscedastic`) "
    assert f"{row}([likelihoods](../likelihoods.md)) |" in page
    rain_card = {**card, "likelihood": {"name": "bernoulli-gamma"}}
    rain = zoo_cards.card_page(rain_card, 0.15, None, link)
    assert "| likelihood | `bernoulli-gamma` ([likelihoods]" in rain
    bare = {k: v for k, v in card.items() if k != "likelihood"}  # a card from before the field
    assert "| likelihood | not recorded |" in zoo_cards.card_page(bare, 0.15, None, link)
