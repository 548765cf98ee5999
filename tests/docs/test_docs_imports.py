"""The docs send users only to tnpx's public API (issue 49, item 3): every fenced ``python``
block of ``docs/**/*.md`` and ``README.md`` imports from tnpx only names in an ``__all__`` of
``tnpx``, a sub-package or a top-level primitive module (the rule the lab follows,
:mod:`tests.helpers.public_api`). Blocks are parsed, not run; a doctest block (``>>>``) is read
from its prompts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.public_api import api_problems

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^[ \t]*```python[^\n]*\n(.*?)^[ \t]*```", re.M | re.S)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def code_blocks(text: str) -> list[str]:
    """The source of each fenced ``python`` block of a Markdown page, dedented, with doctest
    prompts (``>>> ``, ``... ``) taken off and their output lines dropped."""
    blocks = []
    for match in FENCE.finditer(text):
        lines = match.group(1).splitlines()
        indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
        lines = [x[indent:] for x in lines]
        if any(x.startswith(">>>") for x in lines):
            lines = [x[4:] for x in lines if x.startswith((">>> ", "... ", ">>>", "..."))]
        blocks.append("\n".join(lines))
    return blocks


def page_problems(text: str) -> list[str]:
    return [problem for block in code_blocks(text) for problem in api_problems(block)]


def test_the_pages_are_found():
    found = pages()
    assert ROOT / "docs" / "site" / "index.md" in found or len(found) > 10
    assert sum(len(code_blocks(path.read_text())) for path in found) > 10


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docs_import_only_public_names(page):
    assert page_problems(page.read_text()) == []


def test_the_docs_check_can_fail():
    text = (
        "Text.\n\n```python\nfrom tnpx.apply.grid_context import grid_context_rows\n```\n\n"
        "  ```python\n  >>> from tnpx.training import claim_run_folder\n  ```\n"
        "```bash\nfrom tnpx.training.loop import fit\n```\n"
    )
    problems = page_problems(text)
    assert len(problems) == 2
    assert "tnpx.apply.grid_context is a module inside a package" in problems[0]
    assert "claim_run_folder is not in tnpx.training.__all__" in problems[1]
    assert page_problems("```python\nfrom tnpx.apply import grid_context_rows\n```\n") == []
