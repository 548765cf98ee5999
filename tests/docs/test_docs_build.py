"""The documentation site builds in strict mode (a broken link, anchor or docstring reference
fails it), with a generated card page for every shipped model and every image it shows.

Needs the ``docs`` extra (``pip install 'tnpx[docs]'``, Python >= 3.11); skipped without it.
One build, about 5 s of CPU.
"""

from __future__ import annotations

import html.parser
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import tnpx

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"mkdocs": "mkdocs", "material": "mkdocs-material", "mkdocstrings": "mkdocstrings"}
TOOLS["mkdocstrings_handlers"] = "mkdocstrings-python"
MISSING = [package for module, package in TOOLS.items() if importlib.util.find_spec(module) is None]

needs_docs = pytest.mark.skipif(
    bool(MISSING),
    reason=f"the docs tools are not installed ({', '.join(MISSING)}): pip install 'tnpx[docs]'",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if MISSING:
        pytest.skip(
            f"the docs tools are not installed ({', '.join(MISSING)}): pip install 'tnpx[docs]'"
        )
    out = tmp_path_factory.mktemp("docs") / "site"
    env = {k: v for k, v in os.environ.items() if k != "TNPX_ZOO"}  # the package's zoo only
    env["NO_MKDOCS_2_WARNING"] = "1"  # Material's notice about MkDocs 2 (not a build warning)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "mkdocs.yml", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


@needs_docs
def test_a_card_page_for_every_shipped_model(site, monkeypatch):
    monkeypatch.delenv("TNPX_ZOO", raising=False)
    names = tnpx.list_pretrained()
    assert names
    index = (site / "zoo" / "index.html").read_text()
    for name in names:
        page = site / "zoo" / f"{name}.html"
        assert page.is_file(), f"no card page for {name}"
        text = page.read_text()
        for section in ("Prior: what it was trained on", "Training", "Scores", "Safe range"):
            assert f">{section}<" in text, f"{name}'s card has no '{section}' section"
        assert ">Limits<" in text
        assert f'href="{name}.html"' in index, f"the zoo's overview does not link {name}"


@needs_docs
def test_every_results_page_is_built(site):
    for md in ROOT.joinpath("results").rglob("*.md"):
        rel = md.relative_to(ROOT / "results")
        if "cells" in rel.parts[:-1]:
            continue
        folder = site / "reproductions" / rel.parent
        page = folder / ("index.html" if md.name == "README.md" else f"{md.stem}.html")
        assert page.is_file(), f"results/{rel} has no page"


class _Images(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.sources: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.sources += [v for k, v in attrs if k == "src" and v]


@needs_docs
def test_every_image_shown_is_in_the_site(site):
    shown = 0
    for page in site.rglob("*.html"):
        parser = _Images()
        parser.feed(page.read_text())
        for src in parser.sources:
            url = urlsplit(src)
            if url.scheme or url.netloc or src.startswith("data:"):
                continue
            target = (page.parent / unquote(url.path)).resolve()
            assert target.is_file(), f"{page.relative_to(site)} shows {src}, which is not there"
            shown += 1
    assert shown > 0  # the results pages' figures


@needs_docs
def test_api_pages_render_the_docstrings(site):
    top = (site / "api" / "tnpx.html").read_text()
    # tnpx.predict and tnpx.sample are documented where they are defined (tnpx.apply's modules
    # of the same names), under the headings tnpx.predict and tnpx.sample
    names = ("apply.predict.predict", "apply.sample.sample", "pretrained", "ContextStream")
    for name in (*names, "DataError"):
        assert f'id="tnpx.{name}"' in top, f"the API page lacks tnpx.{name}"
    regressor = (site / "api" / "estimator.html").read_text()
    assert 'id="tnpx.apply.estimator.NPRegressor"' in regressor
    assert ":func:`" not in top and ":class:`" not in top  # Sphinx roles became links or code


def test_a_card_missing_fields_still_renders(monkeypatch):
    """Cards gain fields as models are re-shipped: the card page of a card with only a name,
    or with training stages, renders (the docs tools are not needed for this)."""
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "hooks"))
    import zoo_cards

    page = zoo_cards.card_page({"name": "bare"}, 0.15, None, lambda path: path)
    assert "# bare" in page and "No held-out score" in page and "Not measured" in page
    card = tnpx.zoo.model_card(tnpx.list_pretrained()[0])
    card["stages"] = [{"run": "long-runs/first", "steps": 1000, "train_s": 7200.0}]
    card["steps_total"], card["train_s_total"] = card["steps"] + 1000, 7200.0
    page = zoo_cards.card_page(card, 0.15, None, lambda path: path)
    assert "`long-runs/first`" in page and f"**{card['steps_total']:,}**" in page
    overview = zoo_cards.index_page({"bare": {"name": "bare"}, card["name"]: card}, 0.15, str)
    assert "[`bare`](bare.md)" in overview


def test_the_zoo_overview_scores_older_cards_on_the_v3_prior_from_the_report(monkeypatch):
    """A card shipped before the v3 prior has no `eval_v3`: the overview's (c) column takes the
    zoo report's score for it, marked *, and a card's own score unmarked."""
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "hooks"))
    import zoo_cards

    old = {"name": "old", "eval": {"gap": 0.3, "gap_se": 0.01}}
    new = {"name": "new", "eval_v3": {"gap": 0.4, "gap_se": 0.02}}
    reported = {"old": {"eval_v3": {"gap": 0.5, "gap_se": 0.03}}}
    page = zoo_cards.index_page({"old": old, "new": new}, 0.15, str, reported)
    row = {line.split("|")[1].strip(): line for line in page.splitlines() if "](" in line[:12]}
    assert "gap, v3 prior" in page
    assert "0.500 ± 0.030 *" in row["[`old`](old.md)"]
    assert "0.400 ± 0.020 |" in row["[`new`](new.md)"] and "0.400 ± 0.020 *" not in page
    assert "\\* scored on the v3 prior's tasks" in page
    # without the report the older card's cell stays empty, unmarked, and the footnote goes
    page = zoo_cards.index_page({"old": old}, 0.15, str)
    assert "*" not in page.split("gap, v3 prior")[1].split("Gap:")[0]


def test_pages_sharing_a_title_are_told_apart_in_the_nav(monkeypatch, tmp_path):
    """The same script's reports share an H1 (real-series, -v2, -v3): the nav adds each one's
    file stem, where it would otherwise list the same line three times."""
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "hooks"))
    import pages

    files = {}
    for stem, title in [("a", "Same"), ("a-v2", "Same"), ("b", "Other")]:
        files[f"reproductions/x/{stem}.md"] = tmp_path / f"{stem}.md"
        files[f"reproductions/x/{stem}.md"].write_text(f"# {title}\n\ntext\n")
    assert pages._named_apart(list(files), files) == [
        {"Same (a)": "reproductions/x/a.md"},
        {"Same (a-v2)": "reproductions/x/a-v2.md"},
        "reproductions/x/b.md",
    ]
