"""The API reference documents the drawn public API only: every name a ``::: tnpx....`` directive
of ``docs/site/api/*.md`` renders (the object itself, or each of its ``members:``) is in the
``__all__`` of ``tnpx`` or of a package on its path (``tnpx.bo.surrogate.NPSurrogate``:
``tnpx.bo``), read from the sources as the lab's boundary test reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.public_api import PACKAGE, importable_from

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "site" / "api").glob("*.md"))
DIRECTIVE = re.compile(r"^::: (tnpx[\w.]*)\n((?:[ \t]+.*\n|\n(?=[ \t]))*)", re.M)


def documented(page: str) -> list[tuple[str, list[str] | None]]:
    """Each directive's object path and its ``members:`` list (None: the object alone, or
    ``members: false``)."""
    found = []
    for match in DIRECTIVE.finditer(page):
        options = match.group(2)
        members = re.search(r"members:\s*\n((?:\s+- \w+\n?)+)", options)
        names = re.findall(r"- (\w+)", members.group(1)) if members else None
        found.append((match.group(1), names))
    return found


def public(path: str, name: str, package: Path = PACKAGE) -> bool:
    """Whether ``name``, documented under ``path``, is in an ``__all__`` on that path."""
    parts = path.split(".")
    for end in range(1, len(parts) + 1):
        kind, names = importable_from(".".join(parts[:end]), package)
        if kind == "api" and names and name in names:
            return True
    return False


def problems(page: str, package: Path = PACKAGE) -> list[str]:
    found = []
    for path, members in documented(page):
        if members is not None:  # a module page: each listed member must be public
            found += [f"{path}.{m}" for m in members if not public(path, m, package)]
        elif importable_from(path, package)[0] == "api":
            continue  # a package or primitive module: its own docstring
        elif importable_from(path, package)[0] == "inner":
            continue  # a module's docstring with no members (members: false)
        elif not public(path.rsplit(".", 1)[0], path.rsplit(".", 1)[1], package):
            found.append(path)
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_api_pages_document_only_public_names(page):
    assert problems(page.read_text()) == [], f"{page.name}: not in any __all__"


def test_the_check_fails_on_a_name_outside_every_all():
    page = (
        "::: tnpx.training.loop.fit\n\n::: tnpx.training.loop._fit\n\n"
        "::: tnpx.evaluation.protocol\n    options:\n      members:\n        - evaluate\n"
        "        - _private_helper\n"
    )
    assert problems(page) == ["tnpx.training.loop._fit", "tnpx.evaluation.protocol._private_helper"]


def test_every_page_is_read():
    """The directives are found (33 objects and 30 listed members when this was written): a
    pattern that matched nothing would pass every page."""
    reference = [p for p in PAGES if p.name != "index.md"]  # the index is prose
    pages = [documented(p.read_text()) for p in reference]
    assert all(pages), [p.name for p, found in zip(reference, pages) if not found]
    assert sum(len(members or []) for found in pages for _, members in found) >= 20
